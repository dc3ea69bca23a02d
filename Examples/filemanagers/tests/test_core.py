"""The extension's cache and connection (syncbadge_fm.Core) against the real daemon, without a
file manager: the GLib main loop is run here, and the file manager's file objects are stand-ins
that record what the extension did to them. /usr/bin/python3 (gi); run with the GUI tests by
`make test-filemanagers`.

What the screenshots cannot show well: update_file_info never waits; exactly the changed file
is invalidated; at most 64 directories are observed (the daemon's own count); without a daemon
one line is logged and the daemon is found when it starts; a daemon back within the hold
redraws only the files whose state differs, and past it the emblems go; a later loss gets
the whole hold once every folder was listed again; a menu waits at most 100 ms; an
engine's answer to an action (or its failure, its silence for 10 s, its going away) is what the
notification says, and the extension's own connection answers meanwhile; the toolbar items
follow `* TOOLBAR` pushes.
"""

import importlib.util
import io
import os
import shutil
import signal
import sys
import tempfile
import time
import unittest

import fmsession as fs
from gi.repository import Gio, GLib

EXTENSION = os.path.join(fs.REPO, "Examples", "filemanagers", "syncbadge_fm.py")


def load_extension():
    spec = importlib.util.spec_from_file_location("syncbadge_fm", EXTENSION)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ext = load_extension()


class FakeFile(object):
    """What the extension uses of a NautilusFileInfo / NemoFileInfo / CajaFileInfo."""

    def __init__(self, path):
        self.path = path
        self.emblems = []
        self.attributes = {}
        self.invalidated = 0

    def get_uri_scheme(self):
        return "file"

    def get_uri(self):
        return "file://" + self.path

    def get_location(self):
        return Gio.File.new_for_path(self.path)

    def add_emblem(self, name):
        self.emblems.append(name)

    def add_string_attribute(self, key, value):
        self.attributes[key] = value

    def invalidate_extension_info(self):
        self.invalidated += 1

    def ask(self, core):
        """As the file manager does: the extension info afresh. Returns the seconds it took."""
        self.emblems, self.attributes = [], {}
        start = time.monotonic()
        core.update_file_info(self)
        return time.monotonic() - start


def spin(what, predicate, timeout=10):
    """Runs the GLib main loop until predicate() is true; Failure at the deadline."""
    context = GLib.MainContext.default()
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise fs.Failure("timed out after %gs waiting for %s" % (timeout, what))
        if not context.iteration(False):
            time.sleep(0.005)


def settled(core):
    """Runs the main loop until the extension has applied every change it had read (its idle
    flush and invalidations done): what a check of the files' redraws must wait for."""
    spin("the extension's changes applied", lambda: core.flush_source is None and core.stale_source is None)


class Tee(io.StringIO):
    """What the extension logs, kept for the test (and shown too with SYNCBADGE_DEBUG)."""

    def __init__(self, also):
        io.StringIO.__init__(self)
        self.also = also

    def write(self, text):
        if self.also is not None:
            self.also.write(text)
        return io.StringIO.write(self, text)


class CoreTests(unittest.TestCase):
    def setUp(self):
        if fs.missing_daemon():
            self.fail(fs.missing_daemon())
        self.work = os.path.realpath(tempfile.mkdtemp(prefix="syncbadge-fm-core-"))
        self.daemon = fs.daemon(self.work)
        self.root = os.path.join(self.work, "root")
        os.makedirs(self.root)
        self.env = dict(os.environ)
        os.environ["SYNCBADGE_SOCKET"] = self.daemon.socket
        os.environ["GIO_USE_VFS"] = "local"         # rsvg-convert starts no gvfsd
        os.environ["XDG_DATA_HOME"] = os.path.join(self.work, "share")
        # The default badges' emblems, as `make install-user` leaves them (else the extension
        # installs them itself, and draws their files again once they are in).
        emblems = os.path.join(self.work, "share", "icons", "hicolor", "scalable", "emblems")
        os.makedirs(emblems)
        for badge in fs.BADGE_COLOURS:
            shutil.copy(os.path.join(fs.REPO, "Badges", badge + ".svg"),
                        os.path.join(emblems, "emblem-syncbadge-%s.svg" % badge))
        self.conns = []
        self.cores = []
        self.stderr = sys.stderr
        sys.stderr = self.log = Tee(self.stderr if os.environ.get("SYNCBADGE_DEBUG") else None)

    def tearDown(self):
        sys.stderr = self.stderr
        for core in self.cores:
            core.stop()
        for conn in self.conns:
            conn.close()
        self.daemon.stop()
        os.environ.clear()
        os.environ.update(self.env)
        shutil.rmtree(self.work, ignore_errors=True)

    def start(self, files=()):
        self.daemon.start()
        for name in files:
            path = os.path.join(self.root, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write("x")
        self.connect("admin").request("ADD-ROOT", self.root, timeout=30)
        return self.connect("provider")

    def connect(self, role):
        conn = self.daemon.connect(role, "test-" + role)
        self.conns.append(conn)
        return conn

    def core(self):
        core = ext.Core()
        self.cores.append(core)
        return core

    def path(self, name):
        return os.path.join(self.root, name)

    def test_answers_from_the_cache_and_invalidates_exactly_the_changed_file(self):
        engine = self.start(["a.txt", "b.txt", "c.txt"])
        engine.request("SET", "synced", self.path("a.txt"), timeout=10)
        engine.request("SET", "syncing", self.path("b.txt"), progress=40, timeout=10)
        core = self.core()
        spin("HELLO", lambda: core.conn.ready)
        files = dict((n, FakeFile(self.path(n))) for n in ("a.txt", "b.txt", "c.txt"))
        for f in files.values():
            self.assertLess(f.ask(core), 0.05)          # never waits for the daemon
            self.assertEqual(f.emblems, [])             # nothing known yet
        spin("the listing", lambda: all(f.invalidated == 1 for f in files.values()))
        for f in files.values():
            f.ask(core)
        self.assertEqual(files["a.txt"].emblems, ["emblem-syncbadge-synced"])
        self.assertEqual(files["b.txt"].emblems, ["emblem-syncbadge-syncing"])
        self.assertEqual(files["b.txt"].attributes, {"syncbadge_sync": "syncing 40%"})
        self.assertEqual(files["c.txt"].emblems, [])    # unknown: no emblem
        self.assertEqual(files["c.txt"].attributes, {"syncbadge_sync": "unknown"})

        engine.request("SET", "error", self.path("b.txt"), message="disk full", timeout=10)
        spin("the push for b.txt", lambda: files["b.txt"].invalidated == 2)
        ping = core.send("PING")                        # answered after any push sent before
        spin("PING", lambda: ping.done)
        settled(core)
        self.assertEqual([files[n].invalidated for n in ("a.txt", "c.txt")], [1, 1])
        files["b.txt"].ask(core)
        self.assertEqual(files["b.txt"].emblems, ["emblem-syncbadge-error"])
        self.assertEqual(files["b.txt"].attributes, {"syncbadge_sync": "error: disk full"})

    def test_a_directory_made_again_is_observed_again(self):
        self.start(["d/a.txt"])
        core = self.core()
        spin("HELLO", lambda: core.conn.ready)
        f = FakeFile(self.path("d/a.txt"))
        f.ask(core)
        spin("the listing", lambda: f.invalidated >= 1)
        shutil.rmtree(self.path("d"))
        spin("the directory forgotten", lambda: os.fsencode(self.path("d")) not in core.dirs)
        os.makedirs(self.path("d"))
        with open(self.path("d/a.txt"), "w") as out:
            out.write("y")
        f = FakeFile(self.path("d/a.txt"))
        f.ask(core)

        def asked_again():
            # As a file manager: asked again after each invalidation (the listing, then maybe
            # a push for the file, which the daemon may see after the directory).
            if f.invalidated > asked[0]:
                asked[0] = f.invalidated
                f.ask(core)
            return f.emblems == ["emblem-syncbadge-pending"]          # a new file: pending
        asked = [0]
        spin("the new directory's listing", asked_again)

    def test_the_files_of_a_folder_renamed_away_are_invalidated(self):
        """Nautilus keeps a renamed folder's file objects (moved with it) and their emblems: the
        extension must invalidate them, or the folder renamed back shows them as they were."""
        engine = self.start(["d/a.txt"])
        engine.request("SET", "synced", self.path("d/a.txt"), timeout=10)
        core = self.core()
        spin("HELLO", lambda: core.conn.ready)
        f = FakeFile(self.path("d/a.txt"))
        f.ask(core)
        spin("the listing", lambda: f.invalidated == 1)
        f.ask(core)
        self.assertEqual(f.emblems, ["emblem-syncbadge-synced"])
        os.rename(self.path("d"), self.path("e"))
        spin("the files of the folder renamed away invalidated", lambda: f.invalidated == 2)
        os.rename(self.path("e"), self.path("d"))
        asked = [f.invalidated]

        def asked_again():
            # As a file manager: asked again after each invalidation, the folder back in place.
            if f.invalidated > asked[0] or not f.emblems:
                asked[0] = f.invalidated
                f.ask(core)
            return f.emblems == ["emblem-syncbadge-pending"]          # moved in: pending throughout
        f.ask(core)
        spin("the daemon's pending for the file of the folder renamed back", asked_again)

    def test_observes_at_most_64_directories(self):
        names = ["d%02d/f.txt" % i for i in range(70)]
        self.start(names)
        core = self.core()
        spin("HELLO", lambda: core.conn.ready)
        files = [FakeFile(self.path(n)) for n in names]
        for f in files:
            f.ask(core)
        spin("the listings", lambda: all(f.invalidated == 1 for f in files[-64:]))
        stats = self.connect("viewer")

        def observations():
            reply = stats.request("STATS", timeout=10)
            return dict((m.arg(0), m.arg(1)) for m in reply.lines("STAT")).get("observations")
        spin("64 observations", lambda: observations() == "64")
        self.assertEqual(len(core.dirs), ext.MAX_DIRS)
        self.assertEqual(list(core.dirs)[0], os.fsencode(os.path.dirname(files[6].path)))
        # The least recently used one is observed again when asked about.
        files[0].ask(core)
        spin("d00 observed again", lambda: files[0].invalidated == 1 and observations() == "64")

    def test_without_a_daemon_logs_one_line_and_connects_when_one_starts(self):
        os.makedirs(self.root, exist_ok=True)
        with open(self.path("a.txt"), "w") as f:
            f.write("x")
        log = self.log
        core = self.core()
        f = FakeFile(self.path("a.txt"))
        self.assertLess(f.ask(core), 0.05)
        self.assertEqual(f.emblems, [])
        deadline = time.monotonic() + 1.5       # several reconnect attempts
        spin("1.5 s without a daemon", lambda: time.monotonic() > deadline, 5)
        lines = log.getvalue().splitlines()
        self.assertEqual(len(lines), 1, lines)
        self.assertIn("no daemon at %s" % self.daemon.socket, lines[0])
        engine = self.start()
        engine.request("SET", "synced", self.path("a.txt"), timeout=10)
        spin("the connection and the listing", lambda: f.invalidated >= 1, 15)
        f.ask(core)
        self.assertEqual(f.emblems, ["emblem-syncbadge-synced"])
        self.assertIn("connected to ", log.getvalue())

    def hold(self, seconds):
        """The extension's HOLD for this test: how long the daemon's start takes is not what
        these tests time."""
        old = ext.HOLD
        ext.HOLD = seconds
        self.addCleanup(setattr, ext, "HOLD", old)

    def synced_and_shown(self, names):
        engine = self.start(names)
        for name in names:
            engine.request("SET", "synced", self.path(name), timeout=10)
        core = self.core()
        spin("HELLO", lambda: core.conn.ready)
        files = dict((n, FakeFile(self.path(n))) for n in names)
        for f in files.values():
            f.ask(core)
        spin("the listing", lambda: all(f.invalidated == 1 for f in files.values()))
        for f in files.values():
            f.ask(core)
            self.assertEqual(f.emblems, ["emblem-syncbadge-synced"])
        return core, files

    def stop_daemon(self, core):
        log_at = len(self.log.getvalue())
        self.daemon.stop()
        for conn in self.conns:
            conn.close()
        self.conns = []
        spin("the extension's disconnection", lambda: "disconnected" in self.log.getvalue()[log_at:])
        settled(core)

    def test_a_daemon_back_within_the_hold_redraws_only_what_differs(self):
        """A daemon restarted at once (as socket activation does): the emblems shown stay
        meanwhile, and then only the files whose state the new daemon holds differently are
        drawn again, not every file twice (cleared, then listed)."""
        self.hold(60)
        core, files = self.synced_and_shown(["a.txt", "b.txt", "c.txt"])
        self.stop_daemon(core)
        with open(self.path("b.txt"), "a") as f:
            f.write("edited while the daemon was down")   # the new daemon's rescan: pending
        for f in files.values():
            f.ask(core)
            self.assertEqual((f.invalidated, f.emblems), (1, ["emblem-syncbadge-synced"]))
        self.daemon.start()
        spin("b.txt drawn again", lambda: files["b.txt"].invalidated >= 2, 15)
        files["b.txt"].ask(core)
        self.assertEqual(files["b.txt"].emblems, ["emblem-syncbadge-pending"])
        ping = core.send("PING")                        # answered after the listing and any push
        spin("PING", lambda: ping.done)
        settled(core)
        self.assertEqual([files[n].invalidated for n in ("a.txt", "c.txt")], [1, 1])
        self.assertIn("connected to ", self.log.getvalue())

    def test_past_the_hold_the_emblems_go_until_the_daemon_is_back(self):
        self.hold(0.2)
        core, files = self.synced_and_shown(["a.txt", "b.txt"])
        self.stop_daemon(core)
        spin("the emblems cleared", lambda: all(f.invalidated == 2 for f in files.values()))
        for f in files.values():
            f.ask(core)
            self.assertEqual(f.emblems, [])
        self.daemon.start()
        spin("the emblems back", lambda: all(f.invalidated == 3 for f in files.values()), 15)
        for f in files.values():
            f.ask(core)
            self.assertEqual(f.emblems, ["emblem-syncbadge-synced"])

    def test_a_later_loss_holds_anew_once_every_folder_was_listed_again(self):
        """A daemon back with the same states: nothing is drawn again, the menus the new epoch
        dropped are prefetched again, and the next loss gets the whole hold, not what is left
        of the first loss's."""
        hold = 6.0
        self.hold(hold)
        core, files = self.synced_and_shown(["a.txt", "b.txt"])
        spin("the menus prefetched", lambda: len(core.menus) == 1)
        t0 = time.monotonic()
        self.stop_daemon(core)
        log_at = len(self.log.getvalue())
        self.daemon.start()
        spin("the folder listed again and its menus prefetched",
             lambda: "connected to " in self.log.getvalue()[log_at:] and not core.follower.holding
             and len(core.menus) == 1, 15)
        settled(core)
        self.assertEqual([f.invalidated for f in files.values()], [1, 1])
        # The second loss late enough that its hold outlasts the first's by a second.
        spin("1.5 s since the first loss", lambda: time.monotonic() > t0 + 1.5, 5)
        self.assertLess(time.monotonic() - t0, hold - 1, "the daemon took too long to come back")
        self.stop_daemon(core)
        t1 = time.monotonic()
        spin("the first loss's hold over", lambda: time.monotonic() > t0 + hold + 0.5
             or any(f.invalidated > 1 for f in files.values()), hold + 5)
        for f in files.values():
            f.ask(core)
            self.assertEqual((f.invalidated, f.emblems), (1, ["emblem-syncbadge-synced"]))
        spin("the emblems cleared", lambda: all(f.invalidated == 2 for f in files.values()), hold + 5)
        self.assertGreater(time.monotonic() - t1, hold - 0.5)
        for f in files.values():
            f.ask(core)
            self.assertEqual(f.emblems, [])

    def test_a_menu_waits_at_most_100_ms(self):
        engine = self.start(["a.txt", "b.txt"])
        engine.request("SET", "synced", self.path("a.txt"), timeout=10)
        engine.request("SET", "error", self.path("b.txt"), timeout=10)
        core = self.core()
        spin("HELLO", lambda: core.conn.ready)
        a, b = FakeFile(self.path("a.txt")), FakeFile(self.path("b.txt"))
        a.ask(core)
        b.ask(core)
        spin("the listing and the prefetched menus", lambda: a.invalidated == 1 and len(core.menus) == 2)
        pid = self.daemon.proc.pid
        self.daemon.proc.send_signal(signal.SIGSTOP)

        def stopped():
            tasks = os.listdir("/proc/%d/task" % pid)
            return all(open("/proc/%d/task/%s/stat" % (pid, t)).read().rsplit(")", 1)[1].split()[0] == "T"
                       for t in tasks)
        try:
            spin("every thread of the daemon stopped", stopped)
            start = time.monotonic()
            paths, items = core.item_menu([a])                  # prefetched: at once
            self.assertLess(time.monotonic() - start, 0.05)
            self.assertIn("syncbadge.details", [i[0] for i in items])
            start = time.monotonic()
            self.assertIsNone(core.item_menu([a, b]))           # not prefetched: gives up
            self.assertLess(time.monotonic() - start, 0.2)
        finally:
            self.daemon.proc.send_signal(signal.SIGCONT)

    def test_container_and_toolbar_menus_reach_the_engine(self):
        engine = self.start(["a.txt"])
        engine.request("CLAIM", self.root, timeout=10)
        engine.request("DEFINE-TOOLBAR", name="Engine", tooltip="Pause or resume", timeout=10)
        engine.request("DEFINE-MENU", "toolbar", "engine.pause", title="Pause syncing", timeout=10)
        engine.request("DEFINE-MENU", "container", "engine.syncdir", title="Sync this folder", timeout=10)
        core = self.core()
        spin("the toolbar items", lambda: core.toolbars)
        self.assertEqual(core.toolbars, [("Engine", "Pause or resume", "test-provider")])
        root = os.fsencode(self.root)
        self.assertEqual(core.menu("container", [], root, (root, "container")),
                         [("engine.syncdir", "Sync this folder", True)])
        self.assertEqual(core.menu("toolbar", [], root, None, provider="test-provider"),
                         [("engine.pause", "Pause syncing", True)])
        core.action("engine.pause", [], root, provider="test-provider")
        action = self.action_at(engine)
        self.assertEqual((action.id, action.paths, action.client), ("engine.pause", [], "filemanager"))
        # The engine goes: so does its toolbar item.
        engine.close()
        spin("the toolbar item gone", lambda: not core.toolbars)

    def test_a_provider_badge_is_installed_as_an_emblem(self):
        engine = self.start(["a.txt"])
        core = self.core()
        spin("HELLO", lambda: core.conn.ready)
        image = os.path.join(self.work, "cloud.svg")
        with open(image, "w") as f:
            f.write('<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32"><circle cx="16" cy="16" '
                    'r="16" fill="#ff6ec7"/></svg>\n')
        engine.request("DEFINE-BADGE", "cloud", label="Cloud", glyph="c", ascii="c", color="36", image=image,
                       timeout=10)
        icons = os.path.join(self.work, "share", "icons", "hicolor")
        svg = os.path.join(icons, "scalable", "emblems", "emblem-syncbadge-cloud.svg")
        spin("the installed image", lambda: os.path.exists(svg))
        if shutil.which("rsvg-convert"):     # rendered in the background
            pngs = [os.path.join(icons, "%dx%d" % (size, size), "emblems", "emblem-syncbadge-cloud.png")
                    for size in (16, 22, 24, 32, 48, 64)]
            spin("the PNGs", lambda: all(os.path.exists(p) and os.path.getsize(p) > 0 for p in pngs))

    def notes(self):
        """Replaces the extension's notify() for the test: [(title, text, ok)]."""
        notes = []
        real = ext.notify
        ext.notify = lambda title, text, ok, window=None: notes.append((title, text, ok))
        self.addCleanup(setattr, ext, "notify", real)
        return notes

    def action_at(self, engine):
        """The next `* ACTION` the engine gets, as the package's Action, running the main loop
        meanwhile (the extension asks on a connection the loop drives)."""
        got = []

        def arrived():
            push = engine.next_push(0)
            while push is not None and not got:
                got.extend(a for a in [ext.sb.Action.from_message(push)] if a is not None)
                push = engine.next_push(0) if not got else None
            return got
        spin("an * ACTION at the engine", arrived)
        return got[0]

    def clients(self, stats):
        reply = stats.request("STATS", timeout=10)
        return int(dict((m.arg(0), m.arg(1)) for m in reply.lines("STAT"))["clients"])

    def test_the_engines_answer_is_shown_and_nothing_waits_for_it(self):
        engine = self.start(["a.txt"])
        engine.request("CLAIM", self.root, timeout=10)
        engine.request("DEFINE-MENU", "items", "test.sync", title="Sync", timeout=10)
        provider = ext.sb.Provider(engine)
        stats = self.connect("viewer")
        notes = self.notes()
        core = self.core()
        spin("HELLO", lambda: core.conn.ready)
        self.assertIn("action-reply", core.conn.caps)
        before = self.clients(stats)
        a = os.fsencode(self.path("a.txt"))

        # Answered: what the engine says is the notification.
        core.action("test.sync", [a], os.fsencode(self.root))
        action = self.action_at(engine)
        self.assertEqual((action.id, action.paths, action.client), ("test.sync", [a], "filemanager"))
        self.assertIsNotNone(action.reply, "the action asked for no answer")
        self.assertEqual(self.clients(stats), before + 1)        # a connection of its own
        # Meanwhile the extension's own connection answers at once.
        start = time.monotonic()
        status = core.send("STATUS", a)
        spin("STATUS while the engine has not answered", lambda: status.done)
        self.assertLess(time.monotonic() - start, 1)
        self.assertEqual(notes, [])
        provider.answer(action, "copied 1 file").result(10)
        spin("the notification", lambda: notes)
        self.assertEqual(notes, [("Sync: test.sync", "copied 1 file", True)])
        spin("the action's connection closed", lambda: self.clients(stats) == before)
        self.assertEqual(core.calls, set())

        # Failed: the engine's message, as a failure.
        core.action("test.sync", [a], os.fsencode(self.root))
        provider.answer(self.action_at(engine), "disk full", failed=True).result(10)
        spin("the failure", lambda: len(notes) == 2)
        self.assertEqual(notes[1], ("Sync: test.sync", "failed: disk full", False))

        # The engine goes before it answers.
        core.action("test.sync", [a], os.fsencode(self.root))
        self.action_at(engine)
        engine.close()
        spin("the engine gone", lambda: len(notes) == 3)
        self.assertEqual(notes[2][::2], ("Sync: test.sync", False))
        self.assertIn("went away", notes[2][1])

        # A built-in item answers on the extension's own connection, as before.
        core.action("syncbadge.details", [a], os.fsencode(self.root))
        spin("the details", lambda: len(notes) == 4)
        self.assertTrue(notes[3][2] and notes[3][1].startswith("state="), notes[3])
        spin("no connection left but the extension's own (the engine went)",
             lambda: self.clients(stats) == before - 1)
        self.assertEqual(core.calls, set())

    def test_no_answer_within_10_seconds(self):
        """The daemon's default deadline, 10 s after the action reached the engine."""
        engine = self.start(["a.txt"])
        engine.request("CLAIM", self.root, timeout=10)
        notes = self.notes()
        core = self.core()
        spin("HELLO", lambda: core.conn.ready)
        core.action("test.sync", [os.fsencode(self.path("a.txt"))], os.fsencode(self.root))
        self.action_at(engine)
        start = time.monotonic()
        spin("the timeout", lambda: notes, timeout=20)
        self.assertGreater(time.monotonic() - start, 8)
        self.assertEqual(notes, [("Sync: test.sync", "the engine did not answer within 10 seconds", False)])

    def test_toolbar_items_follow_the_pushes(self):
        engine = self.start(["a.txt"])
        core = self.core()
        spin("HELLO", lambda: core.conn.ready)
        self.assertIn("toolbar-push", core.conn.caps)
        changes = []
        core.menu_hooks.append(lambda: changes.append(list(core.toolbars)))
        engine.request("DEFINE-TOOLBAR", name="Pause syncing", tooltip="Pause", timeout=10)
        engine.request("CLAIM", self.root, timeout=10)
        spin("the item", lambda: core.toolbars)
        self.assertEqual(core.toolbars, [("Pause syncing", "Pause", "test-provider")])
        # Renamed while the claim stays: no `* ROOT` comes, the `* TOOLBAR` push alone says it.
        engine.request("DEFINE-TOOLBAR", name="Resume syncing", tooltip="Resume", timeout=10)
        spin("the new name", lambda: core.toolbars == [("Resume syncing", "Resume", "test-provider")])
        other = self.daemon.connect("provider", "other-engine")
        self.conns.append(other)
        second = os.path.join(self.work, "second")
        os.makedirs(second)
        self.connect("admin").request("ADD-ROOT", second, timeout=30)
        other.request("DEFINE-TOOLBAR", name="Other", tooltip="", timeout=10)
        other.request("CLAIM", second, timeout=10)
        spin("two items", lambda: len(core.toolbars) == 2)
        self.assertEqual([t[0] for t in core.toolbars], ["Resume syncing", "Other"])
        engine.request("UNCLAIM", self.root, timeout=10)
        spin("the first one gone", lambda: core.toolbars == [("Other", "", "other-engine")])
        other.close()
        spin("none", lambda: core.toolbars == [])
        self.assertEqual(changes[-1], [])
        self.assertEqual(len(changes), 5)          # one redraw of the menus per change

    def test_an_answer_shows_on_the_status_bar_without_notify_send(self):
        """No notify-send: an action's answer goes to the status bar of the window it was
        chosen in (a real GTK 3 window and status bar, as in Nemo and Caja), and goes again."""
        import gi
        gi.require_version("Gtk", "3.0")
        from gi.repository import Gtk
        if not Gtk.init_check()[0]:
            self.fail("no display: run under xvfb-run (make test-filemanagers)")
        self.start(["a.txt"])
        core = self.core()
        spin("HELLO", lambda: core.conn.ready)
        window = Gtk.Window()
        box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
        bar = Gtk.Statusbar()
        box.pack_end(bar, False, False, 0)
        window.add(box)
        window.show_all()
        shown = lambda: " ".join(c.get_text() for c in bar.get_message_area().get_children()
                                 if isinstance(c, Gtk.Label))
        real_which = shutil.which
        old_seconds = ext.STATUS_SECONDS
        ext.STATUS_SECONDS = 1
        try:
            ext.shutil.which = lambda name, *a, **k: None if name == "notify-send" else real_which(name, *a, **k)
            core.action("syncbadge.details", [os.fsencode(os.path.join(self.root, "a.txt"))], os.fsencode(self.root),
                        window=window)
            spin("the answer on the status bar", lambda: "Sync: syncbadge.details: state=unknown gen=" in shown())
            spin("the status bar given back", lambda: shown() == "", timeout=5)
        finally:
            ext.shutil.which = real_which
            ext.STATUS_SECONDS = old_seconds
            window.destroy()


if __name__ == "__main__":
    unittest.main()

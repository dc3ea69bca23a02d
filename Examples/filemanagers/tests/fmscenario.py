"""The scenario the GUI tests of the file-manager clients share: Nautilus, Nemo and Caja
(test_filemanagers.py here) and Dolphin (Clients/dolphin/tests/test_dolphin.py) each run the
real daemon and the file manager on a root whose files an engine sets to every state, and find
the emblems on screenshots. The steps that are the same for all of them are here, once; what
differs (the file manager, its settings, its menus and how it is clicked) stays in each test.

`Scenario` is mixed into a unittest.TestCase whose scenario() calls these steps in order:
run_scenario, make_root, session_env, start_before_daemon, engine_with_every_state,
wait_every_state, live_changes, ... restart_daemon.
"""

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import fmsession as fs

# (name, state) in name order: the order the file managers lay them out.
FILES = [("a-synced.txt", "synced"), ("b-syncing.txt", "syncing"), ("c-error.txt", "error"),
         ("d-conflict.txt", "conflict"), ("e-pending.txt", "pending"), ("f-ignored.txt", "ignored"),
         ("g-unknown.txt", "unknown")]
CLOUD = (0xff, 0x6e, 0xc7)
CLOUD_SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="320" height="320" viewBox="0 0 320 320">'
             '<circle cx="160" cy="160" r="160" fill="#ff6ec7"/></svg>\n')
COLOURS = dict(fs.BADGE_COLOURS, cloud=CLOUD)


def dimmed(colour, alpha=140, under=255):
    """`colour` as drawn at opacity alpha/255 over the grey `under`, rounded as cairo's 8-bit
    blend rounds (exact: the blobs are found by exact colour)."""
    return tuple((c * alpha + under * (255 - alpha) + 127) // 255 for c in colour)


def emblem_colours(fm_name):
    """The emblems' colours as `fm_name` draws them: opaque, except in Nautilus 48 and later,
    which draws emblems at opacity 0.55 (seen on 48.3; 43 draws them opaque), over the view's
    white or, on the file that had the focus, its light grey tile (#efefef)."""
    if fm_name == "nautilus":
        out = subprocess.run(["nautilus", "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             universal_newlines=True).stdout
        m = re.search(r"(\d+)\.", out)
        if m and int(m.group(1)) >= 48:
            return {state: [dimmed(c), dimmed(c, under=0xef)] for state, c in COLOURS.items()}
    return COLOURS

# The emblems in reading order after live_changes (c-error.txt synced, g-unknown.txt the cloud
# badge), after the SET that follows the restart (e-pending.txt synced), and with every state
# set again for the documentation's pictures.
# SYNCBADGE_TEST_INSTALLED=1: the extensions, plugins and emblems are the ones the packages
# installed on this system (make test-package DIST=trixie runs the tests so in its Debian 13
# root); the tests install nothing of their own.
INSTALLED = os.environ.get("SYNCBADGE_TEST_INSTALLED") == "1"


def install_user(share=None, **make_vars):
    """A private data directory (`share`, else a new one) with what `make install-user` puts
    there as a user would (the extension, the emblems; `make_vars` passed on), or an empty one
    with INSTALLED. Returns it and what make said."""
    share = share or tempfile.mkdtemp(prefix="syncbadge-share-")
    os.makedirs(share, exist_ok=True)
    if INSTALLED:
        return share, ""
    # GIO_USE_VFS=local: rsvg-convert would otherwise start gvfsd on the session bus, which
    # complains when the bus goes at the end of the run.
    r = subprocess.run(["make", "-s", "-C", fs.REPO, "install-user", "XDG_DATA_HOME=" + share] +
                       ["%s=%s" % kv for kv in sorted(make_vars.items())],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=dict(os.environ, GIO_USE_VFS="local"))
    if r.returncode != 0:
        raise RuntimeError("make install-user failed:\n" + r.stdout.decode(errors="replace"))
    return share, r.stdout.decode(errors="replace")


CHANGED = ["synced", "syncing", "synced", "conflict", "pending", "ignored", "cloud"]
AFTER_RESTART = ["synced", "syncing", "synced", "conflict", "synced", "ignored", "cloud"]
EVERY = ["synced", "syncing", "error", "conflict", "pending", "ignored", "cloud"]


# Where a failing run's screenshots and logs go, and the file managers skipped on purpose.
ARTIFACTS = os.environ.get("SYNCBADGE_FM_ARTIFACTS") or "/tmp/syncbadge-fm-artifacts"
SKIP = set(s for s in os.environ.get("SYNCBADGE_FM_SKIP", "").split(",") if s)
_SHARE = []


def set_up_module():
    """setUpModule of a GTK file manager test module: a screen and the daemon, and the data
    directory of `make install-user`, made once per process (removed at exit)."""
    require("xvfb-run -a -s '-screen 0 1280x800x24' dbus-run-session (make test-filemanagers)")
    if not _SHARE:
        _SHARE.append(install_user()[0])
        atexit.register(shutil.rmtree, _SHARE[0], True)
    return _SHARE[0]


def require(run_under):
    """For setUpModule: a screen, and the daemon to test. `run_under` says how to get a screen."""
    if not os.environ.get("DISPLAY"):
        raise RuntimeError("no DISPLAY: run under " + run_under)
    if fs.missing_daemon():
        raise RuntimeError(fs.missing_daemon())


class Scenario(object):
    """Mixed into a unittest.TestCase (it uses its assertions) that defines scenario().
    `title` names the file manager in the failures of wait_emblems."""

    title = None
    colours = COLOURS   # as the file manager under test draws them (start_before_daemon)

    def run_scenario(self, label, prefix, artifacts, keep=False):
        """scenario() in a new work directory, with the daemon (not started yet) on a socket in it;
        then everything stopped. The screenshots and logs of a failing run (of any run with
        `keep`) are copied to artifacts/<label>-<time>."""
        self.work = os.path.realpath(tempfile.mkdtemp(prefix=prefix))
        self.shots = 0
        self.daemon = fs.daemon(self.work)
        self.fm = None
        self.conns = []
        ok = False
        try:
            self.scenario()
            ok = True
        finally:
            if self.fm is not None:
                self.fm.stop()
            for conn in self.conns:
                conn.close()
            self.daemon.stop()
            if not ok or keep:
                kept = os.path.join(artifacts, "%s-%s" % (label, time.strftime("%Y%m%d-%H%M%S")))
                os.makedirs(kept, exist_ok=True)
                for entry in os.listdir(self.work):
                    if entry.endswith((".png", ".log", ".jsonl")):
                        shutil.copy(os.path.join(self.work, entry), kept)
                sys.stderr.write("\n%s: screenshots and logs kept in %s\n" % (label, kept))
            shutil.rmtree(self.work, ignore_errors=True)

    # -- the steps ----------------------------------------------------------------------

    def make_root(self):
        """The root, work/Sync, with FILES in it."""
        root = self.root = os.path.join(self.work, "Sync")
        os.makedirs(root)
        for fname, _ in FILES:
            with open(os.path.join(root, fname), "w") as f:
                f.write("x")
        return root

    def session_env(self, share_from, **more):
        """The file manager's environment: a copy of the installed data directory `share_from`
        as its XDG_DATA_HOME (self.share), a HOME, config and cache of this run, the daemon's
        socket and the clients' debug log; then `more`."""
        share = self.share = os.path.join(self.work, "share")
        shutil.copytree(share_from, share, symlinks=True)
        env = dict(os.environ)
        env.update(PATH="/usr/bin:/bin:" + os.environ.get("PATH", ""), HOME=os.path.join(self.work, "home"),
                   XDG_DATA_HOME=share, XDG_CONFIG_HOME=os.path.join(self.work, "config"),
                   XDG_CACHE_HOME=os.path.join(self.work, "cache"), SYNCBADGE_SOCKET=self.daemon.socket,
                   SYNCBADGE_DEBUG="1", NO_AT_BRIDGE="1")
        env.update(more)
        for key in ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
            os.makedirs(env[key])   # Nautilus never finishes loading with a missing XDG_CACHE_HOME
        return env

    def start_before_daemon(self, fm):
        """Step 0. No daemon yet: the file manager `fm` shows the root, and its client says so
        once. Then the daemon starts."""
        self.fm = fm
        self.colours = emblem_colours(fm.name)
        fm.start(self.root)
        fm.wait_log(r"^syncbadge: no daemon at %s" % re.escape(self.daemon.socket), 30)
        fm.wait_log(r"^syncbadge: asked about the entries of %s \(no daemon yet\)" % re.escape(self.root), 30)
        self.daemon.start()

    def engine_with_every_state(self, menus=()):
        """The root added, and an engine that claims it with a toolbar item (Engine: Pause
        syncing), a file item (test.hello: Say hello) and `menus` [(kind, id, title)] more, and
        sets each file to its state (syncing at 40%, error with a message). The engine."""
        admin = self.connect("admin", "test-admin")
        admin.request("ADD-ROOT", self.root, timeout=30)
        engine = self.connect("provider", "test-engine")
        # The toolbar item before the claim, as engines do: the claim's `* ROOT` push is what
        # makes viewers ask for TOOLBAR again.
        engine.request("DEFINE-TOOLBAR", name="Engine", tooltip="Pause or resume syncing", timeout=10)
        engine.request("DEFINE-MENU", "toolbar", "engine.pause", title="Pause syncing", timeout=10)
        engine.request("CLAIM", self.root, timeout=10)
        engine.request("DEFINE-MENU", "items", "test.hello", title="Say hello", timeout=10)
        for kind, action_id, title in menus:
            engine.request("DEFINE-MENU", kind, action_id, title=title, timeout=10)
        for fname, state in FILES:
            if state != "unknown":
                engine.request("SET", state, self.path(fname), progress=40 if state == "syncing" else None,
                               message="disk full" if state == "error" else None, timeout=10)
        return engine

    def wait_every_state(self):
        """Step 1. Every state's emblem next to its file; none for unknown. The client has
        connected, and said only once that there was no daemon (Dolphin's menu plugin connects
        when Dolphin first builds a context menu). {file name: its emblem's centre}."""
        expected = [state for _, state in FILES if state != "unknown"]
        first = self.wait_emblems("every state's emblem", expected)
        self.fm.wait_log(r"^syncbadge: connected to ", 1)
        self.assertEqual(len(re.findall(r"(?m)^syncbadge: no daemon at ", self.fm.text())), 1)
        return dict((FILES[i][0], (x, y)) for i, (_, x, y) in enumerate(first[1]))

    def live_changes(self, engine):
        """Step 2. Live, in the same window: a SET (c-error.txt synced), and a badge the engine
        defines now (cloud, on g-unknown.txt), its image installed by the client. The file
        manager's pid, and (the screenshot, its emblems) with the change."""
        pid = self.fm.proc.pid
        cloud = os.path.join(self.work, "cloud.svg")
        with open(cloud, "w") as f:
            f.write(CLOUD_SVG)
        engine.request("DEFINE-BADGE", "cloud", label="In the cloud", glyph="c", ascii="c", color="36",
                       image=cloud, timeout=10)
        engine.request("SET", "synced", self.path("c-error.txt"), timeout=10)
        engine.request("SET", "synced", self.path("g-unknown.txt"), badge="cloud", timeout=10)
        later = self.wait_emblems("the changed emblems", CHANGED)
        self.assertEqual(pid, self.fm.proc.pid)
        self.assertTrue(os.path.isfile(os.path.join(self.share, "icons", "hicolor", "scalable", "emblems",
                                                    "emblem-syncbadge-cloud.svg")))
        return pid, later

    def restart_daemon(self, pid):
        """Step 4. A daemon restart: no emblems while it is down (once the extension's 2 s hold
        is over: a daemon back within it is test_core's), all back after, and live again
        (a SET from the engine connected anew), in the same process `pid`. The new engine."""
        log_at = len(self.fm.text())
        self.daemon.stop()
        for conn in self.conns:
            conn.close()
        self.conns = []
        self.fm.wait_log(r"^syncbadge: disconnected", 10, start=log_at)
        self.wait_emblems("no emblems while the daemon is down", [])
        self.daemon.start()
        # The engine comes back and reports its transfer again, as protocol 1.2 asks: otherwise
        # the daemon releases b-syncing.txt's stored `syncing` 30 s after its start.
        engine = self.connect("provider", "test-engine")
        engine.request("SET", "syncing", self.path("b-syncing.txt"), progress=40, timeout=10)
        self.fm.wait_log(r"^syncbadge: connected to ", 15, start=log_at)
        self.wait_emblems("the emblems after the restart", CHANGED)
        engine.request("SET", "synced", self.path("e-pending.txt"), timeout=10)
        self.wait_emblems("a SET after the restart", AFTER_RESTART)
        self.assertEqual(pid, self.fm.proc.pid)
        return engine

    def every_state_again(self, engine):
        """For the documentation's pictures: c-error.txt and e-pending.txt back to their first
        states (the engine must have claimed the root again). (The screenshot, its emblems)."""
        engine.request("SET", "error", self.path("c-error.txt"), message="disk full", timeout=10)
        engine.request("SET", "pending", self.path("e-pending.txt"), timeout=10)
        return self.wait_emblems("every state again", EVERY)

    def save_picture(self, shot, directory, name):
        """The screenshot trimmed to the window (and a 1-pixel border) as directory/name.png."""
        os.makedirs(directory, exist_ok=True)
        subprocess.run(["convert", shot.png, "-bordercolor", "black", "-border", "1", "-trim", "+repage",
                        os.path.join(directory, name + ".png")], check=True)

    # -- helpers ------------------------------------------------------------------------

    def path(self, fname):
        return os.path.join(self.root, fname)

    def connect(self, role, name):
        conn = self.daemon.connect(role, name)
        self.conns.append(conn)
        return conn

    def shot(self, label):
        self.shots += 1
        return fs.screenshot(os.path.join(self.work, "%02d-%s.png" % (self.shots, label)))

    def settle(self, what, label="settle"):
        """Screenshots until two in a row are the same (an animation is over); the last one."""
        stable = [self.shot(label)]

        def settled():
            stable.append(self.shot(label))
            return fs.changed_pixels(stable[-2], stable[-1], step=1) == 0
        fs.wait_until(what + " to settle", settled, 10, interval=0.3)
        return stable[-1]

    def wait_notes(self, summary, what=None):
        """The notifications with this summary, once there is one."""
        return fs.wait_until(what or "the notification %r" % summary, lambda: [
            n for n in self.fm.notifications() if n["summary"] == summary], 10)

    def engine_action(self, engine, action_id, timeout=10):
        """The next `* ACTION <action_id>` push the engine gets (other pushes are skipped)."""
        def action():
            push = engine.next_push(0.2)
            return push is not None and push.kind == "ACTION" and push.arg(0) == action_id and push
        return fs.wait_until("the action %s at the engine" % action_id, action, timeout)

    def wait_emblems(self, what, states, timeout=30):
        """Screenshots until the emblems on the screen, in reading order, are `states`;
        returns (the screenshot, its emblems)."""
        seen = []

        def check():
            shot = self.shot(what.replace(" ", "-").replace("'", ""))
            found = fs.emblems(shot, self.colours)
            seen[:] = [found]
            if [s for s, _, _ in found] == states:
                return shot, found
            os.unlink(shot.png)   # only the last one is kept
            self.shots -= 1
            return None
        try:
            return fs.wait_until("%s in %s" % (what, self.title), check, timeout, interval=0.3)
        except fs.Failure as ex:
            self.shot("failed")
            raise fs.Failure("%s; expected %s, the last screenshot had %s" % (ex, states, seen and seen[0]))

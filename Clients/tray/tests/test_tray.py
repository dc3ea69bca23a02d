"""syncbadge-tray against real things: a session bus (run under dbus-run-session), this build's
syncbadged on a private socket, an engine on the Python package's Provider that claims a root,
defines a toolbar item and answers its actions, and a desktop played by tests/desktop.py (the
StatusNotifierWatcher, the notification server, the file manager). Every wait has a deadline and
wakes on the tray's own D-Bus traffic.

    SYNCBADGED=.build/debug/syncbadged dbus-run-session -- /usr/bin/python3 -m unittest discover -s Clients/tray/tests
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path[:0] = [os.path.join(CHECKOUT, "Clients", "python"), os.path.join(CHECKOUT, "Clients", "tray"), HERE]

from syncbadge import Provider, testing  # noqa: E402

from desktop import Desktop, TrayClient, tray_command  # noqa: E402

if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
    raise unittest.SkipTest("no session bus: run under dbus-run-session (make test-tray)")


class Engine(object):
    """A sync engine on the package's Provider: claims the root, defines a toolbar item whose menu
    has one action, and answers it."""

    def __init__(self, daemon, root, name="engine", answer="paused 1 folder"):
        self.actions = []
        self.answer = answer
        self.got = threading.Event()
        self.conn = daemon.connect("provider", name, on_push=self._push)
        self.provider = Provider(self.conn)
        self.provider.on_action("engine.pause", self._pause)
        self.provider.claim(root).result(10)
        self.provider.define_menu("toolbar", "engine.pause", "Pause syncing").result(10)
        self.provider.define_toolbar("Engine", "The test engine").result(10)

    def _push(self, message):
        self.provider.handle_push(message)

    def _pause(self, action):
        self.actions.append(action)
        self.provider.answer(action, self.answer)
        self.got.set()

    def set(self, state, path, **options):
        return self.provider.set(state, path, **options).result(10)

    def close(self):
        self.conn.close()


class TrayCase(unittest.TestCase):
    """A daemon with a root of synced files, an engine, the desktop; start_tray() starts the tray."""

    fake_watcher = True             # False where a real panel plays the watcher
    no_panel = False                # no watcher at all (GNOME without the AppIndicator extension)

    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="syncbadge-tray-test.")
        # The first cleanup runs last: after the daemon stopped, which would re-create its
        # control files in a tree being removed (so the removal failed and left it in /tmp).
        self.addCleanup(shutil.rmtree, self.work, ignore_errors=True)
        self.root = os.path.join(self.work, "Sync")
        os.makedirs(os.path.join(self.root, "docs", "deep"))
        for rel in ("a.txt", "b.txt", "c.txt", "docs/report.txt", "docs/deep/notes.txt", "docs/deep/old.txt"):
            with open(os.path.join(self.root, rel), "w") as f:
                f.write(rel)
        self.daemon = testing.Daemon(os.path.join(self.work, "daemon")).start()
        self.addCleanup(self.daemon.stop)
        admin = self.daemon.connect("admin", "tray-test")
        admin.request("ADD-ROOT", self.root, timeout=30)
        admin.close()
        self.engine = Engine(self.daemon, self.root)
        self.addCleanup(lambda: self.engine.close())
        for rel in ("a.txt", "b.txt", "c.txt", "docs/report.txt", "docs/deep/notes.txt", "docs/deep/old.txt",
                    "docs/deep", "docs", ""):
            self.engine.set("synced", self.path(rel))
        self.desktop = Desktop(watcher=self.fake_watcher)
        self.addCleanup(self.desktop.stop)
        self.tray = None

    def tearDown(self):
        if self.tray is not None and self.tray.poll() is None:
            self.tray.send_signal(signal.SIGTERM)
            try:
                self.tray.wait(10)
            except subprocess.TimeoutExpired:
                self.tray.kill()
                self.tray.wait()
        if self.tray is not None:
            self.tray_log.close()
            if self._outcome_failed():
                with open(self.tray_log.name) as f:
                    sys.stderr.write("\n--- syncbadge-tray's log ---\n" + f.read())

    def _outcome_failed(self):
        result = getattr(self._outcome, "result", None)
        errors = getattr(self._outcome, "errors", None)
        if errors is not None:
            return any(e for _, e in errors)
        return bool(result and (result.failures or result.errors))

    def path(self, rel):
        return os.path.join(self.root, rel) if rel else self.root

    def start_tray(self, **env):
        env = dict(os.environ, SYNCBADGE_SOCKET=self.daemon.socket, **env)
        self.tray_log = open(os.path.join(self.work, "tray.log"), "w")
        self.tray = subprocess.Popen(tray_command(CHECKOUT), env=env, stdin=subprocess.DEVNULL,
                                     stdout=self.tray_log, stderr=subprocess.STDOUT)
        service = "org.kde.StatusNotifierItem-%d-1" % self.tray.pid
        if self.no_panel:
            self.desktop.wait_for("the tray's item on the bus", lambda: self.desktop.has_owner(service))
        elif self.fake_watcher:
            self.desktop.wait_for("the tray to register with the watcher",
                                  lambda: any(r[1] == service for r in self.desktop.registered))
        else:
            self.desktop.wait_for("the panel's watcher to list the tray", lambda: any(i.split("/")[0] == service for i in self.desktop.watcher_items()))
        self.client = TrayClient(service)
        self.addCleanup(self.client.close)
        return self.client

    def wait_prop(self, name, want):
        got = []

        def check():
            got[:] = [self.client.prop(name)]
            return want(got[0]) if callable(want) else got[0] == want
        try:
            self.desktop.wait_for("%s to be %r" % (name, want), check)
        except AssertionError:
            raise AssertionError("%s stayed %r" % (name, got[0] if got else None))

    def wait_menu(self, text, present=True):
        return self.desktop.wait_for("%r %s the menu" % (text, "in" if present else "gone from"),
                                     lambda: (self.client.find(text) is not None) == present and (self.client.find(text) or True))

    def notes(self, word):
        return [n for n in self.desktop.notifications if word in n["summary"]]



class TrayTest(TrayCase):
    def test_registers_and_follows_the_daemon(self):
        tray = self.start_tray()
        self.wait_prop("IconName", "emblem-syncbadge-synced")
        self.assertEqual(tray.prop("Status"), "Active")
        self.wait_prop("ToolTip", lambda t: t[3] == "8 synced")
        self.wait_menu("Sync — synced")
        self.assertIsNotNone(tray.find("No problems"))
        # A conflict deep down: the icon, the status, the tooltip, the root's line and the
        # recent problems all follow, through the observed directories' pushes.
        self.engine.set("conflict", self.path("docs/deep/notes.txt"), message="changed on both sides")
        self.wait_prop("IconName", "emblem-syncbadge-conflict")
        self.assertEqual(tray.prop("Status"), "NeedsAttention")
        self.wait_prop("ToolTip", lambda t: t[3] == "1 conflict, 7 synced")
        self.wait_menu("notes.txt — conflict: changed on both sides")
        self.wait_menu("Sync — conflict (1 conflict)")
        # An error in another directory ranks first, and is the newest problem.
        self.engine.set("error", self.path("a.txt"), message="disk full")
        self.wait_prop("IconName", "emblem-syncbadge-error")
        labels = [l[0] for l in tray.labels()]
        self.assertLess(labels.index("a.txt — error: disk full"), labels.index("notes.txt — conflict: changed on both sides"))
        # Resolved: they leave the menu, the directories are no longer needed.
        self.engine.set("synced", self.path("docs/deep/notes.txt"))
        self.engine.set("synced", self.path("a.txt"))
        self.wait_prop("IconName", "emblem-syncbadge-synced")
        self.wait_menu("No problems")
        self.assertEqual(tray.prop("Status"), "Active")
        self.assertIsNone(tray.find("notes.txt"))
        # A path deleted while in conflict goes from the problems too.
        self.engine.set("conflict", self.path("docs/report.txt"))
        self.wait_menu("report.txt — conflict")
        os.unlink(self.path("docs/report.txt"))
        self.wait_menu("report.txt — conflict", present=False)

    def test_open_folder_and_show_problem(self):
        tray = self.start_tray()
        self.engine.set("conflict", self.path("docs/report.txt"))
        n = self.wait_menu("report.txt — conflict")
        tray.click(n)
        self.desktop.wait_for("ShowItems of the file", lambda: ("ShowItems", ["file://" + self.path("docs/report.txt")])
                              in self.desktop.file_manager)
        tray.click(tray.find("Sync — conflict"))
        self.desktop.wait_for("ShowFolders of the root", lambda: ("ShowFolders", ["file://" + self.root])
                              in self.desktop.file_manager)

    def test_toolbar_action_runs_and_shows_its_answer(self):
        tray = self.start_tray()
        self.wait_menu("Engine")
        n = self.wait_menu("Pause syncing")
        tray.click(n)
        self.assertTrue(self.engine.got.wait(10), "the engine got no ACTION")
        self.assertEqual(self.engine.actions[0].id, "engine.pause")
        self.desktop.wait_for("the answer's notification", lambda: self.notes("Engine: Pause syncing"))
        self.assertEqual(self.notes("Engine: Pause syncing")[0]["body"], "paused 1 folder")
        self.wait_menu("Pause syncing: paused 1 folder")
        # The toolbar item goes with its engine, and comes back with it.
        self.engine.close()
        self.wait_menu("Pause syncing", present=False)
        self.engine = Engine(self.daemon, self.root, answer="again")
        self.wait_menu("Pause syncing")

    def test_one_notification_per_burst_and_snooze(self):
        # A problem that was there before the tray started raises nothing.
        self.engine.set("conflict", self.path("c.txt"))
        tray = self.start_tray()
        self.wait_menu("c.txt — conflict")
        # A burst of three conflicts: one notification that sums them up.
        for rel in ("a.txt", "b.txt", "docs/deep/old.txt"):
            self.engine.provider.set("conflict", self.path(rel))
        self.engine.set("conflict", self.path("docs/report.txt"), message="both changed")
        note = self.desktop.wait_for("a notification", lambda: self.notes("in conflict"))[0]
        root = self.root.replace(os.path.expanduser("~"), "~", 1) if self.root.startswith(os.path.expanduser("~") + "/") else self.root
        self.assertEqual(note["summary"], "4 files in conflict in %s" % root)
        self.assertIn("report.txt: both changed", note["body"])
        self.assertNotIn("c.txt", note["body"])
        self.assertEqual(note["actions"][2:], ["show", "Show", "snooze", "Snooze"])
        # "Show" shows the files in the file manager.
        self.desktop.invoke_action(note, "show")
        self.desktop.wait_for("ShowItems of the burst", lambda: any(
            m == "ShowItems" and "file://" + self.path("docs/report.txt") in uris for m, uris in self.desktop.file_manager))
        # "Snooze" from the notification: the menu says until when; a conflict now raises nothing.
        self.desktop.invoke_action(note, "snooze")
        self.wait_menu("Snoozed until")
        self.engine.set("error", self.path("docs/deep/notes.txt"))
        self.wait_menu("notes.txt — error")
        # Resume, then one more: the next notification is about that one alone, so nothing of the
        # snoozed one was kept back (it would have been due first, or summed up with it).
        tray.click(tray.find("Resume notifications"))
        self.wait_menu("For 1 hour")
        self.engine.set("synced", self.path("a.txt"))
        self.engine.set("conflict", self.path("a.txt"), message="again")
        later = self.desktop.wait_for("the next notification", lambda: self.desktop.notifications[1:])
        self.assertEqual([n["summary"] for n in later], ["a.txt is in conflict in %s" % root])
        self.assertEqual(later[0]["replaces"], note["id"])
        # Snooze from the menu works the same way.
        tray.click(tray.find("Until tomorrow"))
        self.wait_menu("Snoozed until 00:00")

    def test_survives_a_daemon_restart(self):
        tray = self.start_tray()
        self.wait_prop("IconName", "emblem-syncbadge-synced")
        self.daemon.stop()
        self.wait_prop("ToolTip", lambda t: t[2] == "SyncBadge is not running")
        self.wait_menu("SyncBadge is not running")
        self.assertEqual(tray.prop("IconName"), "emblem-syncbadge-outside")
        self.assertIsNone(tray.find("Engine"))
        self.daemon.start()
        self.wait_menu("Sync — synced")
        self.wait_prop("IconName", "emblem-syncbadge-synced")
        # Following again: an engine comes back and sets a conflict, as after any restart.
        self.engine = Engine(self.daemon, self.root)
        self.wait_menu("Pause syncing")
        self.engine.set("conflict", self.path("docs/deep/old.txt"))
        self.wait_menu("old.txt — conflict")
        self.wait_prop("Status", "NeedsAttention")

    def test_not_running_at_start_then_follows(self):
        self.daemon.stop()
        tray = self.start_tray()
        self.wait_prop("ToolTip", lambda t: t[2] == "SyncBadge is not running")
        self.assertIsNotNone(tray.find("SyncBadge is not running"))
        self.daemon.start()
        self.wait_prop("IconName", "emblem-syncbadge-synced")
        self.wait_menu("SyncBadge is not running", present=False)

    def test_registers_again_when_the_watcher_restarts(self):
        self.start_tray()
        first = self.desktop.watcher_generation
        self.desktop.restart_watcher()
        self.desktop.wait_for("registration with the new watcher",
                              lambda: any(g > first for g, _, _ in self.desktop.registered))
        self.wait_prop("IconName", "emblem-syncbadge-synced")

    def test_root_added_and_removed(self):
        tray = self.start_tray()
        self.wait_menu("Sync — synced")
        other = os.path.join(self.work, "Other")
        os.makedirs(other)
        admin = self.daemon.connect("admin", "tray-test-2")
        admin.request("ADD-ROOT", other, timeout=30)
        self.wait_menu("Other — unknown")
        self.wait_prop("IconName", "emblem-syncbadge-unknown")
        admin.request("REMOVE-ROOT", other, timeout=30)
        self.wait_menu("Other — unknown", present=False)
        self.wait_prop("IconName", "emblem-syncbadge-synced")
        admin.close()
        self.assertIsNotNone(tray.find("Sync — synced"))


class NoPanelTest(TrayCase):
    """GNOME without the AppIndicator extension: no StatusNotifierWatcher at all."""

    fake_watcher = False
    no_panel = True

    def test_notifications_come_without_a_panel(self):
        tray = self.start_tray()
        self.wait_prop("IconName", "emblem-syncbadge-synced")
        self.engine.set("conflict", self.path("docs/report.txt"), message="both changed")
        note = self.desktop.wait_for("a notification", lambda: self.notes("in conflict"))[0]
        self.assertTrue(note["summary"].startswith("report.txt is in conflict in "))
        self.assertEqual(note["body"], "both changed")
        self.assertFalse(self.desktop.registered)
        self.assertIsNotNone(tray.find("report.txt — conflict"))


if __name__ == "__main__":
    unittest.main()

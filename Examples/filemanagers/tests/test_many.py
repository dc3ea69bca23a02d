"""Correctness under load (issue 40), not timing: Nautilus shows a folder of 2,000 files in icon
view; an engine gives each file one of three states, then changes all 2,000 at once (pipelined
SETs); every emblem on the screen must then be its file's state as the daemon holds it (asked
with STATUS). Then the daemon restarts, and the same holds with no action in the file manager.
The timing of the same work is make bench-fm's (Benchmarks/filemanagers).

Run by make test-filemanagers (Xvfb, a session bus, this build's daemon).
"""

import os
import unittest

import fmscenario as sc
import fmsession as fs

FILES = 2000
# Three states whose emblems differ in colour and that a daemon keeps over a restart as they are
# (a `syncing` without its engine is released 30 s after a start: protocol 1.2).
STATES = ["synced", "error", "conflict"]
SHARE = None


def setUpModule():
    global SHARE
    SHARE = sc.set_up_module()


class ManyFilesTests(sc.Scenario, unittest.TestCase):
    title = "nautilus"

    def test_nautilus_2000_files(self):
        if "nautilus" in sc.SKIP:
            self.skipTest("SYNCBADGE_FM_SKIP names nautilus")
        self.run_scenario("nautilus-2000", "syncbadge-fm-many-", sc.ARTIFACTS,
                          keep=os.environ.get("SYNCBADGE_FM_KEEP") == "1")

    def scenario(self):
        root = self.root = os.path.join(self.work, "Sync")
        folder = os.path.join(root, "many")
        os.makedirs(folder)
        self.names = ["f%04d.txt" % i for i in range(FILES)]
        for name in self.names:
            with open(os.path.join(folder, name), "wb"):
                pass
        self.folder = folder
        self.daemon.start()
        admin = self.connect("admin", "test-admin")
        admin.request("ADD-ROOT", root, timeout=60)
        engine = self.connect("provider", "test-engine")
        engine.request("CLAIM", root, timeout=10)
        self.set_states(engine, 0)

        self.start_fm(folder)
        self.wait_daemon_states("the first states")

        # All 2,000 at once: every file to the next state, SETs pipelined, then their answers.
        self.set_states(engine, 1)
        shown = self.wait_daemon_states("the states after the flip of 2,000 files")
        self.after_flip()
        pid = self.fm.proc.pid

        # A daemon restart: the emblems go, and come back right, in the same window.
        self.daemon.stop()
        for conn in self.conns:
            conn.close()
        self.conns = []
        self.wait_emblems("no emblems while the daemon is down", [])
        self.daemon.start()
        again = self.wait_daemon_states("the states after a daemon restart")
        self.assertEqual(pid, self.fm.proc.pid)
        self.assertEqual([s for s, _, _ in shown[1]], [s for s, _, _ in again[1]])

    def set_states(self, engine, shift):
        replies = [engine.send("SET", STATES[(i + shift) % len(STATES)], os.path.join(self.folder, name))
                   for i, name in enumerate(self.names)]
        for reply in replies:
            reply.result(60)

    def after_flip(self):
        """A subclass checks more of the folder here (Nautilus's extension redraws every file)."""

    def start_fm(self, folder):
        """Nautilus with the extension on `folder` (a subclass shows it in its file manager)."""
        env = self.session_env(SHARE, GSETTINGS_BACKEND="keyfile", GSK_RENDERER="cairo", SYNCBADGE_DEBUG="0")
        self.fm = fs.FileManager("nautilus", self.work, env)
        self.colours = sc.emblem_colours("nautilus")
        self.fm.start(folder)

    def daemon_states(self, n, last=False):
        """The states of the first (or the last) n files (name order, as the icon view lays them
        out), asked of the daemon."""
        names = self.names[-n:] if last else self.names[:n]
        viewer = self.daemon.connect("viewer", "test-viewer")
        try:
            reply = viewer.request("STATUS", *[os.path.join(self.folder, name) for name in names], timeout=30)
            return [item.state for item in reply.items]
        finally:
            viewer.close()

    def wait_daemon_states(self, what, timeout=60, last=False):
        """Screenshots until the emblems on the screen, in reading order, are the daemon's states
        of the files shown first (at least 8 of them), or with `last` of the files at the end of
        the folder (the view scrolled there); (the screenshot, its emblems)."""
        expected = self.daemon_states(60, last)
        seen = []

        def check():
            shot = self.shot(what.replace(" ", "-"))
            found = fs.emblems(shot, self.colours)
            seen[:] = [found]
            states = [s for s, _, _ in found]
            if len(states) >= 8 and states == (expected[-len(states):] if last else expected[:len(states)]):
                return shot, found
            os.unlink(shot.png)
            self.shots -= 1
            return None
        try:
            return fs.wait_until("%s in %s" % (what, self.title), check, timeout, interval=0.3)
        except fs.Failure as ex:
            self.shot("failed")
            raise fs.Failure("%s; the daemon holds %s first, the last screenshot had %s"
                             % (ex, expected[:16], seen and [s for s, _, _ in seen[0]]))


if __name__ == "__main__":
    unittest.main()

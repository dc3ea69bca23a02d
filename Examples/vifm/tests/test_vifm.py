"""vifm's SyncBadge column (Examples/vifm) in the real vifm, in tmux, against the real syncbadged.

Run by `make test-vifm` (a step of `make test`). vifm reads the vifmrc lines of README.md here,
with the plugin linked into its plugins directory as the README says; a provider sets every
state, and the column shows each state's glyph next to its file; a SET, a badge a provider
defines, and a daemon restart show up without a key press. The screen of a failing run is
printed, the helper's log with it.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "Examples", "filemanagers", "tests"))

import fmsession as fs  # noqa: E402  (the real daemon on a private socket, waits with deadlines)

FILES = [("a-synced.txt", "synced", "\u2713"), ("b-syncing.txt", "syncing", "\u27f340%"),
         ("c-error.txt", "error", "\u2717"), ("d-conflict.txt", "conflict", "\u21c4"),
         ("e-pending.txt", "pending", "\u21e1"), ("f-ignored.txt", "ignored", "\u2298"),
         ("g-unknown.txt", "unknown", "?")]


def readme_vifmrc():
    """The vifmrc lines README.md shows (its first ```vim block)."""
    with open(os.path.join(REPO, "Examples", "vifm", "README.md")) as f:
        text = f.read()
    return re.search(r"```vim\n(.*?)```", text, re.S).group(1)


class VifmTests(unittest.TestCase):
    def setUp(self):
        if shutil.which("vifm") is None or shutil.which("tmux") is None:
            self.fail("vifm and tmux are needed (make deps)")
        if fs.missing_daemon():
            self.fail(fs.missing_daemon())
        self.work = os.path.realpath(tempfile.mkdtemp(prefix="syncbadge-vifm-test-"))
        self.tmux_socket = "syncbadge-vifm-test-%d" % os.getpid()
        self.daemon = fs.daemon(self.work)
        self.conns = []
        self.addCleanup(self.cleanup)

    def cleanup(self):
        subprocess.run(["tmux", "-L", self.tmux_socket, "kill-server"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        for conn in self.conns:
            conn.close()
        self.daemon.stop()
        shutil.rmtree(self.work, ignore_errors=True)

    def tmux(self, *args):
        return subprocess.run(["tmux", "-L", self.tmux_socket] + list(args), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, check=True, timeout=10).stdout

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", "vifm")

    def wait_column(self, what, expected, timeout=15):
        """Waits until each file's line shows its expected column text ({name: text}; "" for
        none)."""
        seen = [""]

        def check():
            screen = seen[0] = self.screen()
            for name, text in expected.items():
                line = next((l for l in screen.splitlines() if " %s " % name in " %s " % l), None)
                if line is None:
                    return False
                cells = line.split()
                if (cells[1] if len(cells) > 2 and not cells[1][0].isdigit() else "") != text:
                    return False
            return True
        try:
            fs.wait_until(what, check, timeout, interval=0.1)
        except fs.Failure as ex:
            log = os.path.join(self.work, "run", "syncbadge-vifm.log")
            helper = open(log).read() if os.path.exists(log) else "(no helper log)"
            raise fs.Failure("%s; expected %r; the screen:\n%s\nthe helper's log:\n%s" % (ex, expected, seen[0], helper))

    def test_column(self):
        root = os.path.join(self.work, "Sync")
        os.makedirs(root)
        for name, _, _ in FILES:
            with open(os.path.join(root, name), "w") as f:
                f.write("x")
        self.daemon.start()
        admin = self.connect("admin", "test-admin")
        admin.request("ADD-ROOT", root, timeout=30)
        engine = self.connect("provider", "test-engine")
        for name, state, _ in FILES:
            if state != "unknown":
                engine.request("SET", state, os.path.join(root, name), progress=40 if state == "syncing" else None,
                               timeout=10)

        # vifm as the README sets it up: the plugin linked into $VIFM/plugins, its vifmrc lines.
        config = os.path.join(self.work, "vifm")
        os.makedirs(os.path.join(config, "plugins"))
        os.symlink(os.path.join(REPO, "Examples", "vifm", "syncbadge"), os.path.join(config, "plugins", "syncbadge"))
        with open(os.path.join(config, "vifmrc"), "w") as f:
            f.write(readme_vifmrc())
        runtime = os.path.join(self.work, "run")      # the daemon's socket directory, mode 0700
        env = ["SYNCBADGE_SOCKET=" + self.daemon.socket, "VIFM=" + config, "MYVIFMRC=" + os.path.join(config, "vifmrc"),
               "XDG_RUNTIME_DIR=" + runtime, "HOME=" + self.work,
               # vifm's server FIFO, which a vifm killed with its tmux server leaves behind.
               "TMPDIR=" + self.work]
        server = "sbtest%d" % os.getpid()
        self.tmux("new-session", "-d", "-s", "vifm", "-x", "110", "-y", "20", "env", *env,
                  "vifm", "--server-name", server, root, root)
        self.wait_column("each state's glyph next to its file", dict((n, g) for n, _, g in FILES))

        # Live: a SET, and a badge a provider defines now.
        engine.request("DEFINE-BADGE", "cloud", label="In the cloud", glyph="\u2601", ascii="c", color="36", timeout=10)
        engine.request("SET", "synced", os.path.join(root, "c-error.txt"), timeout=10)
        engine.request("SET", "synced", os.path.join(root, "g-unknown.txt"), badge="cloud", timeout=10)
        self.wait_column("the column after a SET", {"c-error.txt": "\u2713", "g-unknown.txt": "\u2601",
                                                    "a-synced.txt": "\u2713"})

        # A daemon restart: the column empties while it is down, and comes back.
        self.daemon.stop()
        for conn in self.conns:
            conn.close()
        self.conns = []
        self.wait_column("an empty column while the daemon is down", dict((n, "") for n, _, _ in FILES))
        self.daemon.start()
        self.wait_column("the column after the restart", {"a-synced.txt": "\u2713", "c-error.txt": "\u2713",
                                                         "e-pending.txt": "\u21e1", "g-unknown.txt": "\u2601"})
        engine = self.connect("provider", "test-engine")
        engine.request("SET", "synced", os.path.join(root, "e-pending.txt"), timeout=10)
        self.wait_column("a SET after the restart", {"e-pending.txt": "\u2713"})

    def connect(self, role, name):
        conn = self.daemon.connect(role, name)
        self.conns.append(conn)
        return conn


if __name__ == "__main__":
    unittest.main()

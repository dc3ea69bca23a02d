"""syncbadge.testing, the launcher every Python suite shares, with stand-in daemons (shell scripts
that say `listening`, exit, or ignore SIGTERM) in place of syncbadged: no Swift build."""

import os
import shutil
import signal
import sys
import tempfile
import time
import unittest

import vectors
from syncbadge import testing

# $@ is the daemon's command line: echoed to the log so a test sees the arguments.
LISTENS = """#!/bin/sh
trap 'echo "stopping on TERM" >&2; exit 0' TERM
echo "args: $*" >&2
echo "syncbadged: listening on the socket" >&2
while :; do sleep 0.05; done
"""
EXITS = """#!/bin/sh
echo "cannot open the store" >&2
exit 3
"""
# The connection tests' fake daemon on the socket it is given.
SERVES = """#!%s
import os, signal, sys
sys.path.insert(0, %r)
from fakedaemon import FakeDaemon
sock = sys.argv[sys.argv.index("--socket") + 1]
os.makedirs(os.path.dirname(sock), exist_ok=True)
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])   # before its threads start
daemon = FakeDaemon(sock)
sys.stderr.write("listening on %%s\\n" %% sock)
sys.stderr.flush()
signal.sigwait([signal.SIGTERM])
daemon.stop()
""" % (sys.executable, os.path.dirname(os.path.abspath(__file__)))
DEAF = """#!/bin/sh
trap '' TERM
echo "listening" >&2
while :; do sleep 0.05; done
"""


class Launcher(unittest.TestCase):
    def setUp(self):
        self.dir = os.path.realpath(tempfile.mkdtemp(prefix="sbtesting-"))
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)

    def script(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o755)
        return path

    def daemon(self, text, **kw):
        d = testing.Daemon(self.dir, binary=self.script("daemon", text), **kw)
        self.addCleanup(lambda: d.proc is not None and d.proc.poll() is None and d.kill())
        return d

    def test_start_waits_for_listening_and_stop_terminates(self):
        log_file = os.path.join(self.dir, "d.log")
        d = self.daemon(LISTENS, badges="/b", log_level="debug", log_file=log_file).start(10)
        self.assertTrue(d.alive())
        self.assertEqual(d.log.grep("^args:"), ["args: --socket %s --state-dir %s --log-level debug --badges /b"
                                                % (os.path.join(self.dir, "run", "daemon.sock"),
                                                   os.path.join(self.dir, "state"))])
        self.assertEqual(d.stop(10), 0)
        self.assertFalse(d.killed)
        self.assertIsNotNone(d.log.wait_for("stopping on TERM", 5))
        with open(log_file) as f:
            self.assertIn("syncbadged: listening on the socket\n", f.read())
        # A second run: a new log, the file appended to.
        d.start(10)
        self.assertEqual(len(d.logs), 2)
        self.assertEqual(d.stop(10), 0)
        with open(log_file) as f:
            self.assertEqual(f.read().count("listening"), 2)

    def test_a_log_read_by_no_thread(self):
        log_file = os.path.join(self.dir, "d.log")
        d = self.daemon(LISTENS, log_file=log_file, read_log=False)
        d.spawn()
        self.assertIsNone(d.log)
        deadline = time.monotonic() + 10
        while "listening" not in open(log_file).read():
            self.assertLess(time.monotonic(), deadline, "no listening line in the log file")
            time.sleep(0.01)
        self.assertEqual(d.stop(10), 0)

    def test_a_daemon_that_exits_says_why(self):
        d = self.daemon(EXITS)
        with self.assertRaises(testing.DaemonError) as cm:
            d.start(10)
        self.assertIn("exited (3)", str(cm.exception))
        self.assertIn("cannot open the store", str(cm.exception))

    def test_a_daemon_deaf_to_sigterm_is_killed(self):
        d = self.daemon(DEAF).start(10)
        self.assertEqual(d.stop(0.3), -signal.SIGKILL)
        self.assertTrue(d.killed)

    def test_connect(self):
        d = self.daemon(SERVES).start(10)
        conn = d.connect("provider", "engine")
        self.addCleanup(conn.close)
        self.assertTrue(conn.ready)
        self.assertTrue(conn.threaded)
        self.assertTrue(conn.request("PING").ok)
        self.assertEqual(d.stop(10), 0)

    def test_which_binary(self):
        self.assertEqual(testing.daemon_binary({"SYNCBADGED": "/x/syncbadged"}), "/x/syncbadged")
        # The package is in a checkout here: its debug build, whether built or not.
        self.assertEqual(testing.daemon_binary({}), os.path.join(vectors.REPO, ".build", "debug", "syncbadged"))



class Percentile(unittest.TestCase):
    """The one percentile of the benchmarks and the reliability suite: nearest rank."""

    def test_nearest_rank(self):
        hundred = list(range(100, 0, -1))             # 1..100, unsorted
        self.assertEqual(testing.percentile(hundred, 99), 99)
        self.assertEqual(testing.percentile(list(range(1, 201)), 99), 198)
        self.assertEqual(testing.percentile(hundred, 50), 50)
        self.assertEqual(testing.percentile(hundred, 100), 100)
        self.assertEqual(testing.percentile(hundred, 0), 1)
        self.assertEqual(testing.percentile([0.25, 0.5], 99.9), 0.5)
        self.assertEqual(testing.percentile([7], 99), 7)
        self.assertNotEqual(testing.percentile([], 99), testing.percentile([], 99))   # NaN


if __name__ == "__main__":
    unittest.main()

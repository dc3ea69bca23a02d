"""A syncbadged of its own, for tests and measurements: a private socket and state directory,
its log read line by line as it comes, started and stopped by its pid.

The one launcher the repository's Python suites share (the file managers', vifm's and Dolphin's
tests, the reliability suite, the benchmarks); each adds only what it needs on top (its temp
directories, /proc readings, timed connects).

    from syncbadge import testing
    daemon = testing.Daemon(workdir).start()            # waits for its "listening" log line
    conn = daemon.connect("admin", "my-test")            # a Connection, HELLO answered
    ...
    daemon.stop()
"""

import os
import re
import shutil
import signal
import subprocess
import threading
import time

from .connection import Connection

__all__ = ["Daemon", "DaemonError", "DaemonLog", "daemon_binary", "inotify_watches_in_use", "percentile"]

_CHECKOUT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))


def daemon_binary(environ=None):
    """The syncbadged to test: ``$SYNCBADGED``; else, for the package in a checkout of the
    repository, that checkout's debug build (.build/debug/syncbadged, there or not: a test
    then says it is missing, rather than test another one); else syncbadged on the PATH."""
    env = os.environ if environ is None else environ
    if env.get("SYNCBADGED"):
        return env["SYNCBADGED"]
    if os.path.isfile(os.path.join(_CHECKOUT, "Package.swift")):
        return os.path.join(_CHECKOUT, ".build", "debug", "syncbadged")
    return shutil.which("syncbadged") or "syncbadged"


def wait_until(what, predicate, timeout, interval=0.05, error=TimeoutError):
    """Polls predicate() until it returns something true, and returns that; raises `error`
    naming `what` at the deadline. For conditions no event announces (a file manager's window,
    a container's manager); where the daemon pushes, wait on the push instead."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise error("timed out after %gs waiting for %s" % (timeout, what))
        time.sleep(interval)


def percentile(values, p):
    """The nearest-rank percentile (p from 0 to 100): the smallest value that at least p % of
    the values are at or below; NaN for no values. Exact integer arithmetic, so p99 of 100
    values is the 99th, of 200 the 198th. The benchmarks and the reliability suite both read
    their figures through it."""
    if not values:
        return float("nan")
    s = sorted(values)
    k = max(0, min(len(s) - 1, -(-p * len(s) // 100) - 1))
    return s[int(k)]


def inotify_watches_in_use(uid=None):
    """The inotify watches held by the processes of `uid` (fs.inotify.max_user_watches is a
    limit per user), or by every process this one can see (uid None), from /proc/PID/fdinfo."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if uid is not None and os.stat("/proc/" + pid).st_uid != uid:
                continue
            for fd in os.listdir("/proc/%s/fdinfo" % pid):
                with open("/proc/%s/fdinfo/%s" % (pid, fd)) as f:
                    total += sum(1 for line in f if line.startswith("inotify wd:"))
        except OSError:       # a process or descriptor that went meanwhile, or not ours to read
            continue
    return total


class DaemonError(RuntimeError):
    """The daemon did not start, or exited; the message ends with its last log lines."""


class DaemonLog(object):
    """A process's stderr, read on a thread line by line as it comes (and appended to `path`
    when given), so that a test waits for a line with a deadline instead of polling a file."""

    def __init__(self, pipe, path=None):
        self.lines = []
        self.ended = False
        self.cond = threading.Condition()
        self._file = open(path, "a", encoding="utf-8") if path else None
        self.thread = threading.Thread(target=self._run, args=(pipe,), name="syncbadged-log", daemon=True)
        self.thread.start()

    def _run(self, pipe):
        for raw in iter(pipe.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if self._file is not None:
                self._file.write(line + "\n")
                self._file.flush()
            with self.cond:
                self.lines.append(line)
                self.cond.notify_all()
        pipe.close()
        if self._file is not None:
            self._file.close()
        with self.cond:
            self.ended = True
            self.cond.notify_all()

    def text(self):
        with self.cond:
            return "\n".join(self.lines)

    def tail(self, n=20):
        with self.cond:
            return self.lines[-n:]

    def wait_for(self, pattern, timeout, start=0):
        """The first line matching `pattern` (a regular expression, case-insensitive) at index
        `start` or later; None at the deadline or once the process closed its stderr."""
        rx = re.compile(pattern, re.I)
        deadline = time.monotonic() + timeout
        with self.cond:
            i = start
            while True:
                while i < len(self.lines):
                    if rx.search(self.lines[i]):
                        return self.lines[i]
                    i += 1
                left = deadline - time.monotonic()
                if left <= 0 or self.ended:
                    return None
                self.cond.wait(left)

    def grep(self, pattern):
        rx = re.compile(pattern, re.I)
        with self.cond:
            return [line for line in self.lines if rx.search(line)]


class Daemon(object):
    """syncbadged on `socket` (default WORKDIR/run/daemon.sock) and `state_dir` (default
    WORKDIR/state). `badges`: a badge directory (--badges). `prefix` wraps the command (strace
    -f ...); `pid` is then the daemon's own. `log_file`: every run's log appended there too.
    Each start is a new run with a new `log` (all in `logs`). With read_log=False the log goes
    to `log_file` alone, read by no thread of this process (for measurements: a log line then
    never takes time from the measuring process); `log` stays None and start() cannot wait for
    the daemon to listen: wait as a client would."""

    def __init__(self, workdir, binary=None, socket=None, state_dir=None, badges=None, log_level="info",
                 prefix=(), log_file=None, env=None, read_log=True):
        self.binary = binary or daemon_binary()
        self.socket = socket or os.path.join(workdir, "run", "daemon.sock")
        self.state_dir = state_dir or os.path.join(workdir, "state")
        self.badges = badges
        self.log_level = log_level
        self.prefix = list(prefix)
        self.log_file = log_file
        self.env = env
        self.read_log = read_log
        self.proc = None
        self.log = None
        self.logs = []
        self.killed = False         # the last stop() had to SIGKILL

    def argv(self):
        args = [self.binary, "--socket", self.socket, "--state-dir", self.state_dir, "--log-level", self.log_level]
        if self.badges:
            args += ["--badges", self.badges]
        return self.prefix + args

    def spawn(self):
        """Starts the process without waiting for it to listen; returns the Popen."""
        if not self.read_log:
            with open(self.log_file or os.devnull, "ab") as log:
                self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                             stderr=log, start_new_session=True, env=self.env)
            return self.proc
        self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, start_new_session=True, env=self.env)
        self.log = DaemonLog(self.proc.stderr, self.log_file)
        self.logs.append(self.log)
        return self.proc

    def start(self, timeout=30):
        """spawn(), then waits for the log line that says it listens; returns self. Raises
        DaemonError when it exits first or stays silent past `timeout` seconds."""
        self.spawn()
        self.wait_listening(timeout)
        return self

    def wait_listening(self, timeout=30):
        if self.log.wait_for(r"listening", timeout) is None:
            # Its stderr closed: it is exiting, but may not be reaped yet.
            rc = self.wait_exit(5) if self.log.ended else self.proc.poll()
            what = "exited (%s)" % rc if rc is not None else "did not listen within %gs" % timeout
            raise DaemonError("syncbadged %s: %s" % (what, " | ".join(self.log.tail(5))))

    @property
    def pid(self):
        """The daemon's pid (under a prefix such as strace -f, its traced child's)."""
        if not self.prefix:
            return self.proc.pid
        try:
            with open("/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)) as f:
                kids = f.read().split()
            return int(kids[0]) if kids else self.proc.pid
        except OSError:
            return self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def wait_exit(self, timeout):
        """The exit status, or None at the timeout."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, timeout=15):
        """SIGTERM to the daemon itself (a SIGTERM to strace would only detach it), SIGKILL
        after `timeout` seconds. Returns the exit status (None when it never ran)."""
        self.killed = False
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            try:
                os.kill(self.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            if self.wait_exit(timeout) is None:
                self.kill()
                self.killed = True
        if self.log is not None:
            self.log.thread.join(5)
        return self.proc.returncode

    def kill(self):
        """SIGKILL to the daemon (and the prefix's process), then waits for it."""
        for pid in {self.pid, self.proc.pid}:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(10)

    def connect(self, role="viewer", name=None, timeout=10, threaded=True, **options):
        """A Connection to it, HELLO answered; with a reader thread unless threaded=False, so that
        pushes queue up while a test does something else (Connection's other keyword arguments:
        on_push=, hello_options=, ...)."""
        return Connection(path=self.socket, role=role, name=name, threaded=threaded, **options).open(timeout)

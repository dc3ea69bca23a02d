"""Shared plumbing for the SyncBadge benchmarks: processes, sockets, /proc readings, results.

Everything here has a deadline: a wedged daemon, watchman or inotifywait makes a figure fail
with a message, never the harness hang. Every process started is recorded (in memory for the
normal clean-up, and in WORK/pids and WORK/watchman-socks for run.sh's trap, which cleans up
even if this Python process is killed outright).
"""

import json
import shutil
import tempfile
import os
import select
import signal
import socket
import statistics
import subprocess
import sys
import time

# The protocol: the Python client package of this repository (Clients/python): its codec,
# connection (with the raw, timed reads of the measured waits) and daemon launcher.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "Clients", "python"))
import syncbadge as sb  # noqa: E402
from syncbadge import codec, testing  # noqa: E402


class BenchError(Exception):
    """A figure could not be measured (a timeout, a tool that misbehaved)."""


def now():
    # The clock Connection.read_lines stamps reads with (on Linux the same CLOCK_MONOTONIC as
    # time.perf_counter).
    return time.monotonic()


def median(xs):
    return statistics.median(xs) if xs else float("nan")


percentile = testing.percentile


# ---------------------------------------------------------------------------------------------
# The run context: where things go, what to clean up.


class Ctx:
    def __init__(self, work, tools, sbbin, quick, base=None):
        self.work = work              # this run's temp tree (run.sh removes it)
        self.tools = tools            # the compiled C helpers
        self.sbbin = sbbin            # directory holding syncbadged and syncbadge
        self.base = base              # another build's directory to interleave with (--base), or None
        self.quick = quick
        self.procs = []               # Popen objects still to stop
        self.watchmen = []            # Watchman instances still to stop
        self.sysctls = {}             # key -> value to restore
        self.notes = []               # printed under the table
        self._n = 0
        self.shm = None               # our directory on tmpfs, if one was made
        self.shared = {}              # what figures share (a big tree made once per run)

    def tmpdir(self, name):
        """A fresh directory under the run's temp tree (short paths: sockets max 107 bytes)."""
        self._n += 1
        d = os.path.join(self.work, f"{name}{self._n}")
        os.makedirs(d)
        return d

    def shmdir(self, name):
        """A fresh directory on tmpfs (/dev/shm) when there is one, else tmpdir(). For figures
        about the watchers, not the disk: on this kind of VM an ext4 create costs ~0.5 ms,
        which would swamp both sides of a burst. Removed by cleanup() (and run.sh's trap)."""
        if not (os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK)):
            return self.tmpdir(name)
        if not self.shm:
            self.shm = tempfile.mkdtemp(prefix="sbbench.", dir="/dev/shm")
            self._record("rmdirs", self.shm)
        self._n += 1
        d = os.path.join(self.shm, f"{name}{self._n}")
        os.makedirs(d)
        return d

    def tool(self, name):
        return os.path.join(self.tools, name)

    def _record(self, fname, text):
        with open(os.path.join(self.work, fname), "a") as f:
            f.write(text + "\n")

    def spawn(self, argv, **kw):
        kw.setdefault("stdin", subprocess.DEVNULL)
        p = subprocess.Popen(argv, **kw)
        self.procs.append(p)
        self._record("pids", str(p.pid))
        return p

    def stop(self, p, sig=signal.SIGTERM, timeout=5):
        """Stops a process we started: SIGTERM, then SIGKILL after `timeout`."""
        if p.poll() is None:
            try:
                p.send_signal(sig)
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        for f in (p.stdin, p.stdout, p.stderr):
            if f:
                f.close()
        if p in self.procs:
            self.procs.remove(p)

    def set_sysctl(self, key, value):
        """Raises a /proc/sys value for the run (root only); cleanup() puts the old one back.
        These are machine-wide: never lower one, and on restore leave alone a value that
        someone else changed meanwhile (another test run may be using it)."""
        path = "/proc/sys/" + key.replace(".", "/")
        with open(path) as f:
            old = int(f.read().strip())
        if old >= value:
            return
        first = self.sysctls.get(key, (old, None))[0]   # what to put back: the value before us
        self.sysctls[key] = (first, value)
        self._record("sysctl-restore", f"{path} {first} {value}")
        with open(path, "w") as f:
            f.write(str(value))
        self.notes.append(f"raised {key} from {old} to {value} for the run (restored at exit)")

    def cleanup(self):
        for w in list(self.watchmen):
            try:
                w.stop()
            except Exception as e:  # keep cleaning up
                print(f"cleanup: watchman: {e}")
        for p in list(self.procs):
            try:
                self.stop(p, timeout=3)
            except Exception as e:
                print(f"cleanup: pid {p.pid}: {e}")
        for key, (old, ours) in self.sysctls.items():
            path = "/proc/sys/" + key.replace(".", "/")
            try:
                with open(path) as f:
                    if int(f.read().strip()) != ours:
                        continue   # changed by someone else meanwhile: theirs now
                with open(path, "w") as f:
                    f.write(str(old))
            except OSError as e:
                print(f"cleanup: could not restore {key}={old}: {e}")
        self.sysctls = {}
        if self.shm:
            shutil.rmtree(self.shm, ignore_errors=True)
            self.shm = None


# ---------------------------------------------------------------------------------------------
# /proc readings.


def rss_bytes(pid):
    """VmRSS of a process, in bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise BenchError(f"no VmRSS for pid {pid}")


def thread_switches(pid):
    """{tid: voluntary + non-voluntary context switches} for every thread of a process."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                out[tid] = sum(int(line.split()[1]) for line in f
                               if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")))
        except (FileNotFoundError, ProcessLookupError):   # a thread that ended meanwhile
            pass
    return out


def thread_cpu(pid):
    """{thread id: (name, nanoseconds on a CPU so far)} for every thread of a process (the
    scheduler's own count, /proc/PID/task/TID/schedstat: exact, where utime and stime count
    10 ms ticks)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ns = int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):   # a thread that ended meanwhile
            continue
        out[tid] = (name, ns)
    return out


def cpu_between(before, after, named=""):
    """Nanoseconds on a CPU between two thread_cpu() readings, over the threads whose name
    starts with `named` (all by default). A thread that ended in between takes what it did
    with it (not counted); one that started counts from 0."""
    return sum(ns - before.get(tid, (name, 0))[1] for tid, (name, ns) in after.items()
               if name.startswith(named))


def count_wakeups(pids, seconds, step=0.1):
    """Context switches (each one a thread waking up, or being preempted) of every thread of
    each process over `seconds`. Threads come and go (libdispatch retires idle workers), and a
    thread's counters vanish with it, so the threads are sampled every `step` seconds: a thread
    that starts counts from 0 and one that ends keeps its last reading (an undercount of at most
    what it did in its last `step`). Returns {pid: (switches, threads started, threads ended)}."""
    first = {p: thread_switches(p) for p in pids}
    last = {p: dict(first[p]) for p in pids}
    born = {p: set() for p in pids}
    end = now() + seconds
    while True:
        time.sleep(max(0.0, min(step, end - now())))
        for p in pids:
            for tid, n in thread_switches(p).items():
                if tid not in first[p] and tid not in born[p]:
                    born[p].add(tid)
                last[p][tid] = n
        if now() >= end:
            break
    out = {}
    for p in pids:
        cur = thread_switches(p)
        total = sum(n - first[p].get(tid, 0) for tid, n in last[p].items())
        gone = sum(1 for tid in last[p] if tid not in cur)
        out[p] = (total, len(born[p]), gone)
    return out


def settle_rss(pid, timeout=5.0, step=0.1):
    """Waits until the RSS stops moving (two readings in a row within 64 KiB) and returns it."""
    deadline = now() + timeout
    last = rss_bytes(pid)
    while now() < deadline:
        time.sleep(step)
        cur = rss_bytes(pid)
        if abs(cur - last) < 65536:
            return cur
        last = cur
    return last


# ---------------------------------------------------------------------------------------------
# Line readers with deadlines.


class LineReader:
    """Reads LF-terminated lines from a file descriptor, never waiting past a deadline.
    `last_recv` is when the read(2) that completed the line returned: for latency figures,
    the moment the bytes were in our hands."""

    def __init__(self, fd, what):
        self.fd = fd
        self.what = what
        self.buf = b""
        self.lines = []          # complete lines not yet handed out, with their receive time
        self.eof = False

    def _read(self, timeout):
        """One read, waiting at most `timeout` seconds: (complete lines, the time the read
        returned), ([], None) when nothing came, None at the end of the stream."""
        r, _, _ = select.select([self.fd], [], [], max(0.0, timeout))
        if not r:
            return [], None
        data = os.read(self.fd, 1 << 20)
        t = now()
        if not data:
            return None
        self.buf += data
        *complete, self.buf = self.buf.split(b"\n")
        return complete, t

    def fill(self, timeout):
        """One read, waiting at most `timeout` seconds; False if nothing came."""
        if self.eof:
            return False
        got = self._read(timeout)
        if got is None:
            self.eof = True
            return True
        complete, t = got
        if t is None:
            return False
        self.lines.extend((line.decode("utf-8", "replace"), t) for line in complete)
        return True

    def readline(self, deadline):
        """The next line and its receive time; BenchError at the deadline or end of file."""
        while not self.lines:
            if self.eof:
                raise BenchError(f"{self.what}: connection closed")
            left = deadline - now()
            if left <= 0:
                raise BenchError(f"{self.what}: no answer in time")
            self.fill(left)
        return self.lines.pop(0)


class ConnLines(LineReader):
    """The raw lines of a Conn, unparsed (text for matching, ~0.3 us a line where parsing
    costs ~10), stamped by the package's read_lines, which reads the connection's own socket
    through its own framing."""

    def __init__(self, conn, what):
        LineReader.__init__(self, -1, what)
        self.conn = conn

    def _read(self, timeout):
        try:
            return self.conn.read_lines(max(0.0, timeout))
        except sb.Disconnected:
            return None


def wire(path):
    """A path (or any field) as it is on the wire, for matching received lines as text."""
    return codec.encode(path).decode()


class Conn(sb.Connection):
    """The package's Connection, blocking, HELLO answered. request() gives (final, data) for the
    figures to check; pushes met while waiting for an answer are dropped. The measured waits
    read `reader`: the raw lines with the time each read returned."""

    def __init__(self, path, role="admin", name="bench", timeout=10):
        sb.Connection.__init__(self, path, role=role, name=name, on_push=lambda message: None)
        try:
            self.open(timeout)
        except sb.ServerError as e:
            raise BenchError(f"HELLO refused: {e}")
        self.reader = ConnLines(self, f"daemon ({name})")

    def request(self, verb, *fields, timeout=60, **options):
        """Sends one request (fields and options encoded by the codec); returns (final line,
        data lines) as codec Messages."""
        reply = self.send(verb, *fields, **options)
        if not reply.wait(timeout):
            raise BenchError(f"{self.reader.what}: no answer to {verb} in time")
        if reply.final is None:
            raise BenchError(f"{self.reader.what}: {reply.reason}")
        return reply.final, reply.data


# ---------------------------------------------------------------------------------------------
# The daemon under test.


class Daemon(testing.Daemon):
    """A syncbadged of its own (the package's launcher): a private socket and state directory,
    stopped by stop(); its log straight to DIR/log, read by no thread of the measuring process.

    `dir`: an existing daemon directory to start on again (same socket, same state: a
    restart); by default a fresh one. `bindir`: the directory of another build's syncbadged
    (run.sh --base) instead of the one measured. `wait=False` returns right after the spawn (`t_spawn`),
    for a figure that times the start itself; `wait_socket()` then waits for the socket."""

    def __init__(self, ctx, name="daemon", dir=None, wait=True, bindir=None):
        self.ctx = ctx
        self.dir = dir or ctx.tmpdir(name)
        # The daemon makes run/ 0700.
        testing.Daemon.__init__(self, self.dir, binary=os.path.join(bindir or ctx.sbbin, "syncbadged"),
                                socket=os.path.join(self.dir, "run", "d.sock"), state_dir=os.path.join(self.dir, "state"),
                                log_level="warning", log_file=os.path.join(self.dir, "log"), read_log=False)
        self.t_spawn = now()
        self.spawn()
        if wait:
            self.wait_socket(15)

    def spawn(self):
        """Recorded for the clean-up (and run.sh's trap)."""
        proc = testing.Daemon.spawn(self)
        self.ctx.procs.append(proc)
        self.ctx._record("pids", str(proc.pid))
        return proc

    def exited(self):
        """BenchError text for a daemon that exited on its own, with the end of its log."""
        with open(self.log_file) as f:
            tail = f.read()[-500:].strip()
        return f"syncbadged exited ({self.proc.returncode}): {tail}"

    def wait_socket(self, timeout):
        """Up once the socket accepts a connection."""
        deadline = now() + timeout
        while True:
            if self.proc.poll() is not None:
                raise BenchError(self.exited())
            try:
                s = socket.socket(socket.AF_UNIX)
                try:
                    s.connect(self.socket)
                finally:
                    s.close()
                break
            except OSError:
                if now() > deadline:
                    raise BenchError(f"syncbadged did not open its socket within {timeout} s")
                time.sleep(0.01)

    def conn(self, role="admin", name="bench"):
        return Conn(self.socket, role, name)

    def adapter(self, argv, env=None):
        """An adapter (syncbadge-syncthing, syncbadge-git: argv[0]) on this daemon's socket, its
        log in DIR/adapter.log; the process, recorded for the clean-up."""
        with open(os.path.join(self.dir, "adapter.log"), "w") as log:
            return self.ctx.spawn([argv[0], "--socket", self.socket] + list(argv[1:]), env=env,
                                  stdout=subprocess.DEVNULL, stderr=log)

    def wait_status(self, conn, path, ok, proc, timeout, what):
        """Asks STATUS `path` every 50 ms until ok(its ITEM Message); BenchError(`what`) when
        `proc` (the adapter that should get it there) exits first, or at the deadline."""
        deadline = now() + timeout
        while True:
            final, data = conn.request("STATUS", path)
            if final.ok and data and ok(data[0]):
                return data[0]
            if proc.poll() is not None or now() > deadline:
                raise BenchError(f"{what} (adapter exit {proc.poll()}; see {self.dir})")
            time.sleep(0.05)

    def add_root(self, conn, path, timeout=120):
        final, _ = conn.request("ADD-ROOT", path, timeout=timeout)
        if not final.ok:
            raise BenchError(f"ADD-ROOT {path}: {final}")

    def wait_idle(self, conn, timeout=60):
        """After ADD-ROOT's OK: waits until no root reports scanning=1 (ROOTS), then until the
        store has written what the registration gave it (STATS commits-done = commits: the
        commit's batch, 72 B per entry, is freed when it ends), then until the RSS stops moving."""
        deadline = now() + timeout
        while True:
            _, data = conn.request("ROOTS")
            if not any(m.opt("scanning") == "1" for m in data):
                break
            if now() > deadline:
                raise BenchError("roots still scanning")
            time.sleep(0.05)
        while True:
            _, data = conn.request("STATS")
            stats = {m.arg(0): m.arg(1) for m in data}
            if "commits-done" not in stats:
                break   # a daemon from before commits-done: the RSS alone tells
            if int(stats["commits"]) > 0 and stats["commits-done"] == stats["commits"]:
                break
            if now() > deadline:
                raise BenchError("the store is still writing")
            time.sleep(0.05)
        return settle_rss(self.pid)

    def stop(self, timeout=5):
        """SIGTERM, SIGKILL after `timeout`. Returns the exit status (negative: a signal)."""
        rc = testing.Daemon.stop(self, timeout)
        if self.proc in self.ctx.procs:
            self.ctx.procs.remove(self.proc)
        return rc


# ---------------------------------------------------------------------------------------------
# watchman, with a private server (socket, state file, log) per instance.


class Watchman:
    def __init__(self, ctx, name="watchman"):
        self.ctx = ctx
        self.dir = ctx.tmpdir(name)
        self.sock = os.path.join(self.dir, "sock")
        self.args = ["watchman", "--sockname", self.sock,
                     "--statefile", os.path.join(self.dir, "state"),
                     "--logfile", os.path.join(self.dir, "log"),
                     "--pidfile", os.path.join(self.dir, "pid"), "--no-save-state"]
        ctx._record("watchman-socks", self.sock)
        ctx.watchmen.append(self)
        try:
            out = subprocess.run(self.args + ["get-pid"], capture_output=True, text=True,
                                 timeout=30, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise BenchError("watchman did not start within 30 s")
        if out.returncode != 0:
            raise BenchError(f"watchman get-pid failed: {out.stderr.strip()}")
        self.pid = json.loads(out.stdout)["pid"]
        ctx._record("pids", str(self.pid))

    def conn(self):
        return WatchmanConn(self.sock)

    def stop(self):
        if self in self.ctx.watchmen:
            self.ctx.watchmen.remove(self)
        try:
            subprocess.run(self.args + ["--no-spawn", "shutdown-server"], capture_output=True,
                           timeout=10, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            pass
        deadline = now() + 5
        while os.path.exists(f"/proc/{self.pid}") and now() < deadline:
            time.sleep(0.02)
        if os.path.exists(f"/proc/{self.pid}"):
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class WatchmanConn:
    """watchman's JSON protocol over its Unix socket: one JSON value per line each way."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.reader = LineReader(self.sock.fileno(), "watchman")
        self.unilateral = []     # (value, time) of subscription pushes

    def command(self, cmd, timeout=120):
        self.sock.sendall(json.dumps(cmd).encode() + b"\n")
        deadline = now() + timeout
        while True:
            line, t = self.reader.readline(deadline)
            v = json.loads(line)
            if v.get("unilateral") or "subscription" in v and "files" in v:
                self.unilateral.append((v, t))
                continue
            if "error" in v:
                raise BenchError(f"watchman {cmd[0]}: {v['error']}")
            return v

    def next_unilateral(self, deadline):
        if self.unilateral:
            return self.unilateral.pop(0)
        while True:
            line, t = self.reader.readline(deadline)
            v = json.loads(line)
            if v.get("unilateral") or "subscription" in v:
                return v, t

    def close(self):
        self.sock.close()


# ---------------------------------------------------------------------------------------------
# inotifywait.


class InotifyWait:
    """inotifywait -m [...]: started, and ready once it says 'Watches established.'."""

    def __init__(self, ctx, args, timeout=120):
        self.ctx = ctx
        self.t_start = now()
        self.proc = ctx.spawn(["inotifywait", "-m"] + args, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
        self.out = LineReader(self.proc.stdout.fileno(), "inotifywait stdout")
        err = LineReader(self.proc.stderr.fileno(), "inotifywait stderr")
        deadline = now() + timeout
        while True:
            line, t = err.readline(deadline)
            if "Watches established" in line:
                self.t_ready = t
                break
            if "Setting up watches" not in line:
                raise BenchError(f"inotifywait: {line}")

    def stop(self):
        self.ctx.stop(self.proc)


# ---------------------------------------------------------------------------------------------
# Results.


class Figure:
    """One line of the table. `ratio` is syncbadge / baseline; `met` True/False/None."""

    def __init__(self, name, value, baseline, ratio, target, met, note=None):
        self.name, self.value, self.baseline = name, value, baseline
        self.ratio, self.target, self.met, self.note = ratio, target, met, note

    def cells(self):
        ratio = "—" if self.ratio is None else f"{self.ratio:.2f}×"
        met = {True: "met", False: "MISSED", None: "—"}[self.met]
        return [self.name, self.value, self.baseline, ratio, self.target, met]


def fmt_time(s):
    if s != s:   # NaN
        return "n/a"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} µs"


def fmt_bytes(b):
    if abs(b) >= 1 << 20:
        return f"{b / (1 << 20):.1f} MiB"
    if abs(b) >= 1 << 10:
        return f"{b / 1024:.1f} KiB"
    return f"{b:.0f} B"

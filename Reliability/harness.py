"""Shared machinery for the reliability suite: daemons, clients, deadlines, sysctls.

Every wait in the suite goes through a deadline: a wait either sees what it waits for (a
push, an answer, a log line, a process exit) or fails with what it saw instead. Nothing
sleeps and hopes. Every resource a case takes (daemons, mounts, sysctls, users, temp dirs)
is registered with its Context and released in reverse order, whatever happened.
"""

import atexit
import collections
import errno
import hashlib
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))

# The protocol's codec: the Python client package of this repository (Clients/python).
sys.path.insert(0, os.path.join(REPO, "Clients", "python"))
from syncbadge import codec  # noqa: E402


class CaseFail(Exception):
    """The daemon did something the contract does not allow."""


class CaseSkip(Exception):
    """The case cannot run here (not root, no permission); says why."""


def check(cond, message):
    if not cond:
        raise CaseFail(message)


def now():
    return time.monotonic()


class Timeout(Exception):
    pass


# --------------------------------------------------------------------------------------
# Lines (PROTOCOL.md "Framing"), through the client package's codec

class Line:
    """One line from the daemon, split into fields: tag (or '*'), kind, positionals, options
    (decoded, as str with os.fsdecode's surrogate escapes). A line that is not well formed (a
    bad tag, an empty field, a malformed escape) fails the case: the daemon must not send one."""

    def __init__(self, raw):
        self.raw = raw
        try:
            m = codec.parse_message(raw)
        except codec.ProtocolError as e:
            raise CaseFail(f"malformed line from the daemon ({e}): {raw[:300]!r}")
        self.tag = m.head
        self.kind = m.kind
        self.args = [os.fsdecode(f) for f in m.fields]
        self.opts = {k: os.fsdecode(v) for k, v in m.options.items()}

    @property
    def push(self):
        return self.tag == "*"

    @property
    def path(self):
        return self.args[0] if self.args else None

    @property
    def state(self):
        return self.args[1] if len(self.args) > 1 else None

    def counts(self):
        out = {}
        for part in self.opts.get("counts", "").split(","):
            if ":" in part:
                k, v = part.split(":", 1)
                out[k] = int(v)
        return out

    def __repr__(self):
        text = self.raw.decode("utf-8", "replace")
        return text if len(text) < 300 else text[:300] + "..."


class Answer:
    def __init__(self, tag, data, final):
        self.tag = tag
        self.data = data      # [Line]
        self.final = final    # Line: OK or ERR

    @property
    def ok(self):
        return self.final.kind == "OK"

    @property
    def code(self):
        """The ERR code, or None."""
        return self.final.args[0] if self.final.kind == "ERR" and self.final.args else None

    def __repr__(self):
        return " | ".join(repr(l) for l in self.data + [self.final])


class Closed(Exception):
    pass


class Client:
    """A blocking line-protocol client. Pushes met while reading answers are queued in
    `pushes` so that `wait_push` can find them later; nothing is ever dropped."""

    def __init__(self, sock_path, timeout=10):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # A Unix socket whose listen backlog is full refuses a non-blocking connect with
        # EAGAIN; a blocking client would just wait. Retry (with a deadline) like one.
        self.sock.setblocking(False)
        deadline = now() + timeout
        self.connect_retries = 0
        while True:
            try:
                self.sock.connect(sock_path)
                break
            except BlockingIOError:
                if now() > deadline:
                    raise
                self.connect_retries += 1
                select.select([], [], [], 0.001)
        self.sock.settimeout(timeout)
        self.framer = codec.LineBuffer()
        self.lines = collections.deque()   # complete lines read, not yet handed out
        self.pushes = collections.deque()
        self.all_lines = []           # every line received, for "no 'No space left' ever" checks
        self.keep_all = False
        self._tag = 0
        self.eof = False
        self.hello_line = None

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, verb, *fields):
        """Sends a request; returns its tag (answers come back in order). A str field is
        encoded (a path, a state, an id, or an option "key=value": its key never needs an
        escape, so encoding the whole field encodes just the value); bytes go as they are
        (already encoded: raw tests)."""
        self._tag += 1
        tag = str(self._tag)
        parts = [tag.encode(), verb.encode()]
        parts += [f if isinstance(f, bytes) else codec.encode(f) for f in fields]
        self.sock.sendall(b" ".join(parts) + b"\n")
        return tag

    def readline(self, deadline):
        """The next line (without LF; empty lines are skipped) or raises Closed at EOF,
        Timeout at the deadline."""
        while True:
            if self.lines:
                line = self.lines.popleft()
                if self.keep_all:
                    self.all_lines.append(line)
                return line
            if self.eof:
                partial = self.framer.pending
                raise Closed("connection closed" + (f" (partial line {partial[:100]!r})" if partial else ""))
            left = deadline - now()
            if left <= 0:
                raise Timeout()
            # poll, not select: the 1,000-connection flood has descriptors past FD_SETSIZE.
            p = select.poll()
            p.register(self.sock, select.POLLIN)
            if not p.poll(left * 1000):
                raise Timeout()
            try:
                chunk = self.sock.recv(1 << 16)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                self.eof = True
            self.lines.extend(self.framer.feed(chunk))

    def answer(self, tag, timeout=15):
        """Reads until the final line of `tag`'s answer; queues pushes met on the way."""
        deadline = now() + timeout
        data = []
        while True:
            try:
                raw = self.readline(deadline)
            except Timeout:
                raise CaseFail(f"no answer to request {tag} within {timeout}s (got so far: {data[-3:]})")
            line = Line(raw)
            if line.push:
                self.pushes.append(line)
                if line.kind == "BYE":
                    raise CaseFail(f"daemon said {line!r} while we waited for answer {tag}")
                continue
            if line.tag != tag:
                raise CaseFail(f"answer for tag {line.tag} while waiting for {tag}: {line!r}")
            if line.kind in ("OK", "ERR"):
                return Answer(tag, data, line)
            data.append(line)

    def request(self, verb, *fields, timeout=15):
        return self.answer(self.send(verb, *fields), timeout)

    def ok(self, verb, *fields, timeout=15):
        a = self.request(verb, *fields, timeout=timeout)
        check(a.ok, f"{verb} {' '.join(map(str, fields))[:200]} -> {a!r}")
        return a

    def hello(self, role="viewer", name=None):
        fields = ["proto=1", f"role={role}"] + ([f"name={name}"] if name else [])
        a = self.request("HELLO", *fields)
        check(a.ok, f"HELLO refused: {a!r}")
        self.hello_line = a.final
        return a

    def wait_push(self, pred, timeout, what="push"):
        """Returns the first queued or arriving push with pred(line) true; earlier
        non-matching pushes are consumed. Fails at the deadline, saying what came instead."""
        deadline = now() + timeout
        seen = []
        while True:
            while self.pushes:
                line = self.pushes.popleft()
                if pred(line):
                    return line
                seen.append(line)
            try:
                raw = self.readline(deadline)
            except Timeout:
                raise CaseFail(f"no {what} within {timeout}s; saw {len(seen)} other pushes, last: {seen[-5:]}")
            except Closed:
                raise CaseFail(f"connection closed while waiting for {what}; last pushes: {seen[-5:]}")
            line = Line(raw)
            if not line.push:
                raise CaseFail(f"unexpected answer line while waiting for {what}: {line!r}")
            self.pushes.append(line)

    def drain_pushes(self, timeout=0.0):
        """Reads whatever is already there (up to `timeout`), returns the queued pushes."""
        deadline = now() + timeout
        while True:
            try:
                raw = self.readline(deadline)
            except (Timeout, Closed):
                break
            self.pushes.append(Line(raw))
        out = list(self.pushes)
        self.pushes.clear()
        return out

    def status(self, path, timeout=15):
        """The ITEM of one path, or the ERR answer."""
        a = self.request("STATUS", path, timeout=timeout)
        return a.data[0] if a.ok and a.data else a


# --------------------------------------------------------------------------------------
# Daemon

class LogCapture:
    """Reads a child's stderr on a thread; lets cases wait for a line with a deadline."""

    def __init__(self, pipe):
        self.lines = []
        self.ended = False
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._run, args=(pipe,), daemon=True)
        self.thread.start()

    def _run(self, pipe):
        for raw in iter(pipe.readline, b""):
            with self.cond:
                self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
                self.cond.notify_all()
        with self.cond:
            self.ended = True
            self.cond.notify_all()

    def text(self):
        with self.cond:
            return "\n".join(self.lines)

    def wait_for(self, pattern, timeout, start=0):
        """First line matching `pattern` (regex, case-insensitive) at index >= start, else None."""
        rx = re.compile(pattern, re.I)
        deadline = now() + timeout
        with self.cond:
            i = start
            while True:
                while i < len(self.lines):
                    if rx.search(self.lines[i]):
                        return self.lines[i]
                    i += 1
                left = deadline - now()
                if left <= 0 or self.ended:
                    return None
                self.cond.wait(left)

    def grep(self, pattern):
        rx = re.compile(pattern, re.I)
        with self.cond:
            return [l for l in self.lines if rx.search(l)]


class Daemon:
    """One syncbadged on a private socket and state dir. `prefix` wraps the command
    (strace). Logs of every run (a restart is a new run) are kept for failure reports."""

    def __init__(self, ctx, state_dir=None, sock_path=None, prefix=None, name="daemon"):
        self.ctx = ctx
        self.name = name
        self.state_dir = state_dir or ctx.mkdir(f"{name}-state")
        if sock_path is None:
            sock_dir = ctx.mkdir(f"{name}-run", mode=0o700)
            sock_path = os.path.join(sock_dir, "d.sock")
        self.sock = sock_path
        self.prefix = prefix or []
        self.proc = None
        self.log = None
        self.runs = 0
        ctx.daemons.append(self)

    @property
    def db(self):
        return os.path.join(self.state_dir, "state.sqlite")

    def argv(self):
        args = [os.path.join(self.ctx.bin, "syncbadged"), "--socket", self.sock,
                "--state-dir", self.state_dir, "--log-level", "info"]
        badges = os.path.join(REPO, "Badges")
        if os.path.isfile(os.path.join(badges, "badges.tsv")):
            args += ["--badges", badges]
        return self.prefix + args

    def spawn(self):
        """Starts the process without waiting for it to listen."""
        self.runs += 1
        self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, start_new_session=True)
        self.log = LogCapture(self.proc.stderr)
        self.ctx.logs.append((f"{self.name} run {self.runs}", self.log))
        return self.proc

    def start(self, timeout=30):
        self.spawn()
        line = self.log.wait_for(r"listening", timeout)
        if line is None:
            rc = self.proc.poll()
            raise CaseFail(f"{self.name} did not start within {timeout}s (exit={rc})")
        return self

    @property
    def pid(self):
        """The daemon's pid (under strace, the traced child's)."""
        if not self.prefix:
            return self.proc.pid
        try:
            with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
                kids = f.read().split()
            return int(kids[0]) if kids else self.proc.pid
        except OSError:
            return self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill9(self):
        os.kill(self.pid, signal.SIGKILL)
        self.wait_exit(10)

    def wait_exit(self, timeout):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, timeout=20):
        """SIGTERM (graceful), SIGKILL after the deadline. Returns the exit code."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        # Signal the daemon itself: under strace, a SIGTERM to strace would only detach it.
        os.kill(self.pid, signal.SIGTERM)
        rc = self.wait_exit(timeout)
        if rc is None:
            self.proc.kill()
            rc = self.wait_exit(10)
            self.ctx.note(f"{self.name} ignored SIGTERM for {timeout}s; killed")
        self.log.thread.join(5)
        return rc

    def client(self, role="viewer", name=None, timeout=10):
        c = Client(self.sock, timeout)
        self.ctx.clients.append(c)
        c.hello(role, name)
        return c

    def rss(self):
        """Resident set size in bytes, from /proc."""
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def fd_count(self):
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def inotify_watch_inodes(self):
        """(dev, ino) of every inotify watch the daemon holds, from /proc/PID/fdinfo."""
        out = set()
        base = f"/proc/{self.pid}/fdinfo"
        for fd in os.listdir(base):
            try:
                with open(os.path.join(base, fd)) as f:
                    for line in f:
                        if line.startswith("inotify wd:"):
                            m = re.search(r"ino:([0-9a-f]+) sdev:([0-9a-f]+)", line)
                            if m:
                                out.add((int(m.group(2), 16), int(m.group(1), 16)))
            except OSError:
                pass
        return out

    def stats(self, client):
        a = client.ok("STATS")
        return {l.args[0]: l.args[1] for l in a.data if l.kind == "STAT" and len(l.args) >= 2}


def wait_root_ready(client, root, timeout=60):
    """Waits until ROOTS shows `root` without scanning=1 (after a start or a rescan)."""
    deadline = now() + timeout
    while True:
        a = client.ok("ROOTS")
        line = next((l for l in a.data if l.path == root), None)
        check(line is not None, f"root {root} missing from ROOTS: {a!r}")
        if line.opts.get("scanning") != "1":
            return line
        left = deadline - now()
        if left <= 0:
            raise CaseFail(f"root {root} still scanning after {timeout}s")
        # A ROOT push without scanning=1 is the signal; re-ask ROOTS at least every second
        # in case the push was coalesced.
        try:
            client.wait_push(lambda l: l.kind == "ROOT" and l.path == root and l.opts.get("scanning") != "1",
                             min(1.0, left), "root ready")
        except CaseFail:
            pass


# --------------------------------------------------------------------------------------
# Context: everything one case owns

class Context:
    def __init__(self, name, bin_dir, quick, seed, helpers):
        self.name = name
        self.bin = bin_dir
        self.quick = quick
        self.seed = seed
        self.helpers = helpers            # compiled C helpers (dict name -> path)
        self.tmp = os.path.realpath(tempfile.mkdtemp(prefix=f"sbrel-{name}-"))
        self.daemons = []
        self.clients = []
        self.logs = []                     # (label, LogCapture)
        self.cleanups = []                 # LIFO callbacks
        self.notes = []

    def note(self, text):
        self.notes.append(text)

    def mkdir(self, name, mode=0o755):
        path = os.path.join(self.tmp, name)
        os.makedirs(path, exist_ok=True)
        os.chmod(path, mode)
        return path

    def defer(self, fn, *args):
        self.cleanups.append((fn, args))

    def cleanup(self):
        errors = []
        for c in self.clients:
            c.close()
        for fn, args in reversed(self.cleanups):
            try:
                fn(*args)
            except Exception as e:   # keep going: every resource must be released
                errors.append(f"{getattr(fn, '__name__', fn)}: {e}")
        for d in self.daemons:
            try:
                if d.proc and d.proc.poll() is None:
                    try:
                        os.kill(d.pid, signal.SIGKILL)     # the daemon, also when traced
                    except OSError:
                        pass
                    d.proc.kill()
                    d.proc.wait(10)
            except Exception as e:
                errors.append(f"kill daemon: {e}")
        shutil.rmtree(self.tmp, ignore_errors=True)
        if os.path.exists(self.tmp):
            # A mount may still sit inside; never rm across it.
            errors.append(f"temp dir {self.tmp} not fully removed")
        return errors

    def log_tails(self, n=25, runs=3):
        """The last `n` lines of the last `runs` daemon runs' logs."""
        out = []
        for label, log in self.logs[-runs:]:
            with log.cond:
                tail = log.lines[-n:]
            out.append(f"    --- {label} log (last {len(tail)} lines) ---")
            out += ["    " + l for l in tail]
        return "\n".join(out)


# --------------------------------------------------------------------------------------
# Sysctls and mounts, restored whatever happens (also on SIGINT/SIGTERM of the suite)

_restore_lock = threading.Lock()
_pending_restores = {}   # path -> original value


def _restore_all():
    with _restore_lock:
        for path, value in list(_pending_restores.items()):
            try:
                with open(path, "w") as f:
                    f.write(value)
                del _pending_restores[path]
            except OSError as e:
                print(f"WARNING: could not restore {path} to {value}: {e}", file=sys.stderr)


atexit.register(_restore_all)


def _on_signal(signum, frame):
    _restore_all()
    raise KeyboardInterrupt()


signal.signal(signal.SIGTERM, _on_signal)


def read_sysctl(path):
    with open(path) as f:
        return f.read().strip()


def set_sysctl(ctx, path, value):
    """Writes a /proc/sys value and registers its restoration (SKIPs when not allowed).
    Returns a function that restores it early (idempotent; cleanup calls it anyway)."""
    original = read_sysctl(path)
    try:
        with open(path, "w") as f:
            f.write(str(value))
    except OSError as e:
        raise CaseSkip(f"cannot write {path}: {e.strerror}")
    with _restore_lock:
        _pending_restores.setdefault(path, original)

    def restore():
        with _restore_lock:
            if path not in _pending_restores:
                return
            orig = _pending_restores.pop(path)
        with open(path, "w") as f:
            f.write(orig)
        check(read_sysctl(path) == orig, f"{path} not restored")
    ctx.defer(restore)
    return restore


def mount(ctx, args, target):
    r = subprocess.run(["mount"] + args + [target], capture_output=True, text=True)
    if r.returncode != 0:
        raise CaseSkip(f"mount {' '.join(args)} not permitted: {r.stderr.strip()}")

    def umount():
        if os.path.ismount(target):
            subprocess.run(["umount", "-l", target], capture_output=True)
    ctx.defer(umount)


def require_root():
    if os.geteuid() != 0:
        raise CaseSkip("needs root")


def inotify_watches_in_use(uid=0):
    """Inotify watches held by every process of `uid` (the limit is per user)."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.stat(f"/proc/{pid}").st_uid != uid:
                continue
            for fd in os.listdir(f"/proc/{pid}/fdinfo"):
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    total += sum(1 for l in f if l.startswith("inotify wd:"))
        except OSError:
            continue
    return total


def file_hash(path):
    with open(path, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()


def identity(st):
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def sqlite_integrity(db):
    """'ok', an error text, or None when the sqlite3 CLI is missing."""
    if not shutil.which("sqlite3"):
        return None
    r = subprocess.run(["sqlite3", "-readonly", db, "PRAGMA integrity_check;"],
                       capture_output=True, text=True, timeout=60)
    return (r.stdout.strip() or r.stderr.strip()) if r.returncode == 0 else f"sqlite3 failed: {r.stderr.strip()}"


def percentile(values, p):
    if not values:
        return 0.0
    s = sorted(values)
    k = min(len(s) - 1, max(0, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


class Pinger:
    """Another client that PINGs every `interval` seconds and records round-trips, so a
    case can show the daemon stayed responsive while something else hammered it. It runs
    in its own process (pinger.py): a thread here would measure the harness's GIL."""

    def __init__(self, daemon, interval=0.02):
        # Raised priority (when allowed) so that on a busy machine the pinger's own
        # scheduling delays do not pass for the daemon's.
        def nice():
            try:
                os.setpriority(os.PRIO_PROCESS, 0, -10)
            except OSError:
                pass
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "pinger.py"), daemon.sock, str(interval)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=nice)
        self.samples = []        # (time, rtt seconds)
        self.errors = []
        self.stopped = False
        daemon.ctx.defer(self.stop)
        r, _, _ = select.select([self.proc.stderr], [], [], 10)
        first = self.proc.stderr.readline() if r else ""
        if first.strip() != "ready":
            self.stop()
            raise CaseFail(f"the pinger did not get its HELLO answered within 10 s: {first.strip()} {self.errors}")

    def stop(self):
        """Stops the pinger and collects its samples (idempotent)."""
        if self.stopped:
            return
        self.stopped = True
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            out, _ = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
            self.errors.append("pinger hung (a PING never answered)")
        for line in out.splitlines():
            if line.startswith("error "):
                self.errors.append(line[6:])
            elif line.strip():
                t, r = line.split()
                self.samples.append((float(t), float(r)))

    def window(self, t0, t1):
        return [r for t, r in self.samples if t0 <= t <= t1]


class RssSampler:
    """Samples the daemon's RSS every `interval` seconds on a thread."""

    def __init__(self, daemon, interval=0.1):
        self.daemon = daemon
        self.samples = []     # (time, bytes)
        self.stop_flag = threading.Event()
        self.interval = interval
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop_flag.is_set():
            try:
                self.samples.append((now(), self.daemon.rss()))
            except OSError:
                return
            self.stop_flag.wait(self.interval)

    def peak(self, t0=0, t1=float("inf")):
        vals = [b for t, b in self.samples if t0 <= t <= t1]
        return max(vals) if vals else 0

    def stop(self):
        self.stop_flag.set()
        self.thread.join(5)


def mb(n):
    return f"{n / 1048576:.1f} MiB"


def raise_nofile(n):
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(max(soft, n), hard) if hard != resource.RLIM_INFINITY else max(soft, n)
    if want > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# --------------------------------------------------------------------------------------
# The case registry: each case module decorates its entry point with @case.

CASES = []


def case(name, summary):
    def register(fn):
        CASES.append((name, fn, summary))
        return fn
    return register

"""Shared machinery for the reliability suite: daemons, clients, deadlines, sysctls. Clients and
daemons are the Python package's (Connection, testing.Daemon) with the cases' checks on top.

Every wait in the suite goes through a deadline: a wait either sees what it waits for (a
push, an answer, a log line, a process exit) or fails with what it saw instead. Nothing
sleeps and hopes. Every resource a case takes (daemons, mounts, sysctls, users, temp dirs)
is registered with its Context and released in reverse order, whatever happened.
"""

import atexit
import collections
import hashlib
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))

# The protocol: the Python client package of this repository (Clients/python): its codec,
# connection and daemon launcher.
sys.path.insert(0, os.path.join(REPO, "Clients", "python"))
import syncbadge as sb  # noqa: E402
from syncbadge import codec, testing  # noqa: E402


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
# Clients: the package's Connection, with what the cases add on top

class Line:
    """One line from the daemon (a package Message, or raw bytes read by Client.readline), as the
    cases read it: tag (or '*'), kind, positionals, options, decoded to str with os.fsdecode's
    surrogate escapes. Raw bytes that are not a well-formed line (a bad tag, an empty field, a
    malformed escape) fail the case: the daemon must not send one."""

    def __init__(self, line):
        if isinstance(line, codec.Message):
            m = line
        else:
            try:
                m = codec.parse_message(line)
            except codec.ProtocolError as e:
                raise CaseFail(f"malformed line from the daemon ({e}): {line[:300]!r}")
        self.raw = m.raw
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
    """A Reply's lines as Lines: `data`, then `final` (OK or ERR)."""

    def __init__(self, reply):
        self.tag = reply.tag
        self.data = [Line(m) for m in reply.data]
        self.final = Line(reply.final)

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


# A field "key=value" the cases write as one string: an option.
_OPTION = re.compile(r"([a-z][a-z0-9-]*)=(.*)\Z", re.S)


class Client(sb.Connection):
    """The package's Connection, blocking, its HELLO sent at once (hello() waits for the
    answer). On top: answers that fail the case when late, malformed or for no request; pushes
    queued as Lines for wait_push (nothing is ever dropped); raw lines (readline) for the
    cases that send bytes the codec refuses (Connection.send_raw)."""

    def __init__(self, sock_path, timeout=10, role="viewer", name=None):
        super().__init__(path=sock_path, role=role, name=name, on_push=self._queue_push)
        self.pushes = collections.deque()
        self.raw_lines = collections.deque()    # read by readline(), not yet handed out
        self.all_lines = []           # every line received, for "no 'No space left' ever" checks
        self.keep_all = False
        self.hello_line = None
        self.connect(timeout)

    def _queue_push(self, message):
        if self.keep_all:
            self.all_lines.append(message.raw)
        self.pushes.append(Line(message))

    def _check_stream(self):
        check(self.malformed == 0, f"{self.malformed} malformed line(s) from the daemon (logged above)")
        check(self.unmatched == 0, f"{self.unmatched} answer(s) from the daemon for no request")

    def send(self, verb, *fields):
        """Sends a request; returns its Reply (for answer()). A str field "key=value" is an
        option, any other field a positional (encoded by the codec)."""
        positional, options = [], {}
        for f in fields:
            m = _OPTION.match(f) if isinstance(f, str) else None
            if m:
                options[m.group(1)] = m.group(2)
            else:
                positional.append(f)
        return super().send(verb, *positional, **options)

    def answer(self, reply, timeout=15):
        """The Answer to a Reply (of send() or send_raw()). Fails the case at the timeout or
        when the daemon said BYE first; raises Closed when the connection ended without one
        (a daemon killed on purpose)."""
        if not reply.wait(timeout):
            raise CaseFail(f"no answer to {reply.verb} (tag {reply.tag}) within {timeout}s")
        if reply.final is None:
            if self.bye_reason is not None:
                raise CaseFail(f"daemon said BYE {self.bye_reason} while we waited for answer {reply.tag}")
            raise Closed(reply.reason)
        self._check_stream()
        if self.keep_all:
            self.all_lines += [m.raw for m in reply.data] + [reply.final.raw]
        return Answer(reply)

    def request(self, verb, *fields, timeout=15):
        return self.answer(self.send(verb, *fields), timeout)

    def ok(self, verb, *fields, timeout=15):
        a = self.request(verb, *fields, timeout=timeout)
        check(a.ok, f"{verb} {' '.join(map(str, fields))[:200]} -> {a!r}")
        return a

    def hello(self, timeout=15):
        """Waits for the answer to the HELLO sent at connect."""
        a = self.answer(self.hello_reply, timeout)
        check(a.ok, f"HELLO refused: {a!r}")
        self.hello_line = a.final
        return a

    def readline(self, deadline):
        """The next raw line (without LF), past the package's dispatch; raises Closed at the
        end of the connection, Timeout at the deadline."""
        while not self.raw_lines:
            left = deadline - now()
            if left <= 0:
                raise Timeout()
            try:
                lines, _ = self.read_lines(left)
            except sb.Disconnected as e:
                raise Closed(str(e))
            self.raw_lines.extend(lines)
        line = self.raw_lines.popleft()
        if self.keep_all:
            self.all_lines.append(line)
        return line

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
            left = deadline - now()
            if left <= 0:
                raise CaseFail(f"no {what} within {timeout}s; saw {len(seen)} other pushes, last: {seen[-5:]}")
            if not self.pump(left) and not self.pushes:
                raise CaseFail(f"connection closed while waiting for {what} ({self.closed_reason}); "
                               f"last pushes: {seen[-5:]}")
            self._check_stream()

    def until(self, attempt, timeout, step=1.0, wake=lambda line: True):
        """Calls attempt(), which returns (done, value), until done or past the deadline; in
        between, waits up to `step` seconds for a push `wake` accepts (the change that may let
        the next attempt succeed; asked again after `step` anyway, as the daemon may coalesce
        the push). Returns (done, the last value)."""
        deadline = now() + timeout
        while True:
            done, value = attempt()
            left = deadline - now()
            if done or left <= 0:
                return done, value
            try:
                self.wait_push(wake, min(step, left))
            except CaseFail:
                pass

    def drain_pushes(self, timeout=0.0):
        """Reads whatever is already there (up to `timeout`), returns the queued pushes."""
        deadline = now() + timeout
        while self.pump(max(0.0, deadline - now())) and now() < deadline:
            pass
        out = list(self.pushes)
        self.pushes.clear()
        return out

    def status(self, path, timeout=15):
        """The ITEM of one path, or the ERR answer."""
        a = self.request("STATUS", path, timeout=timeout)
        return a.data[0] if a.ok and a.data else a


# --------------------------------------------------------------------------------------
# Daemon: the package's launcher, with the case's temp dirs, logs and /proc readings

class Daemon(testing.Daemon):
    """One syncbadged on a private socket and state dir. `prefix` wraps the command
    (strace). Logs of every run (a restart is a new run) are kept for failure reports."""

    def __init__(self, ctx, state_dir=None, sock_path=None, prefix=None, name="daemon"):
        self.ctx = ctx
        self.name = name
        if sock_path is None:
            sock_path = os.path.join(ctx.mkdir(f"{name}-run", mode=0o700), "d.sock")
        badges = os.path.join(REPO, "Badges")
        super().__init__(ctx.tmp, binary=os.path.join(ctx.bin, "syncbadged"), socket=sock_path,
                         state_dir=state_dir or ctx.mkdir(f"{name}-state"),
                         badges=badges if os.path.isfile(os.path.join(badges, "badges.tsv")) else None,
                         prefix=prefix or ())
        ctx.daemons.append(self)

    @property
    def db(self):
        return os.path.join(self.state_dir, "state.sqlite")

    def spawn(self):
        proc = super().spawn()
        self.ctx.logs.append((f"{self.name} run {len(self.logs)}", self.log))
        return proc

    def start(self, timeout=30):
        try:
            return super().start(timeout)
        except testing.DaemonError as e:
            raise CaseFail(f"{self.name}: {e}")

    def kill9(self):
        os.kill(self.pid, signal.SIGKILL)
        self.wait_exit(10)

    def stop(self, timeout=20):
        """SIGTERM (graceful), SIGKILL after the deadline. Returns the exit code."""
        rc = super().stop(timeout)
        if self.killed:
            self.ctx.note(f"{self.name} ignored SIGTERM for {timeout}s; killed")
        return rc

    def client(self, role="viewer", name=None, timeout=10):
        c = Client(self.socket, timeout, role, name)
        self.ctx.clients.append(c)
        c.hello()
        return c

    def admin(self, *roots):
        """An admin client that added each of `roots`."""
        admin = self.client("admin")
        for root in roots:
            admin.ok("ADD-ROOT", root, timeout=60)
        return admin

    def engine(self, root, name="engine"):
        """A provider client that claimed `root`."""
        engine = self.client("provider", name)
        engine.ok("CLAIM", root)
        return engine

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


def root_line(client, root):
    """The ROOTS line of `root`, or None."""
    return next((l for l in client.ok("ROOTS").data if l.path == root), None)


def wait_root(client, root, pred, timeout, step=1.0):
    """Asks ROOTS until pred(the line of `root`) holds, woken by ROOT pushes for it: (done, the
    last line, None while ROOTS did not list it)."""
    def attempt():
        line = root_line(client, root)
        return line is not None and pred(line), line
    return client.until(attempt, timeout, step, lambda l: l.kind == "ROOT" and l.path == root)


def wait_root_ready(client, root, timeout=60):
    """Waits until ROOTS shows `root` without scanning=1 (after a start or a rescan)."""
    check(root_line(client, root) is not None, f"root {root} missing from ROOTS")
    done, line = wait_root(client, root, lambda l: l.opts.get("scanning") != "1", timeout)
    check(done, f"root {root} still scanning after {timeout}s" if line else f"root {root} gone from ROOTS")
    return line


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
        self.logs = []                     # (label, testing.DaemonLog)
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


percentile = testing.percentile


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
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "pinger.py"), daemon.socket, str(interval)],
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

# -*- coding: utf-8 -*-
"""SyncBadge for ranger: sync badges before file names, menus and actions.

Install: copy or symlink this file into ~/.config/ranger/plugins/ and put
``default_linemode syncbadge`` in ~/.config/ranger/rc.conf (see README.md).

Standard library only. Speaks the SyncBadge line protocol (version 1) to
``syncbadged`` over its Unix socket.

How it fits into ranger (which draws with curses from one thread):

* One daemon connection per ranger, owned by one background thread (the "IO
  thread"). It connects, says ``HELLO proto=1 role=viewer name=ranger``,
  OBSERVEs the current directory, reads answers and pushes, and reconnects
  (at most once a second) when the daemon goes away. Nothing in ranger's own
  thread ever touches the socket, so a dead or hung daemon never blocks ranger.
* The IO thread never touches ranger's objects or curses either. It queues
  events (a listing, an item, a gone entry, a reset) and wakes ranger's main
  loop: ranger sits in ``getch()`` (halfdelay mode) between key presses, and a
  signal sent to the main thread interrupts that wait, so the loop runs an
  iteration at once. At the start of the loop's ``ui.redraw()`` (wrapped by this
  plugin) the main thread applies the queued events to the badge cache, resets
  ``display_data`` of the shown directory's files and sets ``need_redraw`` on the
  columns showing it; the redraw that follows draws the new badges. The wake-up
  is repeated every 25 ms (for at most a second) until the main thread has taken
  the events, which covers a signal that lands just before ``getch()`` starts
  waiting. No signal is sent while ranger has handed the terminal to another
  program. Without a free signal the badges still update at ranger's next idle
  tick (idle_delay).
* Commands (``:sync_menu``, ``:sync_action``, ``:sync_toolbar``) queue a request
  for the IO thread and wait for its answer for at most two seconds.
"""

from __future__ import absolute_import, division, print_function

import collections
import errno
import logging
import os
import re
import select
import signal
import socket
import threading
import time

import ranger.api
from ranger.api.commands import Command
from ranger.core.linemode import LinemodeBase

LOG = logging.getLogger(__name__)

CLIENT_NAME = "ranger"
CALL_TIMEOUT = 2.0          # how long a command waits for the daemon
CONNECT_TIMEOUT = 1.0
HELLO_TIMEOUT = 2.0
RECONNECT_INTERVAL = 1.0    # at most one connection attempt per second
WAKE_GAP = 0.025            # at most one wake-up per 25 ms; repeated while ranger has not taken the events
WAKE_TRIES = 40             # ... for at most a second (then ranger's idle tick takes them)
MAX_LINE = 1 << 20          # drop a connection that sends a longer line
MAX_REQUEST = 65536 - 64    # the daemon's limit is 65,536 bytes a line (with the tag and verb)

# The daemon's default badges, used until BADGES has answered.
DEFAULT_BADGES = {
    "unknown": ("?", "?"), "pending": (u"\u21e1", "+"), "syncing": (u"\u27f3", "~"),
    "synced": (u"\u2713", "="), "error": (u"\u2717", "!"), "conflict": (u"\u21c4", "#"),
    "ignored": (u"\u2298", "-"), "outside": (u"\u2219", "."),
}


def _env_true(name):
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


# ---------------------------------------------------------------------------
# Wire format: percent-encoding of fields (bytes in, bytes out)
# ---------------------------------------------------------------------------

def encode_field(data):
    """Percent-encodes one field: 0x00-0x20, '%', 0x7F and every byte that is not
    part of a valid UTF-8 sequence become %XX; everything else stays as it is."""
    if isinstance(data, str):
        data = os.fsencode(data)
    out = bytearray()
    # surrogateescape turns each byte of an invalid sequence into U+DC80..U+DCFF.
    for ch in data.decode("utf-8", "surrogateescape"):
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:
            out += b"%%%02X" % (code - 0xDC00)
        elif code <= 0x20 or code == 0x25 or code == 0x7F:
            out += b"%%%02X" % code
        else:
            out += ch.encode("utf-8")
    return bytes(out)


_HEX = b"0123456789abcdefABCDEF"


def decode_field(data):
    """Decodes %XX (either case) for any byte; raises ValueError on a bad escape."""
    if b"%" not in data:
        return data
    out = bytearray()
    i, n = 0, len(data)
    while i < n:
        c = data[i]
        if c == 0x25:
            pair = data[i + 1:i + 3]
            if len(pair) != 2 or pair[0] not in _HEX or pair[1] not in _HEX:
                raise ValueError("bad escape")
            out.append(int(pair, 16))
            i += 3
        else:
            out.append(c)
            i += 1
    return bytes(out)


_OPTION_RE = re.compile(rb"^[a-z][a-z0-9-]*=")


class Line(object):
    """One received line: first field (tag or '*'), kind, positional fields, options."""
    __slots__ = ("tag", "kind", "args", "options")

    def __init__(self, raw):
        parts = raw.split(b" ")
        if len(parts) < 2:
            raise ValueError("short line")
        self.tag = parts[0].decode("ascii", "replace")
        self.kind = decode_field(parts[1]).decode("utf-8", "replace")
        self.args = []
        self.options = {}
        for part in parts[2:]:
            if not part.startswith(b"/") and _OPTION_RE.match(part):
                key, _, value = part.partition(b"=")
                self.options[key.decode("ascii")] = decode_field(value)
            else:
                self.args.append(decode_field(part))

    def opt(self, key, default=None):
        value = self.options.get(key)
        return default if value is None else value.decode("utf-8", "replace")

    def arg(self, i, default=""):
        return self.args[i].decode("utf-8", "replace") if i < len(self.args) else default


def _word(text):
    return encode_field(text.encode("utf-8"))


def _option(key, value):
    return key.encode("ascii") + b"=" + encode_field(value if isinstance(value, bytes) else value.encode("utf-8"))


Item = collections.namedtuple("Item", "state badge kind progress message")


def _item(line):
    """(path bytes, Item) of an ITEM line, or None."""
    if len(line.args) < 2 or not line.args[0].startswith(b"/"):
        return None
    return line.args[0], Item(line.arg(1), line.opt("badge", line.arg(1)), line.opt("kind", ""),
                              line.opt("progress"), line.opt("message"))


def _split(path):
    """(parent, name) of an absolute path in bytes."""
    head, _, name = path.rpartition(b"/")
    return (head or b"/"), name


def socket_path():
    """Where the daemon listens (PROTOCOL.md, Transport)."""
    path = os.environ.get("SYNCBADGE_SOCKET")
    if path:
        return path
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "syncbadge", "daemon.sock")
    return "/tmp/syncbadge-%d/daemon.sock" % os.getuid()


def real_dir(path):
    """The daemon's name for a directory ranger shows: absolute, normalised, no symlinks."""
    return os.fsencode(os.path.realpath(path))


def real_entry(path):
    """The daemon's name for an entry: its directory resolved, the entry itself not
    (the daemon never follows a link)."""
    head, name = os.path.split(os.path.normpath(path))
    real = os.path.realpath(head)
    return os.fsencode(real.rstrip("/") + "/" + name) if name else os.fsencode(real)


class NotConnected(Exception):
    pass


class DaemonError(Exception):
    def __init__(self, code, message):
        Exception.__init__(self, "%s%s" % (code, ": " + message if message else ""))
        self.code = code
        self.message = message


# ---------------------------------------------------------------------------
# The connection, run by the IO thread
# ---------------------------------------------------------------------------

class Client(object):
    """The daemon connection. Only the IO thread uses the socket; other threads talk
    to it through `call`, `watch` and the event queue."""

    def __init__(self, wake_main):
        self._wake_main = wake_main          # called by the IO thread after queuing events
        self._lock = threading.Lock()
        self._outq = collections.deque()     # (verb, fields, callback) from other threads
        self._want = (None, 0)               # (directory to observe (daemon bytes), request number)
        self.events = collections.deque()    # for the main thread
        self.posted = 0                      # events posted / taken, to know when to re-wake
        self.taken = 0
        self.ready = False                   # HELLO answered
        self.epoch = None
        self.server = None
        self.last_error = "not connected yet"
        self._wake_r, self._wake_w = os.pipe()
        for fd in (self._wake_r, self._wake_w):
            os.set_blocking(fd, False)
        self._sock = None
        self._inbuf = b""
        self._outbuf = b""
        self._pending = collections.OrderedDict()  # tag -> [callback, data lines]
        self._tag = 0
        self._next_attempt = 0.0
        self._hello_deadline = None
        self._observing = None               # what we sent OBSERVE for and still hold
        self._attempted = None               # the last _want acted on
        self._outside = False                # the last OBSERVE got ERR outside
        self._wakes_left = 0
        self._last_wake = 0.0
        self._known_badges = set(DEFAULT_BADGES)
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="syncbadge-io")
        self._thread.daemon = True

    # -- used from ranger's thread ---------------------------------------

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop = True
        self._poke()

    def watch(self, directory):
        """Observe `directory` (bytes, or None for nothing) instead of the current one; a
        "listing" event answers every call (None: outside every root)."""
        with self._lock:
            self._want = (directory, self._want[1] + 1)
        self._poke()

    def call(self, verb, fields=(), timeout=CALL_TIMEOUT):
        """Sends a request and waits for its answer: (data lines, final line).
        Raises NotConnected, DaemonError (for ERR) or socket.timeout."""
        if not self.ready:
            raise NotConnected(self.last_error)
        fields = list(fields)
        if sum(len(f) + 1 for f in fields) > MAX_REQUEST:
            # The daemon would say `* BYE too-long` and close the connection.
            raise DaemonError("too-long", "the selection is too large for one request")
        done = threading.Event()
        box = []

        def answered(data, final):
            box.append((data, final))
            done.set()

        with self._lock:
            self._outq.append((verb, fields, answered))
        self._poke()
        if not done.wait(timeout):
            raise socket.timeout("the daemon did not answer within %gs" % timeout)
        data, final = box[0]
        if final is None:
            raise NotConnected(self.last_error)
        if final.kind != "OK":
            raise DaemonError(final.arg(0, "internal"), final.opt("message", ""))
        return data, final

    def take_events(self):
        """All queued events (main thread)."""
        events = []
        while True:
            try:
                events.append(self.events.popleft())
            except IndexError:
                break
        self.taken += len(events)
        return events

    # -- IO thread -------------------------------------------------------

    def _poke(self):
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

    def _post(self, *event):
        """Queues an event for ranger's thread; the wake-up follows in _maybe_wake."""
        self.events.append(event)
        self.posted += 1
        self._wakes_left = WAKE_TRIES

    def _maybe_wake(self):
        """Wakes ranger's loop while it has events to take: one signal per batch of lines
        read, repeated every WAKE_GAP in case one arrived just before getch() waited."""
        if self.posted == self.taken or self._wakes_left <= 0:
            return None
        now = time.monotonic()
        due = self._last_wake + WAKE_GAP
        if now < due:
            return due - now
        self._last_wake = now
        self._wakes_left -= 1
        self._wake_main()
        return WAKE_GAP

    def _run(self):
        while not self._stop:
            try:
                self._step()
            except Exception as ex:  # never let the thread die
                LOG.exception(ex)
                self._disconnect("internal error: %s" % ex)
                time.sleep(RECONNECT_INTERVAL)

    def _step(self):
        now = time.monotonic()
        if self._sock is None:
            if now < self._next_attempt:
                self._wait([], self._next_attempt - now)
                return
            self._next_attempt = now + RECONNECT_INTERVAL
            self._connect()
            return
        self._flush_outq()
        if self._hello_deadline is not None and now > self._hello_deadline:
            self._disconnect("the daemon did not answer HELLO")
            return
        timeout = None
        if self._hello_deadline is not None:
            timeout = max(0.0, self._hello_deadline - now)
        readable, writable = self._wait([self._sock], timeout, write=bool(self._outbuf))
        if writable:
            try:
                sent = self._sock.send(self._outbuf)
                self._outbuf = self._outbuf[sent:]
            except (BlockingIOError, InterruptedError):
                pass
            except OSError as ex:
                self._disconnect("send: %s" % ex)
                return
        if readable:
            try:
                chunk = self._sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as ex:
                self._disconnect("receive: %s" % ex)
                return
            if not chunk:
                self._disconnect("the daemon closed the connection")
                return
            self._inbuf += chunk
            self._read_lines()

    def _wait(self, fds, timeout, write=False):
        """select() on fds plus the wake pipe, waking ranger first if it has events to take."""
        again = self._maybe_wake()
        if again is not None:
            timeout = again if timeout is None else min(timeout, again)
        try:
            r, w, _ = select.select([self._wake_r] + fds, fds if write else [], [], timeout)
        except InterruptedError:
            r, w = [], []
        if self._wake_r in r:
            try:
                while os.read(self._wake_r, 4096):
                    pass
            except OSError:
                pass
        return bool(fds) and fds[0] in r, bool(fds) and fds[0] in w

    def _connect(self):
        path = socket_path()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(CONNECT_TIMEOUT)
            sock.connect(path)
            sock.setblocking(False)
        except OSError as ex:
            sock.close()
            self.last_error = "cannot connect to %s: %s" % (path, ex.strerror or ex)
            return
        self._sock = sock
        self._inbuf = self._outbuf = b""
        self._hello_deadline = time.monotonic() + HELLO_TIMEOUT
        self._send("HELLO", [_option("proto", "1"), _option("role", "viewer"), _option("name", CLIENT_NAME)],
                   self._hello_answered)

    def _hello_answered(self, data, final):
        self._hello_deadline = None
        if final is None:
            return
        if final.kind != "OK":
            self._disconnect("HELLO refused: %s %s" % (final.arg(0), final.opt("message", "")))
            return
        epoch = final.opt("epoch")
        if epoch != self.epoch:
            LOG.info("syncbadge: daemon %s, epoch %s", final.opt("server"), epoch)
        self.epoch = epoch
        self.server = final.opt("server")
        self.ready = True
        self.last_error = None
        # A new connection observes nothing; a new epoch means every cached badge is stale.
        self._observing = self._attempted = None
        self._post("connected", epoch)
        self._fetch_badges()
        self._sync_observation()

    def _disconnect(self, why):
        if self._sock is not None:
            LOG.info("syncbadge: disconnected: %s", why)
            try:
                self._sock.close()
            except OSError:
                pass
            was_ready = self.ready
            self._sock = None
            self.ready = False
            self.last_error = why
            self._hello_deadline = None
            self._observing = self._attempted = None
            pending, self._pending = self._pending, collections.OrderedDict()
            for callback, _ in pending.values():
                try:
                    callback(None, None)
                except Exception as ex:
                    LOG.exception(ex)
            if was_ready:
                self._post("disconnected")
        self._inbuf = self._outbuf = b""
        with self._lock:
            queued, self._outq = self._outq, collections.deque()
        for _, _, callback in queued:
            callback(None, None)

    def _send(self, verb, fields, callback):
        self._tag += 1
        tag = "r%d" % self._tag
        self._pending[tag] = [callback, []]
        self._outbuf += b" ".join([tag.encode("ascii"), verb.encode("ascii")] + list(fields)) + b"\n"

    def _flush_outq(self):
        if not self.ready:
            return
        while True:
            with self._lock:
                if not self._outq:
                    break
                verb, fields, callback = self._outq.popleft()
            self._send(verb, fields, callback)
        self._sync_observation()

    def _sync_observation(self):
        """Moves the connection's observation to the wanted directory."""
        if not self.ready:
            return
        with self._lock:
            wanted = self._want
        if wanted == self._attempted:
            return
        self._attempted = wanted
        want = wanted[0]
        if want is not None and want == self._observing:
            # Already observed (ranger left it and came back, or reached it by another
            # name): the pushes keep coming; a LIST refreshes ranger's cache.
            def listed(data, final, directory=want):
                if final is not None:
                    ok = final.kind == "OK"
                    self._post("listing", directory, self._items(data) if ok else None)
            self._send("LIST", [encode_field(want)], listed)
            return
        if self._observing is not None:
            self._send("UNOBSERVE", [encode_field(self._observing)], lambda data, final: None)
            self._observing = None
        if want is None:
            return
        self._observing = want
        self._outside = False

        def answered(data, final, directory=want):
            if final is None:
                return
            if final.kind == "OK":
                self._post("listing", directory, self._items(data))
                return
            if self._observing == directory:
                self._observing = None
                self._outside = final.arg(0) == "outside"
            # outside (no root), not-found, not-a-directory...: no badges there.
            self._post("listing", directory, None)

        self._send("OBSERVE", [encode_field(want)], answered)

    @staticmethod
    def _items(data):
        items = {}
        for line in data:
            if line.kind == "ITEM":
                parsed = _item(line)
                if parsed:
                    items[_split(parsed[0])[1]] = parsed[1]
        return items

    def _fetch_badges(self):
        def answered(data, final):
            if final is None or final.kind != "OK":
                return
            badges = {}
            for line in data:
                if line.kind == "BADGE" and line.args:
                    badges[line.arg(0)] = (line.opt("glyph", "?"), line.opt("ascii", "?"))
            self._known_badges.update(badges)
            self._post("badges", badges)

        self._send("BADGES", [], answered)

    def _read_lines(self):
        while True:
            end = self._inbuf.find(b"\n")
            if end < 0:
                if len(self._inbuf) > MAX_LINE:
                    self._disconnect("line too long")
                return
            raw, self._inbuf = self._inbuf[:end], self._inbuf[end + 1:]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            if not raw:
                continue
            try:
                line = Line(raw)
            except ValueError as ex:
                LOG.warning("syncbadge: unreadable line %r: %s", raw[:200], ex)
                continue
            if line.tag == "*":
                self._push(line)
            else:
                self._answer(line)
            if self._sock is None:
                return

    def _answer(self, line):
        entry = self._pending.get(line.tag)
        if entry is None:
            return
        if line.kind in ("OK", "ERR"):
            del self._pending[line.tag]
            try:
                entry[0](entry[1], line)
            except Exception as ex:
                LOG.exception(ex)
        else:
            entry[1].append(line)

    def _push(self, line):
        kind = line.kind
        if kind == "ITEM":
            parsed = _item(line)
            if parsed:
                if parsed[1].badge not in self._known_badges:
                    self._known_badges.add(parsed[1].badge)
                    self._fetch_badges()  # a provider defined a new badge
                self._post("item", parsed[0], parsed[1])
        elif kind == "GONE" and line.args:
            path = line.args[0]
            if path == self._observing:
                self._observing = None  # the observation ended with the directory
            self._post("gone", path)
        elif kind == "RESET" and line.args:
            directory = line.args[0]
            if directory == self._observing:
                def answered(data, final, directory=directory):
                    if final is not None and final.kind == "OK":
                        self._post("listing", directory, self._items(data))
                self._send("LIST", [encode_field(directory)], answered)
        elif kind == "ROOT" and line.args:
            root = line.args[0]
            with self._lock:
                want = self._want[0]
            inside = want is not None and (want == root or want.startswith(root.rstrip(b"/") + b"/"))
            if not inside:
                return
            if line.arg(1) == "removed":
                # The root's tree is gone, and the observation with it: no badges here now.
                self._observing = None
                self._attempted = None
                self._sync_observation()
            elif self._outside and self._observing is None and "scanning" not in line.options:
                # A root now holds the directory that was outside: observe it.
                self._attempted = None
                self._sync_observation()
        elif kind == "BYE":
            LOG.info("syncbadge: daemon says goodbye: %s", line.arg(0))


# ---------------------------------------------------------------------------
# ranger's side: the cache the linemode reads (main thread only)
# ---------------------------------------------------------------------------

class State(object):
    def __init__(self):
        self.fm = None
        self.client = None
        self.dir = None            # ranger's path of the observed directory
        self.real = None           # the daemon's path of it (bytes)
        self.inside = False        # under a root (OBSERVE answered OK)
        self.entries = {}          # name (ranger's str) -> Item
        self.badges = dict(DEFAULT_BADGES)
        self.ascii = _env_true("SYNCBADGE_ASCII")
        self.wake_signal = None
        self.main_ident = None

    # -- following ranger's current directory ------------------------------

    def follow(self, directory=None):
        fm = self.fm
        if directory is None:
            directory = getattr(fm, "thisdir", None)
        path = getattr(directory, "path", None)
        if path is None or path == self.dir:
            return
        self.dir = path
        try:
            real = real_dir(path)
        except (OSError, ValueError):
            real = None
        if real != self.real or real is None:
            self.real = real
            self.inside = False
            self.entries = {}
            self.client.watch(real)
        self.invalidate()

    def on_cd(self, signal_):
        self.follow(signal_.new)

    def on_tab_change(self, signal_):
        self.follow(getattr(signal_.new, "thisdir", None))

    # -- applying what the IO thread queued -------------------------------

    def apply_events(self):
        changed = False
        for event in self.client.take_events():
            kind = event[0]
            if kind == "listing":
                _, directory, items = event
                if directory == self.real:
                    self.inside = items is not None
                    self.entries = dict((os.fsdecode(name), item) for name, item in (items or {}).items())
                    changed = True
            elif kind == "item":
                _, path, item = event
                parent, name = _split(path)
                if parent == self.real and self.inside:
                    self.entries[os.fsdecode(name)] = item
                    changed = True
            elif kind == "gone":
                path = event[1]
                parent, name = _split(path)
                if path == self.real:
                    self.inside = False
                    self.entries = {}
                    changed = True
                elif parent == self.real:
                    changed = self.entries.pop(os.fsdecode(name), None) is not None or changed
            elif kind == "badges":
                self.badges = dict(DEFAULT_BADGES)
                self.badges.update(event[1])
                changed = True
            elif kind in ("connected", "disconnected"):
                # New connection (maybe a new epoch) or none: the cache is stale either way;
                # the OBSERVE the IO thread sends on connecting fills it again.
                self.inside = False
                self.entries = {}
                changed = True
        if changed:
            self.invalidate()

    def invalidate(self):
        """Makes ranger recompute the lines of the observed directory's files."""
        fm = self.fm
        if fm is None:
            return
        for directory in (getattr(fm, "thisdir", None),):
            if directory is not None and directory.path == self.dir:
                for fobj in directory.files_all or ():
                    fobj.display_data = {}
        ui = getattr(fm, "ui", None)
        browser = getattr(ui, "browser", None)
        for column in getattr(browser, "columns", None) or ():
            column.need_redraw = True
        if browser is not None and getattr(browser, "main_column", None) is not None:
            browser.main_column.need_redraw = True

    # -- what the linemode shows -----------------------------------------

    def lookup(self, fobj):
        if not self.inside or os.path.dirname(fobj.path) != self.dir:
            return None
        return self.entries.get(fobj.basename)

    def glyph(self, item, ascii_only):
        pair = self.badges.get(item.badge) or self.badges.get(item.state) or ("?", "?")
        return pair[1] if ascii_only else pair[0]

    # -- paths for requests -------------------------------------------------

    def target(self):
        thisdir = self.fm.thisdir
        if thisdir.path == self.dir and self.real is not None:
            return self.real
        return real_dir(thisdir.path)

    def selection(self):
        return [real_entry(f.path) for f in self.fm.thisdir.get_selection()]


STATE = State()


# ---------------------------------------------------------------------------
# Waking ranger's main loop from the IO thread
# ---------------------------------------------------------------------------

def _pick_wake_signal():
    """A real-time signal nobody handles yet (its handler is SIG_DFL)."""
    if not hasattr(signal, "SIGRTMIN") or not hasattr(signal, "pthread_kill"):
        return None
    for offset in (9, 10, 11, 12, 13, 14):
        signum = signal.SIGRTMIN + offset
        if signum > signal.SIGRTMAX:
            break
        try:
            if signal.getsignal(signum) == signal.SIG_DFL:
                return signum
        except (ValueError, OSError):
            continue
    return None


def _on_wake_signal(signum, frame):
    # Nothing to do here: the signal only interrupts getch(); the loop then calls
    # ui.redraw(), which applies the events (see _redraw below).
    pass


def _wake_main():
    """Called by the IO thread: make ranger's loop go round now."""
    fm = STATE.fm
    ui = getattr(fm, "ui", None)
    if STATE.wake_signal is None or STATE.main_ident is None or not getattr(ui, "is_on", False):
        return
    try:
        signal.pthread_kill(STATE.main_ident, STATE.wake_signal)
    except (OSError, ValueError):
        pass


def _install(fm):
    STATE.fm = fm
    STATE.main_ident = threading.main_thread().ident
    STATE.client = Client(_wake_main)
    if threading.current_thread() is threading.main_thread():
        signum = _pick_wake_signal()
        if signum is not None:
            try:
                # Python installs handlers without SA_RESTART: the signal interrupts getch().
                signal.signal(signum, _on_wake_signal)
                # ranger may have been started with signals blocked (the mask is inherited).
                signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
                STATE.wake_signal = signum
            except (OSError, ValueError, RuntimeError) as ex:
                LOG.warning("syncbadge: no wake-up signal: %s", ex)

    ui = fm.ui
    original_redraw = ui.redraw

    def _redraw():
        # Apply the IO thread's events in ranger's own thread, before anything is drawn.
        if threading.current_thread() is threading.main_thread():
            try:
                STATE.apply_events()
            except Exception as ex:  # never break ranger's drawing
                LOG.exception(ex)
        return original_redraw()

    ui.redraw = _redraw
    fm.signal_bind("cd", STATE.on_cd)
    fm.signal_bind("tab.change", STATE.on_tab_change)
    STATE.client.start()


_OLD_HOOK_INIT = ranger.api.hook_init
_OLD_HOOK_READY = ranger.api.hook_ready


def hook_init(fm):
    _install(fm)
    return _OLD_HOOK_INIT(fm)


def hook_ready(fm):
    STATE.follow()
    return _OLD_HOOK_READY(fm)


ranger.api.hook_init = hook_init
ranger.api.hook_ready = hook_ready


# ---------------------------------------------------------------------------
# Linemodes
# ---------------------------------------------------------------------------

class _SyncBadgeLinemode(LinemodeBase):
    ascii_only = False

    def filetitle(self, fobj, metadata):
        item = STATE.lookup(fobj)
        if item is None:
            # Under a root but not known yet: keep the names aligned.
            return ("  " if STATE.inside and os.path.dirname(fobj.path) == STATE.dir else "") + fobj.relative_path
        return STATE.glyph(item, self.ascii_only or STATE.ascii) + " " + fobj.relative_path

    def infostring(self, fobj, metadata):
        item = STATE.lookup(fobj)
        if item is None:
            raise NotImplementedError  # ranger's usual size column
        text = item.state
        if item.progress is not None and item.state == "syncing":
            text += " %s%%" % item.progress
        return text


@ranger.api.register_linemode
class SyncBadgeLinemode(_SyncBadgeLinemode):
    name = "syncbadge"


@ranger.api.register_linemode
class SyncBadgeAsciiLinemode(_SyncBadgeLinemode):
    name = "syncbadge_ascii"
    ascii_only = True


# ---------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------

def _describe(error):
    if isinstance(error, NotConnected):
        return "not connected to syncbadged (%s)" % (error.args[0] if error.args else socket_path())
    if isinstance(error, DaemonError):
        if error.code == "outside":
            return "not in a synced folder"
        if error.code == "no-provider":
            return "no sync engine handles this folder"
        return error.code + (": " + error.message if error.message else "")
    return str(error)


class _SyncCommand(object):
    """Helpers of the commands below (not a Command itself, so ranger does not list it)."""

    def _fail(self, what, error):
        self.fm.notify("syncbadge: %s: %s" % (what, _describe(error)), bad=True)

    def _show(self, title, lines):
        """One status-bar line when it fits, else the pager."""
        text = title + ": " + " | ".join(lines) if lines else title + ": (none)"
        width = getattr(self.fm.ui, "termsize", None)
        width = width[1] if width else 80
        if len(text) < width - 2 or not lines:
            self.fm.notify(text, duration=10)
        else:
            pager = self.fm.ui.open_pager()
            pager.set_source([title + ":", ""] + lines)

    def _menu(self, kind, with_selection):
        fields = [_word(kind), _option("target", STATE.target())]
        if with_selection:
            fields += [encode_field(p) for p in STATE.selection()]
        data, _ = STATE.client.call("MENU", fields)
        return [line for line in data if line.kind == "MENUITEM"]

    @staticmethod
    def _format(item):
        text = "%s  %s" % (item.arg(0), item.opt("title", ""))
        if item.opt("enabled") == "0":
            text += " (disabled)"
        return text

    def _action(self, action_id, with_selection):
        fields = [_word(action_id), _option("target", STATE.target())]
        if with_selection:
            fields += [encode_field(p) for p in STATE.selection()]
        try:
            _, final = STATE.client.call("ACTION", fields)
        except Exception as ex:  # pylint: disable=broad-except
            self._fail(action_id, ex)
            return
        message = final.opt("message")
        if message:
            self.fm.notify("syncbadge: %s: %s" % (action_id, message), duration=10)
        else:
            self.fm.notify("syncbadge: %s: done" % action_id)

    def _complete(self, kind, with_selection):
        try:
            items = self._menu(kind, with_selection)
        except Exception:  # pylint: disable=broad-except
            return None
        prefix = self.rest(1)
        return sorted("%s %s" % (self.get_name(), item.arg(0)) for item in items
                      if item.arg(0).startswith(prefix))


class sync_menu(_SyncCommand, Command):
    """:sync_menu

    Lists the sync menu for the selection (the marked files, else the one under
    the cursor): one `<action-id>  <title>` per item. Run one with :sync_action.
    """

    def execute(self):
        try:
            items = self._menu("items", True)
        except Exception as ex:  # pylint: disable=broad-except
            self._fail("menu", ex)
            return
        self._show("sync menu", [self._format(i) for i in items])


class sync_action(_SyncCommand, Command):
    """:sync_action <action-id>

    Triggers a menu item (see :sync_menu) on the selection, with the current
    directory as target. syncbadge.details shows the details it returns.
    """

    def execute(self):
        action_id = self.arg(1)
        if not action_id:
            self.fm.notify("usage: sync_action <action-id> (see :sync_menu)", bad=True)
            return
        self._action(action_id, True)

    def tab(self, tabnum):
        return self._complete("items", True)


class sync_toolbar(_SyncCommand, Command):
    """:sync_toolbar [<action-id>]

    Without an argument: the sync engines' toolbar items (TOOLBAR) and the items of
    the toolbar menu for the current directory (MENU toolbar). With one: triggers
    that toolbar item on the current directory (ACTION <id> target=<dir>).
    """

    def execute(self):
        action_id = self.arg(1)
        if action_id:
            self._action(action_id, False)
            return
        try:
            data, _ = STATE.client.call("TOOLBAR")
            lines = ["[%s] %s: %s" % (t.opt("provider", "?"), t.opt("name", ""), t.opt("tooltip", ""))
                     for t in data if t.kind == "TOOLBAR"]
        except Exception as ex:  # pylint: disable=broad-except
            self._fail("toolbar", ex)
            return
        try:
            lines += [self._format(i) for i in self._menu("toolbar", False)]
        except DaemonError as ex:
            if ex.code != "outside":
                self._fail("toolbar", ex)
                return
        except Exception as ex:  # pylint: disable=broad-except
            self._fail("toolbar", ex)
            return
        self._show("sync toolbar", lines)

    def tab(self, tabnum):
        return self._complete("toolbar", False)

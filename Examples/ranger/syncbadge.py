# -*- coding: utf-8 -*-
"""SyncBadge for ranger: sync badges before file names, menus and actions.

Install: symlink this file into ~/.config/ranger/plugins/ (a copy needs the
syncbadge package installed) and put ``default_linemode syncbadge`` in
~/.config/ranger/rc.conf (see README.md).

Standard library only. Speaks the SyncBadge line protocol (version 1) to
``syncbadged`` over its Unix socket through the syncbadge Python package
(Clients/python): the copy that came with it, found from this file's real
location as ``make install`` and the repository lay them out, else an installed one.

How it fits into ranger (which draws with curses from one thread):

* One daemon connection per ranger, owned by one background thread (the "IO
  thread"). It connects, says ``HELLO proto=1 role=viewer name=ranger``,
  OBSERVEs the current directory (the package's DirectoryFollower, following one
  directory), reads answers and pushes, and reconnects (at most once a second)
  when the daemon goes away. Nothing in ranger's own
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
* Where the daemon passes engines' answers on (``action-reply``), an engine's action
  is asked with ``reply=1`` from a thread of its own, on a connection of its own (the
  daemon holds that connection's later requests until the engine answered, up to 10
  seconds); the answer, or the failure, comes to ranger's message line as an event.
* The engines' toolbar items are kept from ``TOOLBAR`` at connect and the ``* TOOLBAR``
  pushes (``toolbar-push``; else ``TOOLBAR`` again after each ``* ROOT``), so
  ``:sync_toolbar`` lists them without asking.
"""

from __future__ import absolute_import, division, print_function

import collections
import logging
import os
import select
import signal
import socket
import sys
import threading
import time

import ranger.api
from ranger.api.commands import Command
from ranger.core.linemode import LinemodeBase

LOG = logging.getLogger(__name__)

CLIENT_NAME = "ranger"
CALL_TIMEOUT = 2.0          # how long a command waits for the daemon
ANSWER_WAIT = 15.0          # how long an engine's action waits for its answer (the daemon's deadline is 10 s)
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
# The protocol: the syncbadge Python package
# ---------------------------------------------------------------------------

# The syncbadge package that came with this file comes first: ../python as `make install` lays it
# out, or the repository's Clients/python, from this file's real location (ranger's plugin
# directory usually holds a link to it); else an installed one (python3-syncbadge). ranger imports
# this file as `plugins.syncbadge`, so `import syncbadge` never finds the plugin itself.
_HERE = os.path.dirname(os.path.realpath(__file__))
sys.path[:0] = [os.path.normpath(os.path.join(_HERE, rel)) for rel in ("../python", "../../Clients/python")]
import syncbadge as sb  # noqa: E402
from syncbadge.follow import split_path as _split  # noqa: E402


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
    """The daemon connection (a syncbadge.Connection, driven without ever blocking). Only the
    IO thread uses it; other threads talk to it through `call`, `watch` and the event queue."""

    def __init__(self, wake_main):
        self._wake_main = wake_main          # called by the IO thread after queuing events
        self._lock = threading.Lock()
        self._outq = collections.deque()     # (verb, fields, options, callback) from other threads
        self._want = (None, 0)               # (directory to observe (daemon bytes), request number)
        self.events = collections.deque()    # for the main thread
        self.posted = 0                      # events posted / taken, to know when to re-wake
        self.taken = 0
        self.ready = False                   # HELLO answered
        self.epoch = None
        self.server = None
        self.caps = frozenset()
        self.path = None                     # the socket connected to
        self.toolbars = None                 # [(name, tooltip, provider)] once TOOLBAR answered, kept by pushes
        self.last_error = "not connected yet"
        self._wake_r, self._wake_w = os.pipe()
        for fd in (self._wake_r, self._wake_w):
            os.set_blocking(fd, False)
        self._conn = sb.Connection(role="viewer", name=CLIENT_NAME, on_push=self._push,
                                   on_hello=self._hello_answered, on_close=self._closed, max_line=MAX_LINE)
        self._next_attempt = 0.0
        self._hello_deadline = None
        # The directory ranger shows (one at a time), the badges and the toolbar items, from the
        # daemon's answers and pushes; the IO thread turns its changes into events.
        self._follower = sb.DirectoryFollower(max_dirs=1, badges=True, toolbars=True)
        self._attempted = None               # the last _want acted on
        self._wakes_left = 0
        self._last_wake = 0.0
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

    def call(self, request, timeout=CALL_TIMEOUT):
        """Sends a request (a syncbadge.req.Req) and waits for its answer: (data lines, final
        line), syncbadge Messages. Raises NotConnected, DaemonError (for ERR) or socket.timeout."""
        if not self.ready:
            raise NotConnected(self.last_error)
        try:
            size = len(request.line("r0"))
        except ValueError as ex:
            raise DaemonError("bad-request", str(ex))
        if size > MAX_REQUEST:
            # The daemon would say `* BYE too-long` and close the connection.
            raise DaemonError("too-long", "the selection is too large for one request")
        done = threading.Event()
        box = []

        def answered(reply):
            box.append(reply)
            done.set()

        with self._lock:
            self._outq.append((request, answered))
        self._poke()
        if not done.wait(timeout):
            raise socket.timeout("the daemon did not answer within %gs" % timeout)
        reply = box[0]
        if reply is None or reply.final is None:
            raise NotConnected(self.last_error)
        if not reply.ok:
            raise DaemonError(reply.code, reply.final.opt("message", ""))
        return reply.data, reply.final

    def take_events(self):
        """All queued events (main thread)."""
        events = []
        while True:
            try:
                events.append(self.events.popleft())
            except IndexError:
                break
        with self._lock:
            self.taken += len(events)
        return events

    # -- IO thread -------------------------------------------------------

    def _poke(self):
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

    def _post(self, *event):
        """Queues an event for ranger's thread; the wake-up follows in _maybe_wake (run by the
        IO thread: another thread pokes it)."""
        with self._lock:
            self.events.append(event)
            self.posted += 1
            self._wakes_left = WAKE_TRIES

    def ask_engine(self, action_id, fields, options):
        """An engine's action with reply=1, answered on ranger's message line: from a thread
        of its own, on a connection of its own, so that nothing else waits for the engine.
        The outcome comes as an event ("message", text, bad)."""
        def run():
            conn = sb.Connection(path=self.path, role="viewer", name=CLIENT_NAME, hello_options={"roots": 0},
                                 max_line=MAX_LINE)
            try:
                conn.open(CONNECT_TIMEOUT)
                text = sb.Viewer(conn).action(action_id, *fields, timeout=ANSWER_WAIT, **options)
                event = ("message", "syncbadge: %s: %s" % (action_id, text or "done"), False)
            except (sb.ActionFailed, sb.ActionTimeout, sb.NoProvider) as ex:
                event = ("message", "syncbadge: %s: %s" % (action_id, ex), True)
            except sb.ServerError as ex:
                event = ("message", "syncbadge: %s: %s" % (action_id, _describe(DaemonError(ex.code, ex.message))), True)
            except (OSError, sb.Disconnected) as ex:      # TimeoutError included
                event = ("message", "syncbadge: %s: %s" % (action_id, ex), True)
            finally:
                conn.close()
            self._post(*event)
            self._poke()

        thread = threading.Thread(target=run, name="syncbadge-action")
        thread.daemon = True
        thread.start()

    def _maybe_wake(self):
        """Wakes ranger's loop while it has events to take: one signal per batch of lines
        read, repeated every WAKE_GAP in case one arrived just before getch() waited."""
        with self._lock:
            if self.posted == self.taken or self._wakes_left <= 0:
                return None
        now = time.monotonic()
        due = self._last_wake + WAKE_GAP
        if now < due:
            return due - now
        self._last_wake = now
        with self._lock:
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
        conn = self._conn
        if not conn.connected:
            if now < self._next_attempt:
                self._wait([], self._next_attempt - now)
                return
            self._next_attempt = now + RECONNECT_INTERVAL
            self._connect()
            return
        self._flush_outq()
        self._drain()
        if self._hello_deadline is not None and now > self._hello_deadline:
            self._disconnect("the daemon did not answer HELLO")
            return
        timeout = None
        if self._hello_deadline is not None:
            timeout = max(0.0, self._hello_deadline - now)
        readable, writable = self._wait([conn.fileno()], timeout, write=conn.wants_write())
        if writable:
            conn.flush()
        if readable:
            conn.read_available()   # answers reach their callbacks, pushes _push
        self._drain()

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
        try:
            self._conn.connect(timeout=CONNECT_TIMEOUT)     # sends HELLO; _hello_answered follows
        except OSError as ex:
            self.last_error = "cannot connect to %s: %s" % (self._conn.path, ex.strerror or ex)
            return
        self._hello_deadline = time.monotonic() + HELLO_TIMEOUT

    def _hello_answered(self, conn):
        self._hello_deadline = None
        if conn.new_epoch:
            LOG.info("syncbadge: daemon %s, epoch %s", conn.server, conn.epoch)
        self.epoch = conn.epoch
        self.server = conn.server
        self.caps = conn.caps
        self.path = conn.path
        self.toolbars = None
        self.ready = True
        self.last_error = None
        # A new connection observes nothing; a new epoch means every cached badge is stale.
        self._attempted = None
        self._post("connected", self.epoch)
        self._follow_up(self._follower.connected(conn.caps))
        self._sync_observation()

    def _disconnect(self, why):
        if self._conn.connected:
            self._conn.close(why)           # _closed follows
        else:
            self._fail_queued()

    def _closed(self, conn, why):
        """The connection closed (the daemon went away, HELLO refused, _disconnect): every
        request waiting for it has already been told (its callback got no final line)."""
        LOG.info("syncbadge: disconnected: %s", why)
        was_ready = self.ready
        self.ready = False
        self.toolbars = None
        self.last_error = why
        self._hello_deadline = None
        self._attempted = None
        self._follower.disconnected()
        if was_ready:
            self._post("disconnected")
        self._fail_queued()

    def _fail_queued(self):
        with self._lock:
            queued, self._outq = self._outq, collections.deque()
        for _, callback in queued:
            callback(None)

    def _send(self, request, callback=None):
        """Sends a request; callback(reply) once answered (reply.final None: no answer, the
        connection closed first; reply None: not sent)."""
        try:
            self._conn.send(request, on_answer=callback)
        except (sb.Disconnected, ValueError) as ex:
            LOG.warning("syncbadge: %s not sent: %s", request.verb, ex)
            if callback is not None:
                callback(None)

    def _follow_up(self, requests):
        """Sends the follower's requests; their answers go back to it."""
        for request in requests:
            self._send(request, lambda reply, r=request: reply is not None and
                       self._follow_up(self._follower.answered(r, reply)))

    def _flush_outq(self):
        if not self.ready:
            return
        while True:
            with self._lock:
                if not self._outq:
                    break
                request, callback = self._outq.popleft()
            self._send(request, callback)
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
        if want is None:
            for directory in list(self._follower.dirs):
                self._follow_up(self._follower.unfollow(directory))
            return
        known = self._follower.directory(want)
        if known is not None and known.status in (sb.follow.OBSERVED, sb.follow.REFUSED):
            # Already followed (ranger left it and came back, or reached it by another name):
            # the pushes kept it current; ranger's cache takes it again.
            self._post("listing", want, dict(known.items) if known.listed else None)
            return
        self._follow_up(self._follower.follow(want))

    def _drain(self):
        """Turns what the follower saw change into events for ranger's thread."""
        follower = self._follower
        changes = follower.take_changes()
        if not changes:
            return
        with self._lock:
            want = self._want[0]
        if want in changes.forgotten and follower.directory(want) is None:
            self._post("gone", want)            # its observation ended with it
        for path, names in changes.dirs.items():
            directory = follower.directory(path)
            if directory is None:
                continue
            if names is sb.ALL:
                if directory.status in (sb.follow.OBSERVED, sb.follow.REFUSED):
                    # outside (no root), not-found, not-a-directory...: no badges there.
                    self._post("listing", path, dict(directory.items) if directory.listed else None)
                continue
            for name in names:
                if not name:
                    continue                    # the directory's own item: ranger shows its entries
                item = (directory.items or {}).get(name)
                child = path.rstrip(b"/") + b"/" + name
                if item is not None:
                    self._post("item", child, item)
                else:
                    self._post("gone", child)
        if changes.badges or changes.badge_pushes:
            self._post("badges", dict((b.id, (b.glyph or "?", b.ascii or "?")) for b in follower.badges.values()))
        if changes.toolbars or follower.toolbars is None:
            self.toolbars = None if follower.toolbars is None else \
                [(t.name, t.tooltip, t.provider) for t in follower.toolbars]

    def _push(self, line):
        if line.kind == "BYE":
            LOG.info("syncbadge: daemon says goodbye: %s", line.arg(0))
        self._follow_up(self._follower.push(line))


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
            elif kind == "message":
                _, text, bad = event
                self.fm.notify(text, duration=10, bad=bad)
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
        return "not connected to syncbadged (%s)" % (error.args[0] if error.args else sb.socket_path())
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
        paths = STATE.selection() if with_selection else []
        data, _ = STATE.client.call(sb.req.menu(kind, *paths, target=STATE.target()))
        return [line for line in data if line.kind == "MENUITEM"]

    @staticmethod
    def _format(item):
        text = "%s  %s" % (item.arg(0), item.opt("title", ""))
        if item.opt("enabled") == "0":
            text += " (disabled)"
        return text

    def _action(self, action_id, with_selection):
        client = STATE.client
        if client.ready and "action-reply" in client.caps and not action_id.startswith("syncbadge."):
            # An engine's action: its answer comes to the message line when the engine gives it.
            try:
                paths = STATE.selection() if with_selection else []
                target = STATE.target()
            except (OSError, ValueError) as ex:
                self._fail(action_id, ex)
                return
            client.ask_engine(action_id, paths, {"target": target})
            self.fm.notify("syncbadge: %s: asking the engine..." % action_id)
            return
        try:
            paths = STATE.selection() if with_selection else []
            _, final = STATE.client.call(sb.req.action(action_id, *paths, target=STATE.target()))
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
        toolbars = STATE.client.toolbars      # followed by pushes, where the daemon pushes them
        try:
            if toolbars is None:
                data, _ = STATE.client.call(sb.req.toolbar())
                toolbars = [(t.name, t.tooltip, t.provider) for t in map(sb.Toolbar.from_message, data) if t]
            lines = ["[%s] %s: %s" % (provider or "?", name, tooltip) for name, tooltip, provider in toolbars]
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

"""A connection to syncbadged: HELLO, tagged requests, answers, pushes, reconnects.

One class, usable three ways:

- blocking, one thread (scripts, test harnesses): ``Connection(...).open()``, then
  ``request()`` / ``send(...).result()``; pushes met meanwhile wait in a queue for
  ``next_push()``;
- with a reader thread (``threaded=True``, e.g. a sync engine): a background thread reads;
  other threads send and wait for answers and pushes;
- from an event loop, never blocking (a GTK main loop, a select loop): ``connect()`` returns at
  once; watch ``fileno()`` for input and call ``read_available()``; while ``wants_write()``
  also watch for output and call ``flush()``. Answers reach ``on_answer`` callbacks, pushes
  ``on_push``.

Every request gets a tag; its answer is its data lines then one final ``OK`` or ``ERR``
(PROTOCOL.md "Requests, responses, pushes"), collected in a Reply. A connection object can
connect again after it closed (``connect()`` / ``open()`` again): HELLO's ``epoch=`` tells
whether the daemon is a new one (``new_epoch``), in which case whatever a client cached
from the old one is stale.
"""

import collections
import itertools
import logging
import select
import socket
import threading
import time

from . import codec
from . import req
from .req import Req
from .socketpath import socket_path

__all__ = ["Connection", "Reply", "Disconnected", "ServerError", "PROTOCOL_VERSION", "MAX_LINE"]

LOG = logging.getLogger("syncbadge")

PROTOCOL_VERSION = 1
MAX_LINE = 1 << 20          # a longer line from the daemon closes the connection
_CHUNK = 65536
_RAW_CHUNK = 1 << 20        # read_lines(): one read takes what a burst of pushes left
_SEND_FLAGS = getattr(socket, "MSG_NOSIGNAL", 0)


class Disconnected(ConnectionError):
    """The connection closed (or was never opened); the argument says why."""


class ServerError(Exception):
    """The daemon answered ``ERR <code> [message=...]``."""

    def __init__(self, reply):
        self.reply = reply
        self.verb = reply.verb
        self.code = reply.final.code
        self.message = reply.final.opt("message", "")
        Exception.__init__(self, "%s: %s%s" % (self.verb, self.code, " " + self.message if self.message else ""))


class Reply(object):
    """The answer to one request: `data` (Messages before the final line), then `final`
    (the ``OK`` or ``ERR`` Message). When the connection closes first, `final` stays None and
    `reason` says why. `on_answer(reply)` is called once either happened. Sent with
    ``keep_data=False``, `data` stays empty: `on_data` alone takes the lines."""

    def __init__(self, conn, tag, verb, on_answer=None, on_data=None, keep_data=True):
        self.conn = conn
        self.tag = tag
        self.verb = verb
        self.data = []
        self._keep_data = keep_data
        self.final = None
        self.reason = None
        self._on_answer = on_answer
        self._on_data = on_data
        self._event = threading.Event()

    @property
    def done(self):
        return self.final is not None or self.reason is not None

    @property
    def ok(self):
        return self.final is not None and self.final.kind == "OK"

    @property
    def code(self):
        """The ERR code, or None."""
        return self.final.code if self.final is not None else None

    @property
    def items(self):
        """The ITEM data lines, as codec.Item."""
        return [item for item in (codec.Item.from_message(m) for m in self.data) if item is not None]

    def lines(self, kind):
        """The data lines of one kind (``BADGE``, ``MENUITEM``, ``ROOT``...)."""
        return [m for m in self.data if m.kind == kind]

    def wait(self, timeout=None):
        """Waits for the answer (reading the connection unless a reader thread does); True
        once answered or failed, False at the timeout."""
        return self.conn._wait(lambda: self.done, timeout, self._event)

    def result(self, timeout=None):
        """Waits, then returns itself for OK; raises ServerError for ERR, Disconnected when the
        connection closed first, TimeoutError after `timeout` seconds."""
        if not self.wait(timeout):
            raise TimeoutError("no answer to %s within %gs" % (self.verb, timeout))
        if self.final is None:
            raise Disconnected(self.reason)
        if self.final.kind != "OK":
            raise ServerError(self)
        return self

    def _data(self, message):
        if self._keep_data:
            self.data.append(message)
        if self._on_data is not None:
            try:
                self._on_data(message)
            except Exception:
                LOG.exception("syncbadge: error in the data callback for %s", self.verb)

    def _finish(self, final, reason=None):
        self.final = final
        self.reason = reason
        if self._on_answer is not None:
            try:
                self._on_answer(self)
            except Exception:  # a callback's error must not break the connection
                LOG.exception("syncbadge: error in the callback for %s", self.verb)
        self._event.set()

    def __repr__(self):
        state = "pending" if not self.done else (self.final.kind if self.final else "failed: %s" % self.reason)
        return "<Reply %s %s %s>" % (self.tag, self.verb, state)


class Connection(object):
    """A connection to the daemon's socket.

    path: the socket (default: the rule of socketpath.socket_path, applied at each connect).
    role, name, hello_options: what HELLO says (``roots=0`` and the like go in hello_options).
    on_push(message): called for every push; without it pushes queue up for next_push().
    on_hello(conn): called when HELLO was answered OK (conn.epoch, conn.new_epoch, conn.caps).
    on_close(conn, reason): called when a connection that was open closes.
    threaded: a background thread reads (callbacks then run in that thread).
    """

    def __init__(self, path=None, role="viewer", name=None, hello_options=None, on_push=None,
                 on_hello=None, on_close=None, threaded=False, max_line=MAX_LINE):
        self.explicit_path = path
        self.path = None
        self.role = role
        self.name = name
        self.hello_options = dict(hello_options or {})
        self.on_push = on_push
        self.on_hello = on_hello
        self.on_close = on_close
        self.threaded = threaded
        self.epoch = None           # the daemon's epoch, kept across connections
        self.new_epoch = False      # the last HELLO showed another daemon than before (or the first)
        self.server = None
        self.caps = frozenset()
        self.ready = False          # HELLO answered OK on the current connection
        self.hello_reply = None
        self.closed_reason = "not connected"
        self.bye_reason = None      # the reason of the last `* BYE`
        self.connect_retries = 0    # connects that found the listen backlog full and waited
        self.malformed = 0          # malformed lines received (and skipped)
        self.unmatched = 0          # answers received for no request waiting (and skipped)
        self._sock = None
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._send_lock = threading.Lock()
        self._out = bytearray()
        self._framer = codec.LineBuffer(max_line)
        self._pending = collections.OrderedDict()
        self._tags = itertools.count(1)
        self._pushes = collections.deque()

    # -- state ------------------------------------------------------------------------

    @property
    def connected(self):
        return self._sock is not None

    def fileno(self):
        """The socket's descriptor (-1 while closed). It changes with every connect."""
        sock = self._sock
        return sock.fileno() if sock is not None else -1

    def wants_write(self):
        """Output is buffered that the socket did not take yet (see flush())."""
        return bool(self._out)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- connecting -------------------------------------------------------------------

    def connect(self, timeout=5.0):
        """Connects and sends HELLO without waiting for its answer; returns HELLO's Reply.
        A connection still open is closed first. Raises OSError when nothing listens (e.g.
        FileNotFoundError, ConnectionRefusedError). Waits only while the daemon's listen
        backlog is full, for at most `timeout` seconds (0: not at all)."""
        if self._sock is not None:
            self.close("reconnecting")
        path = socket_path(self.explicit_path)
        self.path = path
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        deadline = time.monotonic() + (timeout or 0)
        while True:
            try:
                sock.connect(path)
                break
            except (BlockingIOError, InterruptedError):
                # A Unix socket whose backlog is full refuses a non-blocking connect with
                # EAGAIN where a blocking one would wait: wait like one, up to the deadline.
                if time.monotonic() >= deadline:
                    sock.close()
                    raise
                self.connect_retries += 1
                time.sleep(0.001)
            except OSError:
                sock.close()
                raise
        if self.threaded:
            sock.setblocking(True)
        with self._lock:
            self._sock = sock
            self._out = bytearray()
            self._framer.clear()
            self.ready = False
            self.closed_reason = None
            self.bye_reason = None
        self.hello_reply = self._send(req.hello(self.role, self.name or None, PROTOCOL_VERSION, **self.hello_options),
                                      (), {}, self._hello_answered)
        if self.threaded:
            threading.Thread(target=self._read_loop, args=(sock,), name="syncbadge-reader", daemon=True).start()
        return self.hello_reply

    def open(self, timeout=5.0):
        """Connects and waits for HELLO's answer; returns self. Raises OSError (no daemon),
        ServerError (HELLO refused), Disconnected or TimeoutError."""
        reply = self.connect(timeout)
        try:
            reply.result(timeout)
        except TimeoutError:
            self.close("the daemon did not answer HELLO")
            raise
        return self

    def _hello_answered(self, reply):
        if reply.final is None:
            return
        if not reply.ok:
            self.close("HELLO refused: %s %s" % (reply.code, reply.final.opt("message", "")))
            return
        epoch = reply.final.opt("epoch")
        self.new_epoch = epoch != self.epoch
        self.epoch = epoch
        self.server = reply.final.opt("server")
        self.caps = frozenset(c for c in reply.final.opt("caps", "").split(",") if c)
        self.ready = True
        if self.on_hello is not None:
            try:
                self.on_hello(self)
            except Exception:
                LOG.exception("syncbadge: error in on_hello")

    def close(self, reason="closed by the client"):
        """Closes the connection: waiting replies fail with `reason`, on_close is called."""
        self._close_if(None, reason)

    def _close_if(self, sock, reason):
        with self._cond:
            old = self._sock
            if old is None or (sock is not None and old is not sock):
                return
            self._sock = None
            self.ready = False
            self.closed_reason = reason
            pending = list(self._pending.values())
            self._pending.clear()
            self._out = bytearray()
            self._cond.notify_all()
        try:
            old.shutdown(socket.SHUT_RDWR)   # also ends a reader thread's recv()
        except OSError:
            pass
        old.close()
        for reply in pending:
            reply._finish(None, reason)
        if self.on_close is not None:
            try:
                self.on_close(self, reason)
            except Exception:
                LOG.exception("syncbadge: error in on_close")

    # -- requests ---------------------------------------------------------------------

    def send(self, verb, *fields, on_answer=None, on_data=None, keep_data=True, **options):
        """Sends a request without waiting; returns its Reply. The request is a req.Req
        (``send(req.observe(d))``), or a verb with its fields and options: fields are bytes or
        str (paths, states, ids), options keyword arguments (``_`` in a name stands for ``-``;
        None is left out; True is 1). `on_data(message)` is called for each data line as it is
        read, in order with the pushes around it; with ``keep_data=False`` the Reply keeps none
        of them (a 20,000-line listing held until its end makes a full pass of Python's garbage
        collector in the middle of a file manager's main loop). Raises Disconnected when not
        connected, ValueError for a field that cannot be sent (codec.format_line)."""
        if not keep_data and on_data is None:
            raise TypeError("keep_data=False without on_data would lose the answer's lines")
        return self._send(verb, fields, options, on_answer, on_data, keep_data)

    def request(self, verb, *fields, timeout=None, **options):
        """send() and wait for the answer: the Reply for OK; raises as Reply.result()."""
        return self._send(verb, fields, options, None).result(timeout)

    def _send(self, verb, fields, options, on_answer, on_data=None, keep_data=True):
        if isinstance(verb, Req):
            if fields or options:
                raise TypeError("a Req carries its own fields and options")
            verb, fields, options = verb
        with self._lock:
            sock = self._sock
            if sock is None:
                raise Disconnected(self.closed_reason or "not connected")
            tag = str(next(self._tags))
            line = codec.format_line(tag, verb, fields, options)
            reply = self._pending[tag] = Reply(self, tag, verb, on_answer, on_data, keep_data)
        self._write(sock, line)
        return reply

    def send_raw(self, data, tags=()):
        """Writes `data` as it is, for tests that send what send() refuses (malformed or
        over-long lines, garbage). The answers to the lines it holds come back as Replies, one
        per tag of `tags` (returned in that order). Raises Disconnected when not connected."""
        with self._lock:
            sock = self._sock
            if sock is None:
                raise Disconnected(self.closed_reason or "not connected")
            replies = [self._pending.setdefault(tag, Reply(self, tag, None)) for tag in tags]
        self._write(sock, bytes(data))
        return replies

    def _write(self, sock, data):
        if self.threaded:
            error = None
            with self._send_lock:
                try:
                    sock.sendall(data, _SEND_FLAGS)
                except (BrokenPipeError, ConnectionResetError):
                    pass                # the reader meets the end, and the daemon's last words
                except OSError as ex:
                    error = "send: %s" % ex
        else:
            with self._lock:
                if self._sock is not sock:
                    return
                self._out += data
                error = self._flush_locked()
        if error:
            self._close_if(sock, error)

    def flush(self):
        """Writes buffered output without blocking; True when all of it went."""
        with self._lock:
            sock = self._sock
            error = self._flush_locked()
        if error:
            self._close_if(sock, error)
        return not self._out

    def _flush_locked(self):
        while self._out and self._sock is not None:
            try:
                n = self._sock.send(self._out, _SEND_FLAGS)
            except (BlockingIOError, InterruptedError):
                return None
            except (BrokenPipeError, ConnectionResetError):
                # The daemon closed: what it sent before (answers, `* BYE <reason>`) is still
                # to be read, and reading then meets the end and closes.
                self._out = bytearray()
                return None
            except OSError as ex:
                return "send: %s" % ex
            del self._out[:n]
        return None

    # -- reading ----------------------------------------------------------------------

    def read_available(self, limit=1 << 22):
        """Reads what the socket holds, without blocking, and handles every complete line:
        answers go to their Reply, pushes to on_push (or the queue). Reads at most about
        `limit` bytes per call (an event loop calls again while the socket is readable).
        Returns False once the connection is closed."""
        if self.threaded:
            raise RuntimeError("a reader thread reads this connection")
        sock = self._sock
        if sock is None:
            return False
        got = 0
        while got < limit:
            try:
                # At most `limit` in all: a GUI gives a slice of its main loop, not the burst.
                chunk = sock.recv(min(_CHUNK, limit - got))
            except (BlockingIOError, InterruptedError):
                break
            except ConnectionResetError:
                chunk = b""             # the daemon closed with our requests unread
            except OSError as ex:
                self._close_if(sock, "receive: %s" % ex)
                return False
            if not chunk:
                self._close_if(sock, self._eof_reason())
                return False
            got += len(chunk)
            if not self._feed(chunk, sock):
                return False
        return self._sock is not None

    def pump(self, timeout=None):
        """Waits up to `timeout` seconds (None: until something happens) for input, writing
        buffered output meanwhile, and handles what came. For blocking use without a reader
        thread. Returns False once the connection is closed."""
        sock = self._sock
        if sock is None:
            return False
        if self.threaded:
            raise RuntimeError("a reader thread reads this connection")
        poller = select.poll()
        poller.register(sock, select.POLLIN | (select.POLLOUT if self._out else 0))
        try:
            events = poller.poll(None if timeout is None else max(0, int(timeout * 1000 + 0.999)))
        except InterruptedError:
            events = []
        if events and self._out:
            self.flush()
        if events and any(ev & (select.POLLIN | select.POLLHUP | select.POLLERR) for _, ev in events):
            return self.read_available()
        return self._sock is not None

    def read_lines(self, timeout=0.0):
        """For measurements and tests that read the wire themselves (no reader thread): waits up
        to `timeout` seconds for input, reads once, and returns (lines, received): the complete
        lines that came, raw (bytes without the LF), and the time.monotonic() at which the read
        returned, taken before any line is looked at; ([], None) when nothing came. The lines
        are not dispatched: an answer read so finishes no Reply, a push is not queued. Raises
        Disconnected when the connection is or becomes closed (the daemon closed it)."""
        if self.threaded:
            raise RuntimeError("a reader thread reads this connection")
        sock = self._sock
        if sock is None:
            raise Disconnected(self.closed_reason or "not connected")
        if self._out:
            self.flush()
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        try:
            ready = poller.poll(max(0, int(timeout * 1000 + 0.999)))
        except InterruptedError:
            ready = []
        if not ready:
            return [], None
        try:
            chunk = sock.recv(_RAW_CHUNK)
        except (BlockingIOError, InterruptedError):
            return [], None
        except ConnectionResetError:
            chunk = b""
        except OSError as ex:
            self._close_if(sock, "receive: %s" % ex)
            raise Disconnected(self.closed_reason)
        received = time.monotonic()
        if not chunk:
            self._close_if(sock, self._eof_reason())
            raise Disconnected(self._eof_reason())
        try:
            return self._framer.feed(chunk), received
        except codec.ProtocolError as ex:
            self._close_if(sock, str(ex))
            raise Disconnected(str(ex))

    def _eof_reason(self):
        if self.bye_reason:
            return "the daemon closed the connection (BYE %s)" % self.bye_reason
        return "the daemon closed the connection"

    def _read_loop(self, sock):
        reason = None
        while self._sock is sock:
            try:
                chunk = sock.recv(_CHUNK)
            except InterruptedError:
                continue
            except ConnectionResetError:
                break
            except OSError as ex:
                reason = "receive: %s" % ex
                break
            if not chunk:
                break
            if not self._feed(chunk, sock):
                return
        self._close_if(sock, reason or self._eof_reason())

    def _feed(self, data, sock):
        try:
            lines = self._framer.feed(data)
        except codec.ProtocolError as ex:
            self._close_if(sock, str(ex))
            return False
        for raw in lines:
            if self._sock is not sock:
                return False
            self._dispatch(raw)
        return self._sock is sock

    def _dispatch(self, raw):
        try:
            m = codec.parse_message(raw)
        except codec.ProtocolError as ex:
            self.malformed += 1
            LOG.warning("syncbadge: ignoring a malformed line from the daemon: %s", ex)
            return
        if m.is_push:
            if m.kind == "BYE":
                self.bye_reason = m.arg(0, "")
            if self.on_push is not None:
                try:
                    self.on_push(m)
                except Exception:
                    LOG.exception("syncbadge: error in on_push")
            else:
                with self._cond:
                    self._pushes.append(m)
                    self._cond.notify_all()
            return
        with self._lock:
            reply = self._pending.get(m.head)
            if reply is not None and m.is_final:
                del self._pending[m.head]
        if reply is None:
            self.unmatched += 1
            LOG.debug("syncbadge: an answer for no request: %r", m)
        elif m.is_final:
            reply._finish(m)
        else:
            reply._data(m)

    # -- pushes -----------------------------------------------------------------------

    def next_push(self, timeout=None):
        """The next push (a Message), waiting at most `timeout` seconds (None: forever);
        None at the timeout. Raises Disconnected once the connection closed and every push
        received before was taken. (With on_push set, pushes never queue.)"""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._cond:
                if self._pushes:
                    return self._pushes.popleft()
                if self._sock is None:
                    raise Disconnected(self.closed_reason or "not connected")
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                if self.threaded:
                    self._cond.wait(left)
                    continue
            self.pump(left)

    def take_pushes(self):
        """Every queued push, without waiting."""
        with self._cond:
            out = list(self._pushes)
            self._pushes.clear()
            return out

    def _wait(self, done, timeout, event):
        deadline = None if timeout is None else time.monotonic() + timeout
        while not done():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            if self.threaded or self._sock is None:
                # A reader thread (or the close that fails every waiting reply) finishes it.
                event.wait(left)
            else:
                self.pump(left)
        return True

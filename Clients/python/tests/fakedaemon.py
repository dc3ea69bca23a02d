"""A stand-in for syncbadged in the connection tests: a Unix socket server on threads that
speaks the line protocol (through the package's codec) with a few verbs of its own.

    HELLO              OK proto=1 server=fake/1 epoch=<epoch> caps=<caps> (or `hello_error`)
    PING               OK
    ECHO <f>... k=v    one `DATA <f>` line per field, then OK with the same options
    LIST <dir>         ITEM lines for <dir>/a and <dir>/b c, then OK count=2
    PUSH <kind> <f>... the push `* <kind> <f>...`, then OK
    FAIL <code>        ERR <code> message=failed%20on%20purpose
    GARBAGE            a malformed line, a push, then OK
    LONG <n>           a push `* LONG xxx...` of about n bytes, then OK
    HOLD <seconds>     reads nothing for that long, then OK
    QUIT               OK, `* BYE shutdown`, then closes the connection
    anything else      ERR unknown-verb
"""

import os
import socket
import threading
import time

import vectors  # noqa: F401
from syncbadge import codec


class FakeDaemon(object):
    def __init__(self, path, epoch="e1", caps="observe,menus", hello_error=None):
        self.path = path
        self.epoch = epoch
        self.caps = caps
        self.hello_error = hello_error
        self.requests = []          # every Request received, in order
        self.raw = []               # every raw request line
        self.clients = []
        self._lock = threading.Lock()
        if os.path.exists(path):
            os.unlink(path)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(16)
        self._stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with self._lock:
                if self._stopped:
                    conn.close()
                    return
                self.clients.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def send(self, conn, head, word, fields=(), options=()):
        conn.sendall(codec.format_line(head, word, fields, options))

    def push_all(self, word, fields=(), options=()):
        line = codec.format_line("*", word, fields, options)
        with self._lock:
            clients = list(self.clients)
        for conn in clients:
            try:
                conn.sendall(line)
            except OSError:
                pass

    def _serve(self, conn):
        framer = codec.LineBuffer()
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                for raw in framer.feed(data):
                    with self._lock:
                        self.raw.append(raw)
                    try:
                        req = codec.parse_request(raw)
                    except codec.ProtocolError as ex:
                        if ex.tag is None:
                            conn.sendall(b"* BYE bad-request\n")
                            return
                        self.send(conn, ex.tag, "ERR", ["bad-request"])
                        continue
                    with self._lock:
                        self.requests.append(req)
                    if not self._answer(conn, req):
                        return
        except OSError:
            pass
        finally:
            with self._lock:
                if conn in self.clients:
                    self.clients.remove(conn)
            conn.close()

    def _answer(self, conn, req):
        tag, verb, f = req.tag, req.verb, req.fields
        if verb == "HELLO":
            if self.hello_error:
                self.send(conn, tag, "ERR", [self.hello_error], [("supported", "1")])
            else:
                self.send(conn, tag, "OK", (), [("proto", "1"), ("server", "fake/1"), ("epoch", self.epoch),
                                               ("caps", self.caps)])
        elif verb == "PING":
            self.send(conn, tag, "OK")
        elif verb == "ECHO":
            for field in f:
                self.send(conn, tag, "DATA", [field])
            self.send(conn, tag, "OK", (), list(req.options.items()))
        elif verb == "LIST":
            d = f[0].rstrip(b"/")
            self.send(conn, tag, "ITEM", [d + b"/a", "synced"], [("badge", "synced"), ("kind", "file"), ("gen", 1)])
            self.send(conn, tag, "ITEM", [d + b"/b c", "pending"], [("badge", "pending"), ("kind", "dir"), ("gen", 2),
                                                                    ("counts", "pending:1")])
            self.send(conn, tag, "OK", (), [("count", 2)])
        elif verb == "PUSH":
            self.send(conn, "*", f[0].decode(), f[1:], list(req.options.items()))
            self.send(conn, tag, "OK")
        elif verb == "FAIL":
            self.send(conn, tag, "ERR", [f[0]], [("message", "failed on purpose")])
        elif verb == "GARBAGE":
            conn.sendall(b"* ITEM /a%G0 pending\n* GONE /after%20garbage\n")
            self.send(conn, tag, "OK")
        elif verb == "LONG":
            conn.sendall(b"* LONG " + b"x" * int(f[0]) + b"\n")
            self.send(conn, tag, "OK")
        elif verb == "HOLD":
            time.sleep(float(f[0]))
            self.send(conn, tag, "OK")
        elif verb == "QUIT":
            self.send(conn, tag, "OK")
            conn.sendall(b"* BYE shutdown\n")
            return False
        else:
            self.send(conn, tag, "ERR", ["unknown-verb"])
        return True

    def stop(self):
        """Stops listening and closes every connection (as a daemon that exits)."""
        with self._lock:
            self._stopped = True
            clients, self.clients = list(self.clients), []
        try:
            self.listener.shutdown(socket.SHUT_RDWR)     # wakes the accept()
        except OSError:
            pass
        self.listener.close()
        for conn in clients:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()
        if os.path.exists(self.path):
            os.unlink(self.path)

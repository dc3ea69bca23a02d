"""A stand-in for syncbadged in the connection tests: a Unix socket server on threads that
speaks the line protocol (through the package's codec) with a few verbs of its own.

    HELLO              OK proto=1 server=fake/1 epoch=<epoch> caps=<caps> (or `hello_error`)
    PING               OK
    ECHO <f>... k=v    one `DATA <f>` line per field, then OK with the same options
    LIST <dir>         ITEM lines for <dir>/a and <dir>/b c, then OK count=2 (for a directory
                       not in the table below; one in it lists its entries)
    PUSH <kind> <f>... the push `* <kind> <f>...`, then OK
    FAIL <code>        ERR <code> message=failed%20on%20purpose
    GARBAGE            a malformed line, a push, then OK
    LONG <n>           a push `* LONG xxx...` of about n bytes, then OK
    HOLD <seconds>     reads nothing for that long, then OK
    SPLIT <f>          `DATA <f>`, the push `* GONE <f>`, then OK (a push inside an answer)
    QUIT               OK, `* BYE shutdown`, then closes the connection
    anything else      ERR unknown-verb

and, on a table of entries the test fills (add_root, put), the verbs of version 1.2 as
PROTOCOL.md says, without the daemon's own logic (no watcher, no roll-up: a test puts a
directory's state itself):

    ROOTS, STATUS, OBSERVE [list=0], UNOBSERVE, CLAIM, UNCLAIM, SET [lease=], DEFINE-TOOLBAR,
    TOOLBAR, ACTION [reply=1] [provider=], ANSWER, and MENU (always empty)

`* ITEM` goes to the observers of an entry's parent and of the entry itself; `* ROOT` and
`* TOOLBAR` to every connection that did not say roots=0. An ACTION with reply=1 (where the
caps say action-reply) holds its connection's later requests until the engine's ANSWER, the
engine's end (ERR no-provider) or `answer_timeout` seconds (ERR timeout), as the daemon does.
"""

import os
import socket
import threading
import time

import vectors  # noqa: F401
from syncbadge import codec


CAPS_1_2 = "observe,menus,observe-nolist,roots-optout,action-reply,lease,unclaim,toolbar-push"


def _parent(path):
    return path.rpartition(b"/")[0] or b"/"


def _under(path, root):
    return path == root or path.startswith(root.rstrip(b"/") + b"/")


class Client(object):
    """One connection: its socket (lines go out whole, under a lock), what HELLO said, what
    it observes, and what it defined as an engine."""

    def __init__(self, sock):
        self.sock = sock
        self.lock = threading.Lock()
        self.name = None
        self.roots = True               # gets `* ROOT` and `* TOOLBAR`
        self.observed = {}              # dir -> times observed
        self.toolbar = None             # (name, tooltip)
        self.closed = False

    def send(self, head, word, fields=(), options=()):
        self.write(codec.format_line(head, word, fields, options))

    def write(self, data):
        with self.lock:
            try:
                self.sock.sendall(data)
            except OSError:
                pass


class Answer(object):
    """An ACTION with reply=1 waiting for its engine."""

    def __init__(self, engine):
        self.engine = engine
        self.done = threading.Event()
        self.outcome = None             # ("OK", message) / ("failed", message) / ("no-provider", None)


class FakeDaemon(object):
    def __init__(self, path, epoch="e1", caps="observe,menus", hello_error=None, answer_timeout=10.0):
        self.path = path
        self.epoch = epoch
        self.caps = caps
        self.hello_error = hello_error
        self.answer_timeout = answer_timeout
        self.requests = []          # every Request received, in order
        self.raw = []               # every raw request line
        self.clients = []           # sockets
        self.entries = {}           # path -> {"state", "kind", "gen", "badge", "progress", "message", "counts", "lease", "by"}
        self.root_paths = []
        self.claims = {}            # root -> Client
        self.answers = {}           # token -> Answer
        self.tokens = 0
        self._conns = {}            # socket -> Client
        self._lock = threading.RLock()
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
                self._conns[conn] = Client(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def send(self, conn, head, word, fields=(), options=()):
        self._conns[conn].send(head, word, fields, options)

    def push_all(self, word, fields=(), options=(), roots_only=False):
        line = codec.format_line("*", word, fields, options)
        with self._lock:
            clients = [c for c in self._conns.values() if c.roots or not roots_only]
        for c in clients:
            c.write(line)

    # -- the table of entries (for the tests) ------------------------------------------

    def add_root(self, root, state="synced"):
        with self._lock:
            self.root_paths.append(root)
            self.entries[root] = dict(state=state, kind="dir", gen=1)
        self.push_all("ROOT", [root, state], roots_only=True)

    def put(self, path, state, kind=None, **fields):
        """Sets an entry as the daemon would after a change or a SET, and pushes `* ITEM`."""
        with self._lock:
            entry = self.entries.setdefault(path, dict(kind=kind or "file", gen=1))
            if kind:
                entry["kind"] = kind
            entry["state"] = state
            for key in ("badge", "progress", "message", "counts", "lease", "by"):
                entry[key] = fields.get(key)
            if "gen" in fields:
                entry["gen"] = fields["gen"]
        self._push_item(path)

    def remove(self, path):
        """The entry goes (a tombstone synced, or a directory deleted): `* GONE`."""
        with self._lock:
            self.entries.pop(path, None)
            clients = [c for c in self._conns.values() if c.observed.get(_parent(path)) or c.observed.get(path)]
            for c in clients:
                c.observed.pop(path, None)
        for c in clients:
            c.send("*", "GONE", [path])

    def _item_fields(self, path):
        e = self.entries[path]
        options = [("badge", e.get("badge") or e["state"]), ("kind", e["kind"]), ("progress", e.get("progress")),
                   ("message", e.get("message")), ("gen", e["gen"])]
        if e["kind"] == "dir":
            options.append(("counts", e.get("counts") or ""))
        return [path, e["state"]], [(k, v) for k, v in options if v is not None and v != ""]

    def _push_item(self, path):
        with self._lock:
            fields, options = self._item_fields(path)
            clients = [c for c in self._conns.values() if c.observed.get(_parent(path)) or c.observed.get(path)]
        for c in clients:
            c.send("*", "ITEM", fields, options)

    def _root_of(self, path):
        return next((r for r in self.root_paths if _under(path, r)), None)

    # -- serving -------------------------------------------------------------------------

    def _serve(self, conn):
        framer = codec.LineBuffer()
        client = self._conns[conn]
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
                            client.write(b"* BYE bad-request\n")
                            return
                        client.send(ex.tag, "ERR", ["bad-request"])
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
                self._conns.pop(conn, None)
            self._gone(client)
            conn.close()

    def _gone(self, client):
        """An engine's end: its claims and toolbar go, its answers are owed no more, and the
        syncing it set without a lease is released."""
        with self._lock:
            client.closed = True
            claimed = [r for r, c in self.claims.items() if c is client]
            for r in claimed:
                del self.claims[r]
            owed = [a for a in self.answers.values() if a.engine is client]
            released = [p for p, e in self.entries.items()
                        if e.get("by") is client and e["state"] == "syncing" and not e.get("lease")]
        for a in owed:
            a.outcome = ("no-provider", None)
            a.done.set()
        for p in released:
            self.put(p, "pending", message="the engine went away")
        for r in claimed:
            self.push_all("ROOT", [r, self.entries[r]["state"]], roots_only=True)
        if claimed and client.toolbar is not None:
            self._push_toolbar_removed(client)

    def _answer(self, conn, req):
        tag, verb, f = req.tag, req.verb, req.fields
        client = self._conns[conn]
        if verb == "HELLO":
            if self.hello_error:
                self.send(conn, tag, "ERR", [self.hello_error], [("supported", "1")])
            else:
                client.name = req.opt("name") or "pid-0"
                client.roots = req.opt("roots") != "0"
                self.send(conn, tag, "OK", (), [("proto", "1"), ("server", "fake/1"), ("epoch", self.epoch),
                                               ("caps", self.caps)])
        elif verb == "PING":
            self.send(conn, tag, "OK")
        elif verb == "ECHO":
            for field in f:
                self.send(conn, tag, "DATA", [field])
            self.send(conn, tag, "OK", (), list(req.options.items()))
        elif verb == "LIST" and f and f[0] in self.entries:
            with self._lock:
                children = [self._item_fields(p) for p in sorted(self.entries)
                            if _parent(p) == f[0] and p != f[0] and self.entries[p]["kind"] != "gone"]
            for fields, options in children:
                client.send(tag, "ITEM", fields, options)
            client.send(tag, "OK", (), [("count", len(children))])
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
            client.write(b"* ITEM /a%G0 pending\n* GONE /after%20garbage\n")
            self.send(conn, tag, "OK")
        elif verb == "LONG":
            client.write(b"* LONG " + b"x" * int(f[0]) + b"\n")
            self.send(conn, tag, "OK")
        elif verb == "SPLIT":
            client.write(codec.format_line(tag, "DATA", [f[0]]) + codec.format_line("*", "GONE", [f[0]]) +
                         codec.format_line(tag, "OK"))
        elif verb == "HOLD":
            time.sleep(float(f[0]))
            self.send(conn, tag, "OK")
        elif verb == "QUIT":
            self.send(conn, tag, "OK")
            client.write(b"* BYE shutdown\n")
            return False
        elif hasattr(self, "_verb_" + verb.replace("-", "_")):
            getattr(self, "_verb_" + verb.replace("-", "_"))(client, req)
        else:
            self.send(conn, tag, "ERR", ["unknown-verb"])
        return True

    # -- the verbs of the table ----------------------------------------------------------

    def _verb_ROOTS(self, client, req):
        with self._lock:
            lines = [(r, self.entries[r]["state"], self.claims.get(r)) for r in self.root_paths]
        for root, state, engine in lines:
            client.send(req.tag, "ROOT", [root, state], [("provider", engine.name if engine else None)])
        client.send(req.tag, "OK")

    def _verb_STATUS(self, client, req):
        with self._lock:
            lines = []
            for p in req.fields:
                if self._root_of(p) is None:
                    lines.append(([p, "outside"], [("badge", "outside"), ("kind", "gone")]))
                elif p not in self.entries:
                    client.send(req.tag, "ERR", ["not-found"], [("message", p)])
                    return
                else:
                    lines.append(self._item_fields(p))
        for fields, options in lines:
            client.send(req.tag, "ITEM", fields, options)
        client.send(req.tag, "OK")

    def _verb_OBSERVE(self, client, req):
        d = req.fields[0]
        with self._lock:
            if self._root_of(d) is None:
                client.send(req.tag, "ERR", ["outside"])
                return
            if d not in self.entries:
                client.send(req.tag, "ERR", ["not-found"], [("message", d)])
                return
            if self.entries[d]["kind"] != "dir":
                client.send(req.tag, "ERR", ["not-a-directory"])
                return
            client.observed[d] = client.observed.get(d, 0) + 1
            children = [self._item_fields(p) for p in sorted(self.entries)
                        if _parent(p) == d and p != d and self.entries[p]["kind"] != "gone"]
        if req.opt("list") != "0" or "observe-nolist" not in self.caps:
            for fields, options in children:
                client.send(req.tag, "ITEM", fields, options)
        client.send(req.tag, "OK", (), [("count", len(children))])

    def _verb_UNOBSERVE(self, client, req):
        d = req.fields[0]
        with self._lock:
            n = client.observed.get(d, 0)
            if n > 1:
                client.observed[d] = n - 1
            else:
                client.observed.pop(d, None)
        client.send(req.tag, "OK" if n else "ERR", () if n else ["not-found"])

    def _verb_CLAIM(self, client, req):
        root = req.fields[0]
        with self._lock:
            if root not in self.root_paths:
                client.send(req.tag, "ERR", ["not-found"])
                return
            holder = self.claims.get(root)
            if holder is not None and holder is not client:
                client.send(req.tag, "ERR", ["busy"])
                return
            first = not any(c is client for c in self.claims.values())
            self.claims[root] = client
            state = self.entries[root]["state"]
        client.send(req.tag, "OK")
        self.push_all("ROOT", [root, state], [("provider", client.name)], roots_only=True)
        if first and client.toolbar is not None:
            self._push_toolbar(client)

    def _verb_UNCLAIM(self, client, req):
        root = req.fields[0]
        with self._lock:
            if self.claims.get(root) is not client:
                client.send(req.tag, "ERR", ["not-found"])
                return
            del self.claims[root]
            last = not any(c is client for c in self.claims.values())
            state = self.entries[root]["state"]
            released = [p for p, e in self.entries.items() if _under(p, root) and e.get("by") is client
                        and e["state"] == "syncing" and not e.get("lease")]
        for p in released:
            self.put(p, "pending", message="the engine gave this folder up")
        client.send(req.tag, "OK")
        self.push_all("ROOT", [root, state], roots_only=True)
        if last and client.toolbar is not None:
            self._push_toolbar_removed(client)

    def _verb_SET(self, client, req):
        state, path = req.fields[0].decode(), req.fields[1]
        lease = req.opt("lease")
        if lease is not None and state == "syncing":
            if not lease.isdigit() or not 1 <= int(lease) <= 86400:
                client.send(req.tag, "ERR", ["bad-request"], [("message", "lease is 1 to 86400 seconds")])
                return
        with self._lock:
            if path not in self.entries:
                client.send(req.tag, "ERR", ["not-found"], [("message", path)])
                return
            gen = self.entries[path]["gen"]
        self.put(path, state, progress=req.opt("progress"), message=req.opt("message"), badge=req.opt("badge"),
                 lease=int(lease) if lease is not None and state == "syncing" else None, by=client)
        client.send(req.tag, "OK", (), [("gen", gen)])

    def _verb_DEFINE_TOOLBAR(self, client, req):
        with self._lock:
            client.toolbar = (req.opt("name", ""), req.opt("tooltip", ""))
            claims = any(c is client for c in self.claims.values())
        client.send(req.tag, "OK")
        if claims:
            self._push_toolbar(client)

    def _toolbar_options(self, client):
        return [("name", client.toolbar[0]), ("tooltip", client.toolbar[1]), ("provider", client.name)]

    def _push_toolbar(self, client):
        if "toolbar-push" in self.caps:
            self.push_all("TOOLBAR", [], self._toolbar_options(client), roots_only=True)

    def _push_toolbar_removed(self, client):
        """`* TOOLBAR provider=<name> removed`, the option first as the contract writes it."""
        if "toolbar-push" in self.caps:
            line = b"* TOOLBAR provider=" + codec.encode(client.name) + b" removed\n"
            with self._lock:
                clients = [c for c in self._conns.values() if c.roots]
            for c in clients:
                c.write(line)

    def _verb_TOOLBAR(self, client, req):
        with self._lock:
            engines = [c for c in self._conns.values()
                       if c.toolbar is not None and any(e is c for e in self.claims.values())]
        for c in engines:
            client.send(req.tag, "TOOLBAR", [], self._toolbar_options(c))
        client.send(req.tag, "OK")

    def _verb_MENU(self, client, req):
        client.send(req.tag, "OK")          # no menus here: only the toolbar lines matter

    def _verb_ACTION(self, client, req):
        action_id, paths = req.fields[0], req.fields[1:]
        provider = req.opt("provider")
        target = req.options.get("target")
        with self._lock:
            if provider is not None:
                engine = next((c for c in self.claims.values() if c.name == provider and c.toolbar), None)
            else:
                root = self._root_of((paths or [target])[0]) if (paths or target) else None
                engine = self.claims.get(root)
            wants = req.opt("reply") == "1" and "action-reply" in self.caps
            answer = token = None
            if engine is not None and wants:
                self.tokens += 1
                token = "t%d" % self.tokens
                answer = self.answers[token] = Answer(engine)
        if engine is None:
            client.send(req.tag, "ERR", ["no-provider"])
            return
        engine.send("*", "ACTION", [action_id] + paths,
                    [("target", target), ("provider", provider), ("from", client.name), ("reply", token)])
        if answer is None:
            client.send(req.tag, "OK")
            return
        # Held here, in this connection's thread: its later requests wait, as the daemon's do.
        answered = answer.done.wait(self.answer_timeout)
        with self._lock:
            self.answers.pop(token, None)
        if not answered:
            client.send(req.tag, "ERR", ["timeout"])
        elif answer.outcome[0] == "OK":
            client.send(req.tag, "OK", (), [("message", answer.outcome[1])])
        else:
            client.send(req.tag, "ERR", [answer.outcome[0]], [("message", answer.outcome[1])])

    def _verb_ANSWER(self, client, req):
        token = req.fields[0].decode()
        with self._lock:
            answer = self.answers.get(token)
            if answer is None or answer.engine is not client or answer.done.is_set():
                client.send(req.tag, "ERR", ["not-found"])
                return
            answer.outcome = ("failed" if req.opt("failed") == "1" else "OK", req.opt("message"))
            answer.done.set()
        client.send(req.tag, "OK")

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

"""The Connection against a fake daemon on a temporary Unix socket: HELLO, answers, pushes,
the three ways of use (blocking, reader thread, event loop), reconnects and a new epoch."""

import os
import select
import shutil
import tempfile
import threading
import time
import unittest

import vectors  # noqa: F401
from fakedaemon import FakeDaemon
from syncbadge import Connection, Disconnected, Item, Provider, ServerError, codec
from syncbadge.provider import Action, Change

WEIRD = b"/tmp/a b\nc%\xff\xc3\xa9"


class Base(unittest.TestCase):
    daemon_options = {}         # FakeDaemon's keyword arguments (caps=, answer_timeout=)

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="sbpy-")
        self.sock = os.path.join(self.dir, "d.sock")
        self.daemon = FakeDaemon(self.sock, **self.daemon_options)
        self.conns = []

    def tearDown(self):
        for c in self.conns:
            c.close()
        self.daemon.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def connection(self, **kw):
        kw.setdefault("name", "test")
        c = Connection(self.sock, **kw)
        self.conns.append(c)
        return c

    def wait_until(self, predicate, timeout=5):
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                self.fail("timed out")
            time.sleep(0.005)


class Blocking(Base):
    def test_hello(self):
        c = self.connection(role="provider", name="engine one", hello_options={"roots": 0}).open()
        self.assertTrue(c.ready)
        self.assertEqual((c.epoch, c.server, c.new_epoch), ("e1", "fake/1", True))
        self.assertEqual(c.caps, frozenset({"observe", "menus"}))
        hello = self.daemon.requests[0]
        self.assertEqual(hello.verb, "HELLO")
        self.assertEqual(hello.options, {"proto": b"1", "role": b"provider", "name": b"engine one", "roots": b"0"})
        self.assertEqual(self.daemon.raw[0], b"1 HELLO proto=1 role=provider name=engine%20one roots=0")

    def test_answers_data_lines_and_errors(self):
        c = self.connection().open()
        self.assertTrue(c.request("PING").ok)
        r = c.request("LIST", b"/r")
        self.assertEqual([i.path for i in r.items], [b"/r/a", b"/r/b c"])
        self.assertEqual(r.items[1], Item(b"/r/b c", "pending", "pending", "dir", 2, None, None, {"pending": 1}))
        self.assertEqual(r.final.opt_int("count"), 2)
        with self.assertRaises(ServerError) as cm:
            c.request("FAIL", "not-found")
        self.assertEqual((cm.exception.code, cm.exception.message, cm.exception.verb),
                         ("not-found", "failed on purpose", "FAIL"))
        r = c.send("NOPE")
        self.assertTrue(r.wait(5))
        self.assertEqual((r.ok, r.code, r.data), (False, "unknown-verb", []))

    def test_any_bytes_go_and_come_back(self):
        c = self.connection().open()
        r = c.request("ECHO", WEIRD, "\u27f3 x", message=b"k=v \x00", target=WEIRD)
        self.assertEqual([m.fields[0] for m in r.lines("DATA")], [WEIRD, "\u27f3 x".encode()])
        self.assertEqual(r.final.options, {"message": b"k=v \x00", "target": WEIRD})
        self.assertIn(codec.encode(WEIRD), self.daemon.raw[-1])

    def test_pipelined_requests_are_matched_by_tag(self):
        c = self.connection().open()
        replies = [c.send("ECHO", "/n%d" % i) for i in range(300)]
        for i, r in enumerate(replies):
            r.result(5)
            self.assertEqual(r.data[0].fields, [b"/n%d" % i])
        self.assertEqual(len({r.tag for r in replies}), 300)

    def test_pushes_wait_in_order_while_answers_are_read(self):
        c = self.connection().open()
        c.request("PUSH", "ITEM", b"/r/x", "syncing", progress=40)
        c.request("PUSH", "GONE", b"/r/y")
        first = c.next_push(1)
        self.assertEqual((first.kind, first.fields, first.opt_int("progress")), ("ITEM", [b"/r/x", b"syncing"], 40))
        self.assertEqual(c.next_push(1).kind, "GONE")
        t0 = time.monotonic()
        self.assertIsNone(c.next_push(0.05))
        self.assertLess(time.monotonic() - t0, 1)
        self.daemon.push_all("ROOT", [b"/r", "synced"])
        self.assertEqual(c.next_push(5).kind, "ROOT")

    def test_a_malformed_line_is_skipped(self):
        c = self.connection().open()
        with self.assertLogs("syncbadge", "WARNING") as logs:
            c.request("GARBAGE")
        self.assertIn("malformed", logs.output[0])
        self.assertEqual(c.malformed, 1)
        self.assertEqual(c.next_push(1).fields, [b"/after garbage"])
        self.assertTrue(c.request("PING").ok)

    def test_a_line_too_long_closes(self):
        c = self.connection(max_line=1000).open()
        r = c.send("LONG", "5000")
        with self.assertRaises(Disconnected) as cm:
            r.result(5)
        self.assertIn("longer than 1000", str(cm.exception))
        self.assertFalse(c.connected)

    def test_bye_and_end_of_file_fail_what_waits(self):
        closed = []
        c = self.connection(on_close=lambda conn, why: closed.append(why)).open()
        c.send("QUIT")
        late = c.send("HOLD", "0.2")
        with self.assertRaises(Disconnected) as cm:
            late.result(5)
        self.assertIn("BYE shutdown", str(cm.exception))
        self.assertEqual(c.bye_reason, "shutdown")
        self.assertEqual(len(closed), 1)
        self.assertEqual(c.next_push(1).kind, "BYE")     # what came before the end is still there
        with self.assertRaises(Disconnected):
            c.next_push(1)
        with self.assertRaises(Disconnected):
            c.send("PING")

    def test_timeout(self):
        c = self.connection().open()
        with self.assertRaises(TimeoutError):
            c.send("HOLD", "0.5").result(0.05)

    def test_hello_refused(self):
        self.daemon.hello_error = "unsupported-version"
        c = self.connection()
        with self.assertRaises(ServerError) as cm:
            c.open()
        self.assertEqual(cm.exception.code, "unsupported-version")
        self.assertFalse(c.connected)
        self.assertFalse(c.ready)

    def test_no_daemon(self):
        c = Connection(os.path.join(self.dir, "none.sock"))
        with self.assertRaises(OSError):
            c.open()
        self.assertEqual(c.fileno(), -1)
        with self.assertRaises(Disconnected):
            c.send("PING")

    def test_the_socket_rule_applies_at_each_connect(self):
        old = os.environ.get("SYNCBADGE_SOCKET")
        os.environ["SYNCBADGE_SOCKET"] = self.sock
        try:
            c = self.connection().open()
            self.assertEqual(c.path, self.sock)
        finally:
            if old is None:
                del os.environ["SYNCBADGE_SOCKET"]
            else:
                os.environ["SYNCBADGE_SOCKET"] = old

    def test_raw_lines_out_and_in(self):
        # What tests of the daemon's input handling and the benchmarks' timed waits use: bytes the
        # codec would refuse go out as they are, their answers come back by tag, and lines read
        # raw (timed) are neither answers nor queued pushes.
        c = self.connection().open()
        r, = c.send_raw(b"x1 ECHO a=b\n", tags=["x1"])
        self.assertTrue(r.wait(5))
        self.assertEqual((r.ok, r.final.options), (True, {"a": b"b"}))
        self.assertEqual(c.send_raw(b"x2 PUSH NOTE /n\n"), [])
        lines, received = [], None
        deadline = time.monotonic() + 5
        while len(lines) < 2 and time.monotonic() < deadline:
            got, at = c.read_lines(1)
            lines += got
            received = received or at
        self.assertEqual(lines, [b"* NOTE /n", b"x2 OK"])
        self.assertLessEqual(received, time.monotonic())
        self.assertEqual(c.take_pushes(), [])
        self.assertEqual(c.unmatched, 0)
        self.assertEqual(c.read_lines(0), ([], None))
        self.assertTrue(c.request("PING").ok)
        c.send("QUIT")
        with self.assertRaises(Disconnected):
            while True:
                c.read_lines(5)

    def test_an_answer_for_no_request_is_counted(self):
        c = self.connection().open()
        c.send_raw(b"stray PING\n")
        self.assertTrue(c.request("PING").ok)
        self.assertEqual(c.unmatched, 1)

    def test_bad_fields_raise_before_sending(self):
        c = self.connection().open()
        with self.assertRaises(ValueError):
            c.send("STATUS", "")
        with self.assertRaises(ValueError):
            c.send("ACTION", "a=b")
        self.assertTrue(c.request("PING").ok)


class Reconnecting(Base):
    def test_same_daemon_then_a_new_one(self):
        hellos, closes = [], []
        c = self.connection(on_hello=lambda conn: hellos.append((conn.epoch, conn.new_epoch)),
                            on_close=lambda conn, why: closes.append(why))
        c.open()
        first_fd = c.fileno()
        c.open()                               # again, same daemon: the same epoch
        self.assertEqual(closes, ["reconnecting"])
        self.assertEqual(hellos, [("e1", True), ("e1", False)])
        self.assertFalse(c.new_epoch)
        pending = c.send("HOLD", "1")
        self.daemon.stop()                     # the daemon goes away...
        with self.assertRaises(Disconnected):
            pending.result(5)
        self.assertFalse(c.connected)
        with self.assertRaises(OSError):
            c.open()
        self.daemon = FakeDaemon(self.sock, epoch="e2")   # ...and a new one starts
        c.open()
        self.assertEqual((c.epoch, c.new_epoch), ("e2", True))
        self.assertEqual(hellos[-1], ("e2", True))
        self.assertTrue(c.request("PING").ok)
        self.assertTrue(first_fd >= 0)


class Threaded(Base):
    def test_reader_thread(self):
        c = self.connection(threaded=True).open()
        self.assertTrue(c.ready)
        results = []

        def worker(n):
            results.append(c.request("ECHO", "/w%d" % n, timeout=5).data[0].fields[0])
        workers = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(10)
        self.assertEqual(sorted(results), sorted(b"/w%d" % n for n in range(8)))
        got = []
        waiter = threading.Thread(target=lambda: got.append(c.next_push(5)))
        waiter.start()
        time.sleep(0.05)
        self.daemon.push_all("CHANGED", [b"/r/f"], [("gen", 4), ("what", "modify")])
        waiter.join(5)
        self.assertEqual(Change.from_message(got[0]), Change(b"/r/f", 4, "modify", None))
        with self.assertRaises(TimeoutError):
            c.send("HOLD", "0.5").result(0.05)

    def test_the_end_reaches_waiters(self):
        c = self.connection(threaded=True).open()
        r = c.send("HOLD", "0.3")
        self.daemon.stop()
        with self.assertRaises(Disconnected):
            r.result(5)
        with self.assertRaises(Disconnected):
            c.next_push(5)
        self.daemon = FakeDaemon(self.sock, epoch="e9")
        c.open()
        self.assertEqual((c.epoch, c.new_epoch), ("e9", True))
        self.assertTrue(c.request("PING", timeout=5).ok)


class EventLoop(Base):
    """As a GTK main loop or a select loop drives it: nothing ever blocks."""

    def run_loop(self, conn, until, timeout=5):
        deadline = time.monotonic() + timeout
        while not until():
            self.assertLess(time.monotonic(), deadline, "timed out")
            fd = conn.fileno()
            r, w, _ = select.select([fd], [fd] if conn.wants_write() else [], [], 0.05)
            if w:
                conn.flush()
            if r:
                t0 = time.monotonic()
                conn.read_available()
                self.assertLess(time.monotonic() - t0, 0.5)

    def test_callbacks(self):
        pushes, answers, hellos = [], [], []
        c = self.connection(on_push=pushes.append, on_hello=lambda conn: hellos.append(conn.epoch))
        hello = c.connect(timeout=0)
        self.assertFalse(hello.done)
        self.run_loop(c, lambda: c.ready)
        self.assertEqual(hellos, ["e1"])
        c.send("PUSH", "ITEM", b"/r/a", "pending", on_answer=answers.append)
        c.send("LIST", b"/r", on_answer=answers.append)
        self.run_loop(c, lambda: len(answers) == 2)
        self.assertEqual([a.verb for a in answers], ["PUSH", "LIST"])
        self.assertEqual(len(answers[1].items), 2)
        self.assertEqual([p.kind for p in pushes], ["ITEM"])
        self.assertEqual(c.take_pushes(), [])
        # Nothing to read: returns at once.
        t0 = time.monotonic()
        self.assertTrue(c.read_available())
        self.assertLess(time.monotonic() - t0, 0.1)

    def test_output_the_socket_does_not_take_waits_for_flush(self):
        answers = []
        c = self.connection()
        c.connect()
        self.run_loop(c, lambda: c.ready)
        c.send("HOLD", "0.3")                  # the daemon reads nothing meanwhile
        big = "/" + "x" * 60000
        for _ in range(100):                   # 6 MB: more than the socket buffers hold
            c.send("ECHO", big, on_answer=answers.append)
        self.assertTrue(c.wants_write())
        self.run_loop(c, lambda: len(answers) == 100, timeout=30)
        self.assertFalse(c.wants_write())
        self.assertTrue(all(a.ok and a.data[0].fields[0] == big.encode() for a in answers))

    def test_close_from_a_callback_and_reconnect(self):
        closes = []
        c = self.connection(on_close=lambda conn, why: closes.append(why))
        c.connect()
        self.run_loop(c, lambda: c.ready)
        r = c.send("QUIT")
        self.run_loop(c, lambda: not c.connected)
        self.assertTrue(r.ok)
        self.assertEqual(len(closes), 1)
        self.assertFalse(c.read_available())
        c.connect()
        self.run_loop(c, lambda: c.ready)
        self.assertFalse(c.new_epoch)


class Providers(Base):
    def test_requests(self):
        c = self.connection(role="provider").open()
        p = Provider(c)
        for reply in [p.claim(b"/r"), p.subscribe_changes(b"/r"), p.changes(b"/r"),
                      p.set("syncing", WEIRD, gen=3, progress=50, message="copying"),
                      p.set("synced", b"/r", recursive=True),
                      p.define_menu("items", "sync.now", "Sync now"),
                      p.define_menu("items", "sync.fix", "Fix", states=["error", "conflict"], enabled=False),
                      p.define_toolbar("Pause", "Pause syncing"),
                      p.define_badge("mine", "Mine", "\u2605", "*", "33")]:
            reply.wait(5)
        raw = self.daemon.raw[1:]
        self.assertEqual(raw[:3], [b"2 CLAIM /r", b"3 SUBSCRIBE-CHANGES /r", b"4 CHANGES /r"])
        self.assertEqual(raw[3], b"5 SET syncing " + codec.encode(WEIRD) + b" gen=3 progress=50 message=copying")
        self.assertEqual(raw[4], b"6 SET synced /r recursive=1")
        self.assertEqual(raw[5], b"7 DEFINE-MENU items sync.now title=Sync%20now")
        self.assertEqual(raw[6], b"8 DEFINE-MENU items sync.fix title=Fix states=error,conflict enabled=0")
        self.assertEqual(raw[7], b"9 DEFINE-TOOLBAR name=Pause tooltip=Pause%20syncing")
        self.assertEqual(raw[8], "10 DEFINE-BADGE mine label=Mine glyph=\u2605 ascii=* color=33".encode())

    def test_actions(self):
        c = self.connection(role="provider").open()
        p = Provider(c)
        seen = []
        p.on_action("sync.now", seen.append)
        c.request("PUSH", "ACTION", "sync.now", b"/r/a", WEIRD, target=b"/r", **{"from": "ranger"})
        c.request("PUSH", "ACTION", "other", b"/r/a")
        c.request("PUSH", "GONE", b"/r/a")
        self.assertTrue(p.handle_push(c.next_push(1)))
        self.assertEqual(seen, [Action("sync.now", [b"/r/a", WEIRD], b"/r", "ranger", None)])
        self.assertFalse(p.handle_push(c.next_push(1)))
        self.assertFalse(p.handle_push(c.next_push(1)))
        moved = codec.parse_message(b"* CHANGED /r/new gen=7 what=move from=/r/old%20name")
        self.assertEqual(Change.from_message(moved), Change(b"/r/new", 7, "move", b"/r/old name"))
        self.assertIsNone(Change.from_message(codec.parse_message(b"1 CHANGED /r")))


if __name__ == "__main__":
    unittest.main()

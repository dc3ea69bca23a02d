"""Version 1.2 against the fake daemon (fakedaemon.py): ANSWER and what the viewer gets of it,
UNCLAIM, lease=, `* TOOLBAR` pushes, and wait() until paths are synced, in each outcome."""

import os
import threading
import time
import unittest

import vectors  # noqa: F401
from fakedaemon import CAPS_1_2
from test_connection import Base as ConnectionBase
from syncbadge import (Action, ActionFailed, ActionTimeout, Disconnected, Item, NoProvider, Provider,
                       ServerError, Toolbar, Viewer, WaitFailed, WaitState, WaitTimeout, codec, wait)

ROOT = b"/sync"
FILE = b"/sync/report.odt"
DIR = b"/sync/docs"


class Base(ConnectionBase):
    """The fake daemon of version 1.2 (every cap), with a root, a file and a directory."""
    daemon_options = {"caps": CAPS_1_2}

    def setUp(self):
        ConnectionBase.setUp(self)
        self.daemon.add_root(ROOT)
        self.daemon.put(FILE, "pending")
        self.daemon.put(DIR, "synced", kind="dir", counts="synced:1")
        self.daemon.put(DIR + b"/a.txt", "synced")

    def connection(self, role="viewer", name="viewer", **kw):
        return ConnectionBase.connection(self, role=role, name=name, **kw).open()

    def engine(self, name="engine", toolbar=None):
        conn = self.connection("provider", name, threaded=True)
        engine = Provider(conn)
        if toolbar:
            engine.define_toolbar(toolbar, "tip").result(5)
        engine.claim(ROOT).result(5)
        return engine

    def next_kind(self, conn, kind, timeout=5):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = conn.next_push(deadline - time.monotonic())
            if m is not None and m.kind == kind:
                return m
        self.fail("no * %s push within %gs" % (kind, timeout))


class Engines(Base):
    def test_answer_unclaim_and_lease_on_the_wire(self):
        c = self.connection("provider")
        p = Provider(c)
        for reply in [p.set("syncing", FILE, gen=3, lease=900), p.answer("t9", "copied 3 files"),
                      p.answer("t10", failed=True), p.answer(Action("x", [], None, "cli", None, "t11"), "done"),
                      p.unclaim(ROOT)]:
            reply.wait(5)
        raw = self.daemon.raw[1:]
        self.assertEqual(raw, [b"2 SET syncing /sync/report.odt gen=3 lease=900",
                               b"3 ANSWER t9 message=copied%203%20files", b"4 ANSWER t10 failed=1",
                               b"5 ANSWER t11 message=done", b"6 UNCLAIM /sync"])

    def test_what_cannot_be_sent_raises_before_sending(self):
        c = self.connection("provider")
        p = Provider(c)
        for lease in (0, 86401, -5, 1.5, "60", True):
            with self.assertRaises(ValueError, msg=repr(lease)):
                p.set("syncing", FILE, lease=lease)
        with self.assertRaises(ValueError):
            p.set("synced", FILE, lease=60)
        with self.assertRaises(ValueError):
            p.answer("not a token")
        with self.assertRaises(ValueError):
            p.answer("x" * 33)
        self.assertIsNone(p.answer(Action("sync.now", [FILE], None, "cli", None)))   # nobody waits
        self.assertTrue(c.request("PING").ok)
        self.assertEqual(self.daemon.raw[1:], [b"2 PING"])
        self.assertIsNotNone(p.set("syncing", FILE, lease=1))
        self.assertIsNotNone(p.set("syncing", FILE, lease=86400))

    def test_an_action_carries_its_token(self):
        m = codec.parse_message(b"* ACTION sync.now /sync/a%20b target=/sync from=nautilus reply=r-17.x")
        self.assertEqual(Action.from_message(m), Action("sync.now", [b"/sync/a b"], b"/sync", "nautilus", None, "r-17.x"))
        m = codec.parse_message(b"* ACTION sync.now /sync/a from=cli")
        self.assertIsNone(Action.from_message(m).reply)
        m = codec.parse_message(b"* ACTION sync.now /sync/a from=cli reply=no%20token")
        self.assertIsNone(Action.from_message(m).reply)

    def test_the_daemon_refuses_a_lease_out_of_range(self):
        c = self.connection("provider")
        r = c.send("SET", "syncing", FILE, lease=0)       # past the package's own check
        self.assertTrue(r.wait(5))
        self.assertEqual(r.code, "bad-request")

    def test_unclaim(self):
        watcher = self.connection("viewer", "watcher")
        engine = self.engine()
        self.assertEqual(self.next_kind(watcher, "ROOT").opt("provider"), "engine")
        engine.set("syncing", FILE).result(5)
        engine.set("syncing", DIR + b"/a.txt", lease=600).result(5)
        engine.unclaim(ROOT).result(5)
        root = self.next_kind(watcher, "ROOT")
        self.assertEqual((root.fields, root.opt("provider")), ([ROOT, b"synced"], None))
        status = watcher.request("STATUS", FILE, DIR + b"/a.txt").items
        self.assertEqual([(i.state, i.message) for i in status],
                         [("pending", "the engine gave this folder up"), ("syncing", None)])   # the lease holds
        with self.assertRaises(ServerError) as cm:
            engine.unclaim(ROOT).result(5)
        self.assertEqual(cm.exception.code, "not-found")


class Answers(Base):
    daemon_options = {"caps": CAPS_1_2, "answer_timeout": 0.5}

    def answering(self, engine, reply):
        """The engine's loop: each `* ACTION` answered by reply(action) -> (message, failed),
        or left unanswered for None."""
        seen = []

        def run():
            while True:
                try:
                    m = engine.conn.next_push(10)
                except Disconnected:
                    return
                action = Action.from_message(m) if m is not None else None
                if action is None:
                    continue
                seen.append(action)
                out = reply(action)
                if out is not None:
                    engine.answer(action, out[0], failed=out[1])
        threading.Thread(target=run, daemon=True).start()
        return seen

    def test_the_engine_answers(self):
        engine = self.engine()
        seen = self.answering(engine, lambda a: ("copied %d file(s)" % len(a.paths), False))
        viewer = Viewer(self.connection())
        self.assertTrue(viewer.answers)
        self.assertEqual(viewer.action("sync.now", FILE, target=ROOT), "copied 1 file(s)")
        self.assertEqual(len(seen), 1)
        self.assertEqual((seen[0].id, seen[0].paths, seen[0].target, seen[0].client),
                         ("sync.now", [FILE], ROOT, "viewer"))
        self.assertIsNotNone(seen[0].reply)
        self.assertIn(b"2 ACTION sync.now /sync/report.odt target=/sync reply=1", self.daemon.raw)

    def test_a_failed_answer(self):
        engine = self.engine()
        self.answering(engine, lambda a: ("rsync: Permission denied (13)", True))
        viewer = Viewer(self.connection())
        with self.assertRaises(ActionFailed) as cm:
            viewer.action("sync.now", FILE)
        self.assertEqual((cm.exception.code, cm.exception.message), ("failed", "rsync: Permission denied (13)"))
        self.assertEqual(str(cm.exception), "failed: rsync: Permission denied (13)")
        self.assertIsInstance(cm.exception, ServerError)

    def test_no_answer_in_time_and_a_late_answer(self):
        engine = self.engine()
        seen = self.answering(engine, lambda a: None)
        viewer = Viewer(self.connection())
        with self.assertRaises(ActionTimeout) as cm:
            viewer.action("sync.now", FILE)
        self.assertEqual(cm.exception.code, "timeout")
        self.assertEqual("the engine did not answer within 10 seconds", str(cm.exception))
        with self.assertRaises(ServerError) as cm:
            engine.answer(seen[0], "too late").result(5)
        self.assertEqual(cm.exception.code, "not-found")

    def test_the_engine_leaves_before_it_answers(self):
        engine = self.engine()
        self.answering(engine, lambda a: engine.conn.close() and None)
        viewer = Viewer(self.connection())
        with self.assertRaises(NoProvider) as cm:
            viewer.action("sync.now", FILE)
        self.assertEqual(cm.exception.code, "no-provider")

    def test_no_engine(self):
        viewer = Viewer(self.connection())
        with self.assertRaises(NoProvider) as cm:
            viewer.action("sync.now", FILE)
        self.assertEqual(str(cm.exception), "no sync engine handles sync.now there")

    def test_later_requests_wait_behind_it_and_pushes_do_not(self):
        engine = self.engine()
        go = threading.Event()
        self.answering(engine, lambda a: go.wait(5) and ("done", False))
        conn = self.connection(threaded=True)
        conn.request("OBSERVE", ROOT, list=False, timeout=5)
        viewer = Viewer(conn)
        order = []
        action = viewer.send_action("sync.now", FILE, on_answer=lambda r: order.append("ACTION"))
        ping = conn.send("PING", on_answer=lambda r: order.append("PING"))
        self.daemon.put(FILE, "syncing", progress=10)    # pushed while the action waits
        push = self.next_kind(conn, "ITEM")
        self.assertEqual((push.fields, push.opt_int("progress")), ([FILE, b"syncing"], 10))
        self.assertFalse(action.done or ping.done)
        go.set()
        self.assertTrue(ping.wait(5))
        self.assertEqual(order, ["ACTION", "PING"])
        self.assertEqual(viewer.action("sync.now", FILE), "done")


class WithoutTheCaps(Base):
    daemon_options = {"caps": "observe,menus"}

    def test_no_reply_asked_and_the_delivery_is_the_answer(self):
        engine = self.engine()
        viewer = Viewer(self.connection())
        self.assertFalse(viewer.answers)
        self.assertIsNone(viewer.action("sync.now", FILE))
        sent = [r for r in self.daemon.raw if b" ACTION " in r]
        self.assertEqual(sent, [b"2 ACTION sync.now /sync/report.odt"])
        action = Action.from_message(self.next_kind(engine.conn, "ACTION"))
        self.assertIsNone(action.reply)

    def test_no_toolbar_pushes(self):
        watcher = self.connection()
        self.engine(toolbar="Engine")
        self.assertEqual([t.name for t in Viewer(watcher).toolbars(5)], ["Engine"])
        watcher.request("PING", timeout=5)
        self.assertEqual([m.kind for m in watcher.take_pushes()], ["ROOT"])

    def test_wait_observes_with_the_listing(self):
        self.daemon.put(FILE, "synced")
        wait([FILE], timeout=5, socket=self.sock)
        observe = [r for r in self.daemon.requests if r.verb == "OBSERVE"]
        self.assertEqual([(r.fields, r.options) for r in observe], [([ROOT], {})])


class Toolbars(Base):
    def test_pushed_when_it_appears_changes_and_goes(self):
        watcher = self.connection()
        quiet = self.connection(name="prompt", hello_options={"roots": 0})
        engine = self.engine(toolbar="Pause syncing")
        t = Toolbar.from_message(self.next_kind(watcher, "TOOLBAR"))
        self.assertEqual(t, Toolbar("Pause syncing", "tip", "engine", None, False))
        engine.define_toolbar("Resume syncing", "tip").result(5)
        self.assertEqual(Toolbar.from_message(self.next_kind(watcher, "TOOLBAR")).name, "Resume syncing")
        engine.unclaim(ROOT).result(5)
        gone = self.next_kind(watcher, "TOOLBAR")
        self.assertEqual(gone.raw, b"* TOOLBAR provider=engine removed")
        self.assertEqual(Toolbar.from_message(gone), Toolbar(None, None, "engine", None, True))
        engine.claim(ROOT).result(5)
        self.assertFalse(Toolbar.from_message(self.next_kind(watcher, "TOOLBAR")).removed)
        engine.conn.close()
        self.assertTrue(Toolbar.from_message(self.next_kind(watcher, "TOOLBAR")).removed)
        quiet.request("PING", timeout=5)
        self.assertEqual(quiet.take_pushes(), [])        # roots=0: no ROOT, no TOOLBAR

    def test_parsing(self):
        line = codec.parse_message(b"3 TOOLBAR name=Pause%20syncing tooltip=Pause provider=st image=/i.svg")
        self.assertEqual(Toolbar.from_message(line), Toolbar("Pause syncing", "Pause", "st", "/i.svg", False))
        pushed = codec.parse_message(b"* TOOLBAR provider=st removed")
        self.assertEqual(Toolbar.from_message(pushed), Toolbar(None, None, "st", None, True))
        self.assertIsNone(Toolbar.from_message(codec.parse_message(b"* TOOLBAR name=x")))
        self.assertIsNone(Toolbar.from_message(codec.parse_message(b"* ROOT /x synced")))


class Waiting(Base):
    def wait(self, paths, steps=(), **kw):
        """wait(), with `steps` (callables) run one by one at each progress report: the
        daemon's next change comes only once wait() has seen the last one."""
        steps = list(steps)
        seen = []

        def progress(state):
            seen.append(dict(state.left()))
            if steps:
                steps.pop(0)()
        kw.setdefault("timeout", 5)
        out = wait(paths, socket=self.sock, on_progress=progress, **kw)
        self.assertEqual(steps, [], "wait() returned before every step")
        return out, seen

    def test_already_synced(self):
        t0 = time.monotonic()
        out, _ = self.wait([DIR, DIR + b"/a.txt"])
        self.assertLess(time.monotonic() - t0, 2)
        self.assertEqual(sorted(out), [DIR, DIR + b"/a.txt"])
        self.assertEqual([r.verb for r in self.daemon.requests],
                         ["HELLO", "ROOTS", "STATUS", "OBSERVE", "OBSERVE", "STATUS"])
        observed = [(r.fields[0], r.opt("list")) for r in self.daemon.requests if r.verb == "OBSERVE"]
        self.assertEqual(observed, [(ROOT, "0"), (DIR, "0")])     # each path's parent, listing left out

    def test_a_file_through_syncing_to_synced_by_pushes_alone(self):
        out, seen = self.wait([FILE], steps=[
            lambda: self.daemon.put(FILE, "syncing", progress=40),
            lambda: self.daemon.put(FILE, "syncing", progress=90),
            lambda: self.daemon.put(FILE, "synced")])
        self.assertEqual(out[FILE].state, "synced")
        self.assertEqual([(s[FILE].state, s[FILE].progress) for s in seen if FILE in s],
                         [("pending", None), ("syncing", 40), ("syncing", 90)])
        self.assertEqual([r.verb for r in self.daemon.requests], ["HELLO", "ROOTS", "STATUS", "OBSERVE", "STATUS"])

    def test_a_directory_through_its_roll_up(self):
        self.daemon.put(DIR, "syncing", kind="dir", counts="synced:1,syncing:2")
        out, seen = self.wait([DIR], steps=[
            lambda: self.daemon.put(DIR, "pending", kind="dir", counts="synced:2,pending:1"),
            lambda: self.daemon.put(DIR, "synced", kind="dir", counts="synced:3")])
        self.assertEqual(out[DIR].counts, {"synced": 3})
        self.assertEqual([s[DIR].counts for s in seen if DIR in s],
                         [{"synced": 1, "syncing": 2}, {"synced": 2, "pending": 1}])
        self.assertEqual(seen[-1], {})

    def test_a_root_is_followed_through_its_own_observation(self):
        self.daemon.put(ROOT, "pending", kind="dir")
        self.wait([ROOT], steps=[lambda: self.daemon.put(ROOT, "synced", kind="dir")])
        self.assertEqual([r.fields[0] for r in self.daemon.requests if r.verb == "OBSERVE"], [ROOT])

    def test_an_error_with_its_message(self):
        with self.assertRaises(WaitFailed) as cm:
            self.wait([FILE], steps=[lambda: self.daemon.put(FILE, "error", message="disk full")])
        self.assertEqual((cm.exception.path, cm.exception.state, cm.exception.message), (FILE, "error", "disk full"))
        self.assertEqual(str(cm.exception), "/sync/report.odt: error: disk full")

    def test_a_conflict_in_a_directory_names_the_file(self):
        self.daemon.put(DIR + b"/sub", "conflict", kind="dir")
        self.daemon.put(DIR + b"/sub/x.txt", "conflict", message="both changed")
        self.daemon.put(DIR, "conflict", kind="dir", counts="synced:1,conflict:2")
        with self.assertRaises(WaitFailed) as cm:
            self.wait([DIR])
        self.assertEqual((cm.exception.path, cm.exception.item.path, cm.exception.message),
                         (DIR, DIR + b"/sub/x.txt", "both changed"))

    def test_timeout(self):
        t0 = time.monotonic()
        with self.assertRaises(WaitTimeout) as cm:
            self.wait([FILE, DIR], timeout=0.3)
        self.assertGreaterEqual(time.monotonic() - t0, 0.3)
        self.assertIsInstance(cm.exception, TimeoutError)
        self.assertEqual(list(cm.exception.left), [FILE])
        self.assertIn("not synced after 0.3s: /sync/report.odt (pending)", str(cm.exception))

    def test_outside_and_not_found(self):
        with self.assertRaises(WaitFailed) as cm:
            self.wait([b"/elsewhere/x"])
        self.assertEqual(cm.exception.state, "outside")
        self.assertIn("not under a registered root", str(cm.exception))
        with self.assertRaises(ServerError) as cm:
            self.wait([b"/sync/none"])
        self.assertEqual(cm.exception.code, "not-found")

    def test_a_deletion_synced_drops_the_tombstone(self):
        self.daemon.put(FILE, "pending", kind="gone")
        out, _ = self.wait([FILE], steps=[lambda: self.daemon.remove(FILE)])
        self.assertEqual(out[FILE], Item(FILE, "synced", "synced", "gone"))

    def test_relative_paths_and_str(self):
        here = os.getcwd()
        os.chdir("/")
        try:
            out, _ = self.wait(["sync/docs/../docs/a.txt"])
        finally:
            os.chdir(here)
        self.assertEqual(list(out), [DIR + b"/a.txt"])

    def test_the_daemon_goes_away(self):
        with self.assertRaises(Disconnected):
            self.wait([FILE], steps=[self.daemon.stop])


class State(unittest.TestCase):
    """WaitState, the rules without I/O."""

    def test_rules(self):
        s = WaitState([b"/r/a", b"/r/d", b"/r/a"])
        self.assertEqual(s.paths, [b"/r/a", b"/r/d"])
        self.assertFalse(s.done())
        self.assertTrue(s.update(Item(b"/r/a", "syncing", progress=10)))
        self.assertFalse(s.update(Item(b"/r/a", "syncing", progress=10)))
        self.assertFalse(s.update(Item(b"/r/other", "error")))
        self.assertTrue(s.update(Item(b"/r/d", "ignored", kind="dir")))
        self.assertEqual(list(s.left()), [b"/r/a"])
        self.assertTrue(s.update(Item(b"/r/a", "synced")))
        self.assertTrue(s.done())
        self.assertIsNone(s.failed())
        s.update(Item(b"/r/d", "conflict", kind="dir"))
        self.assertEqual(s.failed()[0], b"/r/d")
        s.update(Item(b"/r/d", "synced", kind="dir"))
        self.assertTrue(s.update_gone(b"/r/a"))
        self.assertFalse(s.update_gone(b"/r/a"))
        self.assertTrue(s.done())


class DataLines(Base):
    def test_data_lines_reach_their_callback_in_order_with_pushes(self):
        for threaded in (False, True):
            order = []
            c = self.connection(threaded=threaded, on_push=lambda m: order.append(("push", m.kind, m.fields[0])))
            c.send("SPLIT", FILE, on_data=lambda m: order.append(("data", m.kind, m.fields[0])),
                   on_answer=lambda r: order.append(("final", r.final.kind))).result(5)
            self.assertEqual(order, [("data", "DATA", FILE), ("push", "GONE", FILE), ("final", "OK")])

    def test_data_lines_left_to_their_callback_alone(self):
        c = self.connection()
        seen = []
        reply = c.send("SPLIT", FILE, on_data=seen.append, keep_data=False).result(5)
        self.assertEqual(([m.kind for m in seen], reply.data), (["DATA"], []))
        kept = c.send("SPLIT", FILE, on_data=lambda m: None).result(5)
        self.assertEqual([m.kind for m in kept.data], ["DATA"])
        with self.assertRaises(TypeError):       # the lines would go nowhere
            c.send("SPLIT", FILE, keep_data=False)


if __name__ == "__main__":
    unittest.main()

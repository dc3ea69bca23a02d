"""DirectoryFollower (syncbadge.follow) and the request builders (syncbadge.req): the follower's
rules fed lines directly (it does no I/O), then driven over a Connection, against the fake daemon
and against the real syncbadged (restarted under it)."""

import collections
import os
import shutil
import tempfile
import time
import unittest

import vectors  # noqa: F401
from fakedaemon import CAPS_1_2, FakeDaemon
from test_connection import Base as ConnectionBase
from syncbadge import (ALL, Badge, Connection, DirectoryFollower, Item, Req, Root, Toolbar, codec, follow, req,
                       testing)

Answer = collections.namedtuple("Answer", "final data")


def msg(line):
    return codec.parse_message(line.encode() if isinstance(line, str) else line)


def answer(final, *data):
    """An answer as answered() takes it: the final line and the data lines (text, tag 1)."""
    return Answer(msg("1 " + final) if final is not None else None, [msg("1 " + d) for d in data])


DOCS = b"/sync/docs"
SYNC = b"/sync"


def listing(f, request, *lines, final="OK"):
    return f.answered(request, answer(final, *lines))


def sender(conn, follower, streamed=True):
    """What a client does: sends the follower's requests, and hands their answers back. A
    listing's lines go to data() as they come and are kept nowhere else (as the file managers'
    extension does), or, with streamed=False, come whole with the answer (as ranger's does)."""
    def send_all(requests):
        for r in requests:
            if streamed and r.verb in follow.LISTINGS:
                conn.send(r, on_answer=lambda reply, r=r: send_all(follower.answered(r, reply)),
                          on_data=lambda m, r=r: follower.data(r, m), keep_data=False)
            else:
                conn.send(r, on_answer=lambda reply, r=r: send_all(follower.answered(r, reply)))
    return send_all


def pump_until(test, conn, predicate, timeout=20):
    """Reads the connection until predicate() holds; fails at the deadline or if it closes."""
    deadline = time.monotonic() + timeout
    while not predicate():
        left = deadline - time.monotonic()
        if left <= 0:
            test.fail("timed out")
        if not conn.connected:
            test.fail("the daemon went away: %s" % conn.closed_reason)
        conn.pump(left)


def pump_until_closed(test, conn, timeout=10):
    """Reads the connection until the daemon closes it; fails at the deadline."""
    deadline = time.monotonic() + timeout
    while conn.pump(max(0.0, deadline - time.monotonic())):
        if time.monotonic() > deadline:
            test.fail("the daemon did not close the connection")


class Builders(unittest.TestCase):
    def test_each_verb_as_the_daemon_reads_it(self):
        cases = [
            (req.hello("viewer", "nautilus", roots=False), b"1 HELLO proto=1 role=viewer name=nautilus roots=0"),
            (req.hello("admin"), b"1 HELLO proto=1 role=admin"),
            (req.ping(), b"1 PING"), (req.bye(), b"1 BYE"), (req.roots(), b"1 ROOTS"),
            (req.badges(), b"1 BADGES"), (req.stats(), b"1 STATS"), (req.toolbar(), b"1 TOOLBAR"),
            (req.status(b"/a", "/b c"), b"1 STATUS /a /b%20c"),
            (req.list_dir(b"/a"), b"1 LIST /a"),
            (req.observe(b"/a"), b"1 OBSERVE /a"), (req.observe(b"/a", listing=False), b"1 OBSERVE /a list=0"),
            (req.unobserve(b"/a"), b"1 UNOBSERVE /a"),
            (req.menu("items", b"/a/x", b"/a/y", target=b"/a"), b"1 MENU items /a/x /a/y target=/a"),
            (req.menu("toolbar", provider="rsync"), b"1 MENU toolbar provider=rsync"),
            (req.action("sync.now", b"/a/x", target=b"/a", reply=True), b"1 ACTION sync.now /a/x target=/a reply=1"),
            (req.action("go", provider="p"), b"1 ACTION go provider=p"),
            (req.add_root(b"/r"), b"1 ADD-ROOT /r"), (req.remove_root(b"/r"), b"1 REMOVE-ROOT /r"),
            (req.claim(b"/r"), b"1 CLAIM /r"), (req.unclaim(b"/r"), b"1 UNCLAIM /r"),
            (req.changes(b"/r"), b"1 CHANGES /r"), (req.subscribe_changes(b"/r"), b"1 SUBSCRIBE-CHANGES /r"),
            (req.set_state("syncing", b"/r/f", gen=4, progress=40, lease=60),
             b"1 SET syncing /r/f gen=4 progress=40 lease=60"),
            (req.set_state("synced", b"/r", recursive=True, message="ok done"),
             b"1 SET synced /r message=ok%20done recursive=1"),
            (req.answer("t1", "copied", failed=True), b"1 ANSWER t1 message=copied failed=1"),
            (req.define_badge("b1", "Label", "*", "*", "red", image="/i.svg"),
             b"1 DEFINE-BADGE b1 label=Label glyph=* ascii=* color=red image=/i.svg"),
            (req.define_menu("items", "sync.now", "Sync now", states=["pending", "error"]),
             b"1 DEFINE-MENU items sync.now title=Sync%20now states=pending,error"),
            (req.define_menu("container", "x", "X", enabled=False), b"1 DEFINE-MENU container x title=X enabled=0"),
            (req.define_toolbar("Mirror", "tip"), b"1 DEFINE-TOOLBAR name=Mirror tooltip=tip"),
        ]
        for r, line in cases:
            self.assertEqual(r.line("1"), line + b"\n")
            parsed = codec.parse_request(line)
            self.assertEqual(parsed.verb, r.verb)

    def test_values_and_refusals(self):
        self.assertEqual(req.observe(b"/a"), Req("OBSERVE", [b"/a"]))
        self.assertEqual(req.observe(b"/a").path, b"/a")
        self.assertEqual(req.menu("items", target=b"/t").option("target"), b"/t")
        self.assertIsNone(req.ping().path)
        for lease in (0, 86401, True, 1.5):
            with self.assertRaises(ValueError):
                req.set_state("syncing", b"/a", lease=lease)
        with self.assertRaises(ValueError):
            req.set_state("synced", b"/a", lease=5)
        with self.assertRaises(ValueError):
            req.answer("not a token")
        with self.assertRaises(ValueError):
            req.status()
        with self.assertRaises(ValueError):
            req.status("x=y").line("1")        # would read as an option


class Following(unittest.TestCase):
    def online(self, **kw):
        f = DirectoryFollower(**kw)
        f.connected(CAPS_1_2.split(","))
        return f

    def observed(self, f, path=DOCS, *lines):
        (observe,) = [r for r in f.follow(path) if r.verb == "OBSERVE"]
        self.assertEqual(observe, req.observe(path))
        self.assertEqual(f.directory(path).status, follow.ASKED)
        self.assertIsNone(f.items(path))
        self.assertEqual(listing(f, observe, *lines), [])
        return observe

    def test_listing_then_pushes(self):
        f = self.online()
        self.observed(f, DOCS, "ITEM /sync/docs/a synced badge=synced kind=file gen=3",
                      "ITEM /sync/docs/sub pending badge=pending kind=dir gen=1 counts=pending:2")
        c = f.take_changes()
        self.assertEqual((c.dirs, c.listed), ({DOCS: ALL}, {DOCS}))
        self.assertEqual(f.item(DOCS + b"/a"), Item(DOCS + b"/a", "synced", "synced", "file", 3))
        self.assertEqual(f.item(DOCS + b"/sub").counts, {"pending": 2})
        self.assertFalse(f.take_changes())

        self.assertEqual(f.push(msg("* ITEM /sync/docs/a syncing badge=syncing kind=file gen=4 progress=40")), [])
        self.assertEqual(f.push(msg("* ITEM /sync/docs/new pending badge=pending kind=file gen=1")), [])
        self.assertEqual(f.push(msg("* ITEM /elsewhere/x pending badge=pending kind=file gen=1")), [])
        self.assertEqual(f.take_changes().dirs, {DOCS: {b"a", b"new"}})
        self.assertEqual(f.item(DOCS + b"/a").progress, 40)
        self.assertIsNone(f.item(b"/elsewhere/x"))
        # A new gen alone is nothing a viewer sees.
        f.push(msg("* ITEM /sync/docs/a syncing badge=syncing kind=file gen=5 progress=40"))
        self.assertFalse(f.take_changes())
        self.assertEqual(f.item(DOCS + b"/a").gen, 5)

    def test_own_item_status_and_gone(self):
        f = self.online()
        self.observed(f, DOCS, "ITEM /sync/docs/a synced badge=synced kind=file gen=3")
        f.take_changes()
        f.push(msg("* ITEM /sync/docs error badge=error kind=dir gen=2 counts=error:1"))
        self.assertEqual(f.take_changes().dirs, {DOCS: {follow.SELF}})
        self.assertEqual(f.item(DOCS).state, "error")
        # STATUS of a path outside every followed directory is kept where item() finds it.
        status = f.status(b"/sync/other", DOCS + b"/a")
        self.assertEqual(status, req.status(b"/sync/other", DOCS + b"/a"))
        f.answered(status, answer("OK", "ITEM /sync/other conflict badge=conflict kind=file gen=9",
                                  "ITEM /sync/docs/a error badge=error kind=file gen=4"))
        self.assertEqual(f.take_changes().dirs, {SYNC: {b"other"}, DOCS: {b"a"}})
        self.assertEqual((f.item(b"/sync/other").state, f.item(DOCS + b"/a").state), ("conflict", "error"))
        # A child goes; then the directory itself: its observation ended, it is forgotten.
        self.assertEqual(f.push(msg("* GONE /sync/docs/a")), [])
        self.assertEqual(f.take_changes().dirs, {DOCS: {b"a"}})
        self.assertIsNone(f.item(DOCS + b"/a"))
        self.assertEqual(f.push(msg("* GONE /sync/docs")), [])       # no UNOBSERVE: nothing to end
        c = f.take_changes()
        self.assertEqual((set(c.forgotten), c.dirs), ({DOCS}, {DOCS: ALL}))
        self.assertIsNone(f.directory(DOCS))
        self.assertEqual(f.follow(DOCS), [req.observe(DOCS)])       # made again: observed anew

    def test_reset_lists_again_and_reports_what_differs(self):
        f = self.online()
        self.observed(f, DOCS, "ITEM /sync/docs/a synced badge=synced kind=file gen=3",
                      "ITEM /sync/docs/b synced badge=synced kind=file gen=3",
                      "ITEM /sync/docs/c synced badge=synced kind=file gen=3")
        f.take_changes()
        (relist,) = f.push(msg("* RESET /sync/docs"))
        self.assertEqual(relist, req.list_dir(DOCS))
        self.assertEqual(f.push(msg("* RESET /sync/elsewhere")), [])
        f.answered(relist, answer("OK count=3", "ITEM /sync/docs/a synced badge=synced kind=file gen=7",
                                  "ITEM /sync/docs/b pending badge=pending kind=file gen=4",
                                  "ITEM /sync/docs/d pending badge=pending kind=file gen=1"))
        self.assertEqual(f.take_changes().dirs, {DOCS: {b"b", b"c", b"d"}})
        self.assertEqual(sorted(f.items(DOCS)), [b"a", b"b", b"d"])
        self.assertEqual(f.answered(relist, answer("OK")), [])      # answered once only
        self.assertFalse(f.take_changes())

    def test_listings_read_as_their_lines_arrive(self):
        problems = lambda item: item.state in ("error", "conflict")
        f = self.online(keep=problems)
        (observe,) = f.follow(DOCS)
        for line in ("ITEM /sync/docs/a error badge=error kind=file gen=3",
                     "ITEM /sync/docs/b synced badge=synced kind=file gen=3"):
            f.data(observe, msg("1 " + line))
        self.assertIsNone(f.items(DOCS))                            # nothing shown before the OK
        # The final line alone: what data() read is the listing, as `keep` took it.
        self.assertEqual(f.answered(observe, answer("OK count=2")), [])
        self.assertEqual(sorted(f.items(DOCS)), [b"a"])
        self.assertEqual(f.take_changes().dirs, {DOCS: ALL})
        # A LIST after a RESET the same way; only what differs is reported.
        (relist,) = f.push(msg("* RESET /sync/docs"))
        f.data(relist, msg("1 ITEM /sync/docs/a error badge=error kind=file gen=4"))
        f.data(relist, msg("1 ITEM /sync/docs/c conflict badge=conflict kind=file gen=1"))
        f.answered(relist, answer("OK count=2"))
        self.assertEqual(f.take_changes().dirs, {DOCS: {b"c"}})
        self.assertEqual(sorted(f.items(DOCS)), [b"a", b"c"])
        # Lines of an answer no longer waited for are not taken, nor kept for the next one.
        (again,) = f.push(msg("* RESET /sync/docs"))
        f.data(relist, msg("1 ITEM /sync/docs/x error badge=error kind=file gen=1"))
        f.data(req.list_dir(DOCS), msg("1 ITEM /sync/docs/y error badge=error kind=file gen=1"))
        self.assertIsNone(f.directory(DOCS).incoming)
        f.answered(again, answer("OK count=1", "ITEM /sync/docs/a error badge=error kind=file gen=5"))
        self.assertEqual(sorted(f.items(DOCS)), [b"a"])
        # A refusal drops what was read.
        f.unfollow(DOCS)
        (observe,) = f.follow(DOCS)
        f.data(observe, msg("1 ITEM /sync/docs/a error badge=error kind=file gen=5"))
        f.answered(observe, answer("ERR not-found no such directory"))
        self.assertEqual((f.items(DOCS), f.directory(DOCS).incoming), ({}, None))

    def test_keep_stores_only_what_it_takes(self):
        problems = lambda item: item.kind == "dir" or item.state in ("error", "conflict")
        f = self.online(keep=problems)
        self.observed(f, DOCS, "ITEM /sync/docs/a synced badge=synced kind=file gen=3",
                      "ITEM /sync/docs/b conflict badge=conflict kind=file gen=3",
                      "ITEM /sync/docs/sub synced badge=synced kind=dir gen=1")
        f.take_changes()
        self.assertEqual(sorted(f.items(DOCS)), [b"b", b"sub"])
        # A refused child that a push makes a problem is stored; a kept one that a push makes
        # refused is dropped, and both are reported.
        f.push(msg("* ITEM /sync/docs/a error badge=error kind=file gen=4"))
        f.push(msg("* ITEM /sync/docs/b synced badge=synced kind=file gen=4"))
        f.push(msg("* ITEM /sync/docs/c synced badge=synced kind=file gen=1"))
        self.assertEqual(f.take_changes().dirs, {DOCS: {b"a", b"b"}})
        self.assertEqual(sorted(f.items(DOCS)), [b"a", b"sub"])
        # A listing again (RESET) keeps the same way.
        (relist,) = f.push(msg("* RESET /sync/docs"))
        f.answered(relist, answer("OK count=2", "ITEM /sync/docs/a synced badge=synced kind=file gen=5",
                                  "ITEM /sync/docs/c conflict badge=conflict kind=file gen=2"))
        self.assertEqual(f.take_changes().dirs, {DOCS: {b"a", b"c", b"sub"}})
        self.assertEqual(sorted(f.items(DOCS)), [b"c"])

    def test_least_recently_followed_go_first(self):
        f = self.online(max_dirs=2)
        a, b, c = b"/sync/a", b"/sync/b", b"/sync/c"
        oa = self.observed(f, a)
        self.observed(f, b)
        self.assertEqual(f.follow(a), [])                              # a is the most recent now
        self.assertEqual(f.follow(c), [req.unobserve(b), req.observe(c)])
        self.assertEqual(list(f.dirs), [a, c])
        self.assertEqual(set(f.take_changes().forgotten), {b})
        # An answer for a directory given up meanwhile is not taken.
        self.assertEqual(f.unfollow(a), [req.unobserve(a)])
        f.follow(a)
        self.assertEqual(f.answered(oa, answer("OK", "ITEM /sync/a/x synced badge=synced kind=file gen=1")), [])
        self.assertIsNone(f.items(a))
        self.assertEqual(f.directory(a).status, follow.ASKED)

    def test_refused_then_observed_again(self):
        f = self.online(roots=True)
        listing(f, f.connected([])[0], "ROOT /sync synced")
        (o,) = f.follow(b"/other/d")
        f.answered(o, answer("ERR outside"))
        c = f.take_changes()
        self.assertEqual((c.refused, c.dirs), ({b"/other/d": "outside"}, {b"/other/d": ALL}))
        self.assertEqual((f.items(b"/other/d"), f.directory(b"/other/d").status), ({}, follow.REFUSED))
        self.assertEqual(f.retry(b"/sync"), [])                        # not followed
        # A root over it: observed again once the root is scanned.
        self.assertEqual(f.push(msg("* ROOT /other unknown watches=0 scanning=1")), [])
        self.assertEqual(f.push(msg("* ROOT /other unknown watches=3")), [req.observe(b"/other/d")])
        self.assertEqual(f.roots[b"/other"], Root(b"/other", "unknown", None, 3, False, None, None, False))
        self.assertEqual(f.take_changes().roots, {b"/other"})
        # not-found (made a moment ago): the caller's retry, or the directory's own ITEM.
        (o,) = f.follow(b"/sync/new")
        f.answered(o, answer("ERR not-found message=/sync/new"))
        self.assertEqual(f.take_changes().refused, {b"/sync/new": "not-found"})
        self.assertEqual(f.retry(b"/sync/new"), [req.observe(b"/sync/new")])
        f.answered(f.directory(b"/sync/new").request, answer("ERR not-found"))
        self.assertEqual(f.push(msg("* ITEM /sync/new pending badge=pending kind=dir gen=1 counts=")),
                         [req.observe(b"/sync/new")])

    def test_refusals_only_a_root_can_mend_are_asked_again(self):
        f = self.online(roots=True)
        listing(f, f.connected([])[0], "ROOT /sync synced")
        (o,) = f.follow(b"/sync/file")
        f.answered(o, answer("ERR not-a-directory"))
        self.assertEqual(f.push(msg("* ROOT /sync pending watches=3")), [])
        self.assertEqual(f.push(msg("* ITEM /sync/file pending badge=pending kind=file gen=2")), [])
        with self.assertRaises(ValueError):
            f.follow(b"relative/dir")

    def test_looked_up_paths_follow_pushes_and_roots(self):
        f = self.online(roots=True)
        listing(f, f.connected([])[0], "ROOT /sync synced")
        status = f.status(b"/sync/far/x")
        f.answered(status, answer("OK", "ITEM /sync/far/x synced badge=synced kind=file gen=1"))
        f.take_changes()
        f.push(msg("* ITEM /sync/far/x error badge=error kind=file gen=2"))
        self.assertEqual(f.item(b"/sync/far/x").state, "error")
        self.assertEqual(f.take_changes().dirs, {b"/sync/far": {b"x"}})
        f.push(msg("* ITEM /sync/far/y error badge=error kind=file gen=2"))   # never asked: not kept
        self.assertIsNone(f.item(b"/sync/far/y"))
        f.push(msg("* ROOT /sync removed"))
        self.assertIsNone(f.item(b"/sync/far/x"))
        # At most LOOKED_MAX of them, the least recently asked dropped first.
        lines = ["ITEM /sync/n%d synced badge=synced kind=file gen=1" % i for i in range(follow.LOOKED_MAX + 10)]
        f.answered(f.status(b"/sync/n0"), answer("OK", *lines))
        self.assertEqual(len(f.looked), follow.LOOKED_MAX)
        self.assertIsNone(f.item(b"/sync/n0"))

    def test_a_new_daemon_says_which_badges_there_are(self):
        f = DirectoryFollower(badges=True)
        (ask,) = f.connected([])
        f.answered(ask, answer("OK", "BADGE synced label=Synced glyph=s ascii=s color=green",
                               "BADGE mine label=Mine glyph=m ascii=m color=red"))
        f.take_changes()
        f.disconnected()
        self.assertEqual(sorted(f.badges), ["mine", "synced"])             # kept until the answer
        (ask,) = f.connected([])
        f.answered(ask, answer("OK", "BADGE synced label=Synced glyph=s ascii=s color=green"))
        self.assertEqual(sorted(f.badges), ["synced"])
        self.assertEqual(f.take_changes().badges, {"mine"})
        # An engine defines "mine" again on the new daemon: asked, although once known.
        self.observed(f, DOCS)
        self.assertEqual(f.push(msg("* ITEM /sync/docs/a synced badge=mine kind=file gen=1")), [req.badges()])

    def test_root_removed_empties_what_is_below(self):
        f = self.online(roots=True)
        listing(f, f.connected([])[0], "ROOT /sync synced provider=rsync", "ROOT /music pending")
        self.assertEqual(sorted(f.roots), [b"/music", SYNC])
        self.assertEqual(f.roots[SYNC].provider, "rsync")
        self.observed(f, DOCS, "ITEM /sync/docs/a synced badge=synced kind=file gen=3")
        self.observed(f, b"/music/x")
        f.take_changes()
        self.assertEqual(f.push(msg("* ROOT /sync removed")), [])
        c = f.take_changes()
        self.assertEqual((c.dirs, c.roots), ({DOCS: ALL}, {SYNC}))
        self.assertEqual((f.items(DOCS), f.directory(DOCS).code), ({}, "outside"))
        self.assertEqual(list(f.roots), [b"/music"])
        self.assertEqual(f.push(msg("* ITEM /sync/docs/a synced badge=synced kind=file gen=3")), [])
        self.assertIsNone(f.item(DOCS + b"/a"))

    def test_toolbar_items(self):
        f = DirectoryFollower(toolbars=True)
        (ask,) = f.connected(["toolbar-push"])
        self.assertEqual(ask, req.toolbar())
        f.push(msg("* TOOLBAR name=Early tooltip=t provider=early"))   # the answer says it all
        f.answered(ask, answer("OK", "TOOLBAR name=Mirror tooltip=rsync provider=rsync",
                               "TOOLBAR name=Git tooltip=g provider=git"))
        self.assertEqual([t.provider for t in f.toolbars], ["rsync", "git"])
        self.assertTrue(f.take_changes().toolbars)
        f.push(msg("* TOOLBAR name=Mirror2 tooltip=rsync provider=rsync"))
        f.push(msg("* TOOLBAR name=New tooltip=n provider=new"))
        f.push(msg("* TOOLBAR provider=git removed"))
        self.assertEqual(f.toolbars, [Toolbar("Mirror2", "rsync", "rsync", None, False),
                                      Toolbar("New", "n", "new", None, False)])
        self.assertTrue(f.take_changes().toolbars)
        f.push(msg("* TOOLBAR name=New tooltip=n provider=new"))
        self.assertFalse(f.take_changes())
        self.assertEqual(f.push(msg("* ROOT /sync synced")), [])       # the daemon pushes them
        # A daemon without toolbar-push is asked again after each * ROOT: a * ROOT read before
        # the answer to a TOOLBAR already sent is in that answer.
        (ask,) = f.connected([])
        self.assertIsNone(f.toolbars)
        self.assertEqual(f.push(msg("* ROOT /sync synced provider=rsync")), [])
        f.answered(ask, answer("OK", "TOOLBAR name=Mirror tooltip=rsync provider=rsync"))
        self.assertEqual([t.name for t in f.toolbars], ["Mirror"])
        (again,) = f.push(msg("* ROOT /sync synced"))
        self.assertEqual(again, req.toolbar())
        self.assertEqual(f.answered(ask, answer("OK")), [])             # no longer waited for
        self.assertEqual([t.name for t in f.toolbars], ["Mirror"])
        f.answered(again, answer("OK"))
        self.assertEqual(f.toolbars, [])
        self.assertTrue(f.take_changes().toolbars)


    def test_badges(self):
        f = DirectoryFollower(badges=True)
        (ask,) = f.connected(["badge-push"])
        self.observed(f, DOCS)
        # Unknown before BADGES answered: that answer will say.
        self.assertEqual(f.push(msg("* ITEM /sync/docs/a synced badge=synced kind=file gen=1")), [])
        f.answered(ask, answer("OK", "BADGE synced label=Synced glyph=%E2%9C%93 ascii== color=green image=/s.svg"))
        self.assertEqual(f.badges["synced"], Badge("synced", "Synced", "\u2713", "=", "green", "/s.svg"))
        self.assertEqual(f.take_changes().badges, {"synced"})
        f.push(msg("* BADGE star label=Star glyph=* ascii=* color=yellow"))
        self.assertEqual(f.take_changes().badge_pushes, {"star"})
        # A badge no one announced: BADGES again, once for it.
        (again,) = f.push(msg("* ITEM /sync/docs/a synced badge=mine kind=file gen=1"))
        self.assertEqual(again, req.badges())
        self.assertEqual(f.push(msg("* ITEM /sync/docs/b synced badge=mine kind=file gen=1")), [])
        f.answered(again, answer("OK"))
        self.assertEqual(f.push(msg("* ITEM /sync/docs/a synced badge=mine kind=file gen=1")), [])

    def test_reconnect_observes_everything_again(self):
        f = DirectoryFollower(max_dirs=8, roots=True, toolbars=True, badges=True)
        self.assertEqual(f.follow(DOCS), [])                             # no connection yet
        self.assertEqual(f.directory(DOCS).status, follow.NEW)
        first = f.connected([])
        self.assertEqual(first, [req.roots(), req.toolbar(), req.badges(), req.observe(DOCS)])
        f.answered(first[0], answer("OK", "ROOT /sync synced"))
        f.answered(first[1], answer("OK", "TOOLBAR name=M tooltip=t provider=m"))
        f.answered(first[3], answer("OK", "ITEM /sync/docs/a synced badge=synced kind=file gen=1"))
        self.observed(f, b"/sync/more")
        f.take_changes()
        f.disconnected()
        c = f.take_changes()
        self.assertEqual((c.dirs, c.roots, c.toolbars), ({DOCS: ALL, b"/sync/more": ALL}, {SYNC}, True))
        self.assertEqual((f.items(DOCS), f.item(DOCS + b"/a"), f.roots, f.toolbars), (None, None, None, None))
        self.assertEqual(f.follow(b"/sync/third"), [])                   # while down: observed at connect
        again = f.connected([])
        self.assertEqual(again, [req.roots(), req.toolbar(), req.badges(), req.observe(DOCS),
                                 req.observe(b"/sync/more"), req.observe(b"/sync/third")])
        self.assertIsNot(again[3], first[3])
        # The old connection's answers, late, change nothing.
        self.assertEqual(f.answered(first[3], answer("OK", "ITEM /sync/docs/z synced badge=synced kind=file gen=1")),
                         [])
        self.assertIsNone(f.items(DOCS))
        self.assertEqual(f.answered(again[3], answer(None)), [])         # closed before the answer
        f.answered(again[3], answer("OK", "ITEM /sync/docs/b synced badge=synced kind=file gen=1"))
        self.assertEqual(sorted(f.items(DOCS)), [b"b"])


    def test_a_held_listing_answers_until_the_new_one_says_what_differs(self):
        f = self.online(max_dirs=8)
        a, b = b"/sync/docs/a", b"/sync/docs/b"
        self.observed(f, DOCS, "ITEM /sync/docs/a synced badge=synced kind=file gen=1",
                      "ITEM /sync/docs/b synced badge=synced kind=file gen=1",
                      "ITEM /sync/docs/c synced badge=synced kind=file gen=1")
        self.observed(f, b"/sync/gone")
        f.push(msg("* ITEM /sync/docs synced badge=synced kind=dir gen=1"))
        f.take_changes()
        f.disconnected(hold=True)
        # Nothing to redraw but the directories' own items (not held): the files keep theirs.
        self.assertEqual(f.take_changes().dirs, {DOCS: {follow.SELF}})
        self.assertEqual((f.item(a).state, f.directory(DOCS).status, f.directory(DOCS).held),
                         ("synced", follow.NEW, True))
        self.assertIsNone(f.item(DOCS))
        f.disconnected(hold=True)                                        # a failed reconnect: still held
        again = f.connected([])
        self.assertEqual(again, [req.observe(DOCS), req.observe(b"/sync/gone")])
        self.assertFalse(f.take_changes())
        self.assertEqual(f.item(a).state, "synced")                      # until the new listing
        # A push for a held directory before its listing is not applied: the listing has it.
        f.push(msg("* ITEM /sync/docs/a error badge=error kind=file gen=9"))
        self.assertEqual(f.item(a).state, "synced")
        # The new daemon's listing: a changed, b the same (a new gen is no difference), c gone, d new.
        listing(f, again[0], "ITEM /sync/docs/a pending badge=pending kind=file gen=1",
                "ITEM /sync/docs/b synced badge=synced kind=file gen=7",
                "ITEM /sync/docs/d synced badge=synced kind=file gen=1")
        c = f.take_changes()
        self.assertEqual((c.dirs, c.listed), ({DOCS: {b"a", b"c", b"d"}}, {DOCS}))
        self.assertEqual((f.item(a).state, f.item(b).gen, f.item(DOCS + b"/c")), ("pending", 7, None))
        self.assertFalse(f.directory(DOCS).held)
        # Refused now: everything goes.
        listing(f, again[1], final="ERR not-found")
        self.assertEqual(f.take_changes().dirs, {b"/sync/gone": ALL})
        self.assertFalse(f.directory(b"/sync/gone").held)

    def test_release_drops_what_is_still_held(self):
        f = self.online(max_dirs=8)
        self.observed(f, DOCS, "ITEM /sync/docs/a synced badge=synced kind=file gen=1")
        self.observed(f, b"/sync/more", "ITEM /sync/more/x synced badge=synced kind=file gen=1")
        f.disconnected(hold=True)
        again = f.connected([])
        listing(f, again[0], "ITEM /sync/docs/a synced badge=synced kind=file gen=2")
        f.take_changes()
        f.release()                                                      # /sync/more not listed yet
        self.assertEqual(f.take_changes().dirs, {b"/sync/more": ALL})
        self.assertEqual((f.item(DOCS + b"/a").state, f.items(b"/sync/more")), ("synced", None))
        f.release()
        self.assertFalse(f.take_changes())
        # Its listing comes after the release: a listing like any first one.
        listing(f, again[1], "ITEM /sync/more/x synced badge=synced kind=file gen=1")
        self.assertEqual(f.take_changes().dirs, {b"/sync/more": ALL})
        # Without hold, as before: everything dropped and reported, held or not.
        f.disconnected(hold=True)
        f.disconnected()
        self.assertEqual(f.take_changes().dirs, {DOCS: ALL, b"/sync/more": ALL})
        self.assertEqual((f.items(DOCS), f.directory(DOCS).held), (None, False))

    def test_a_held_listing_come_again_unchanged_is_reported_as_listed(self):
        # Nothing to redraw, but the caller hears that the directory is listed (the GTK
        # extension prefetches its menus then, after a new daemon dropped them).
        f = self.online(max_dirs=8)
        self.observed(f, DOCS, "ITEM /sync/docs/a synced badge=synced kind=file gen=1")
        self.observed(f, b"/sync/more", "ITEM /sync/more/x synced badge=synced kind=file gen=1")
        self.assertFalse(f.holding)
        f.disconnected(hold=True)
        self.assertTrue(f.holding)
        again = f.connected([])
        f.take_changes()
        listing(f, again[0], "ITEM /sync/docs/a synced badge=synced kind=file gen=4")
        c = f.take_changes()
        self.assertTrue(c)
        self.assertEqual((c.dirs, c.listed), ({}, {DOCS}))
        self.assertTrue(f.holding)                                       # /sync/more still is
        listing(f, again[1], "ITEM /sync/more/x synced badge=synced kind=file gen=1")
        self.assertEqual(f.take_changes().listed, {b"/sync/more"})
        self.assertFalse(f.holding)


class OverAConnection(ConnectionBase):
    """The follower driven by a Connection, as a client drives it, against the fake daemon,
    listings streamed to data() (WholeAnswers: given whole with the answer)."""
    daemon_options = {"caps": CAPS_1_2}
    streamed = True

    def drive(self, follower):
        send_all = None
        conn = self.connection(on_push=lambda m: send_all(follower.push(m)),
                               on_hello=lambda c: send_all(follower.connected(c.caps)),
                               on_close=lambda c, why: follower.disconnected())
        send_all = sender(conn, follower, self.streamed)
        return conn, send_all

    def test_follows_pushes_and_a_new_daemon(self):
        self.daemon.add_root(SYNC)
        self.daemon.put(DOCS, "synced", kind="dir")
        self.daemon.put(DOCS + b"/a", "synced")
        f = DirectoryFollower(toolbars=True)
        conn, send_all = self.drive(f)
        conn.open()
        send_all(f.follow(DOCS))
        pump_until(self, conn, lambda: f.items(DOCS) is not None)
        self.assertEqual(f.item(DOCS + b"/a").state, "synced")
        self.assertEqual(f.take_changes().dirs, {DOCS: ALL})
        self.daemon.put(DOCS + b"/a", "syncing", progress=10)
        pump_until(self, conn, lambda: f.item(DOCS + b"/a").state == "syncing")
        self.assertEqual(f.take_changes().dirs, {DOCS: {b"a"}})
        # The daemon goes, another comes: the follower observes again with no help.
        self.daemon.stop()
        pump_until_closed(self, conn)
        self.assertIsNone(f.items(DOCS))
        self.daemon = FakeDaemon(self.sock, epoch="e2", caps=CAPS_1_2)
        self.daemon.add_root(SYNC)
        self.daemon.put(DOCS, "synced", kind="dir")
        self.daemon.put(DOCS + b"/b", "error")
        conn.open()
        self.assertTrue(conn.new_epoch)
        pump_until(self, conn, lambda: f.items(DOCS) is not None)
        self.assertEqual(sorted(f.items(DOCS)), [b"b"])
        observes = [r for r in self.daemon.requests if r.verb == "OBSERVE"]
        self.assertEqual([r.fields for r in observes], [[DOCS]])


class OverAConnectionWholeAnswers(OverAConnection):
    streamed = False


@unittest.skipUnless(os.path.isfile(testing.daemon_binary()) and os.access(testing.daemon_binary(), os.X_OK),
                     "no syncbadged built (swift build)")
class AgainstTheDaemon(unittest.TestCase):
    """The real daemon: a change on disk reaches the follower's cache; after the daemon is
    killed and started again, the follower observes again and its cache is whole."""

    def setUp(self):
        self.dir = os.path.realpath(tempfile.mkdtemp(prefix="sbfollow-"))
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.root = os.path.join(self.dir, "root")
        os.makedirs(os.path.join(self.root, "docs"))
        with open(os.path.join(self.root, "docs", "a.txt"), "w") as fh:
            fh.write("a")
        self.daemon = testing.Daemon(os.path.join(self.dir, "d")).start()
        self.addCleanup(self.daemon.stop)
        admin = self.daemon.connect("admin", "test")
        admin.request(req.add_root(os.fsencode(self.root)), timeout=30)
        admin.close()

    def test_change_then_restart(self):
        docs = os.fsencode(os.path.join(self.root, "docs"))
        f = DirectoryFollower(max_dirs=4, roots=True, badges=True)
        send_all = None
        conn = Connection(self.daemon.socket, name="follow-test", on_push=lambda m: send_all(f.push(m)),
                          on_hello=lambda c: send_all(f.connected(c.caps)), on_close=lambda c, why: f.disconnected())
        self.addCleanup(conn.close)
        send_all = sender(conn, f)
        conn.open(10)
        send_all(f.follow(docs))
        pump_until(self, conn, lambda: f.items(docs) is not None and f.roots is not None)
        self.assertEqual(list(f.items(docs)), [b"a.txt"])
        self.assertIn(os.fsencode(self.root), f.roots)
        self.assertIn("synced", f.badges)
        f.take_changes()
        with open(os.path.join(self.root, "docs", "b.txt"), "w") as fh:
            fh.write("b")
        pump_until(self, conn, lambda: f.item(docs + b"/b.txt") is not None)
        self.assertEqual(f.item(docs + b"/b.txt").state, "pending")
        self.assertIn(b"b.txt", f.take_changes().names(docs))
        epoch = conn.epoch
        self.daemon.kill()
        pump_until_closed(self, conn)
        self.assertIsNone(f.items(docs))
        self.daemon.start()
        conn.open(10)
        self.assertNotEqual(conn.epoch, epoch)
        pump_until(self, conn, lambda: f.items(docs) is not None)
        self.assertEqual(sorted(f.items(docs)), [b"a.txt", b"b.txt"])
        with open(os.path.join(self.root, "docs", "c.txt"), "w") as fh:
            fh.write("c")
        pump_until(self, conn, lambda: f.item(docs + b"/c.txt") is not None)


if __name__ == "__main__":
    unittest.main()

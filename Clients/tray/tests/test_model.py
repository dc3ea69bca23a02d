"""The tray's model without D-Bus or a daemon: the walk to the problem paths, what the panel
shows, and the notifications' coalescing and snooze (the clock is passed in)."""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.normpath(os.path.join(HERE, "..", "..", "python")), os.path.normpath(os.path.join(HERE, ".."))]

from syncbadge import codec  # noqa: E402
from syncbadge_tray import model  # noqa: E402


def line(text):
    return codec.parse_message(text.encode())


def item(text):
    return codec.Item.from_message(line(text))


class Reply(object):
    """What the follower reads of an answer: its data lines and final line."""

    def __init__(self, lines, final="1 OK"):
        self.data = [line(t) for t in lines]
        self.final = line(final)


def verbs(requests):
    return [(r.verb,) + tuple(r.fields) for r in requests]


CAPS = ["observe", "toolbar-push", "provider-address", "action-reply"]


class Daemon(object):
    """Answers the walk's requests from a table of listings: {path: [ITEM lines]} for OBSERVE/LIST,
    {path: ITEM line} for STATUS, the ROOT and TOOLBAR lines; what was sent is kept in order."""

    def __init__(self, walk, roots, listings, statuses=None, toolbars=()):
        self.walk = walk
        self.roots = roots
        self.listings = listings
        self.statuses = statuses or {}
        self.toolbars = toolbars
        self.sent = []

    def run(self, requests):
        queue = list(requests)
        while queue:
            r = queue.pop(0)
            self.sent.append((r.verb,) + tuple(r.fields))
            if r.verb == "ROOTS":
                reply = Reply(["1 ROOT " + t for t in self.roots])
            elif r.verb == "TOOLBAR":
                reply = Reply(["1 TOOLBAR " + t for t in self.toolbars])
            elif r.verb in ("OBSERVE", "LIST"):
                reply = Reply(["1 ITEM " + t for t in self.listings.get(r.fields[0].decode(), [])])
            elif r.verb == "STATUS":
                reply = Reply(["1 ITEM " + self.statuses[r.fields[0].decode()]])
            else:
                reply = Reply([])
            queue += self.walk.answered(r, reply)

    def push(self, text):
        self.run(self.walk.push(line("* " + text)))


def started(listings=None, statuses=None):
    w = model.Walk()
    d = Daemon(w, ["/r conflict provider=e", "/s synced"], listings or {}, dict({
        "/r": "/r conflict badge=conflict kind=dir gen=1 counts=synced:12408,syncing:2,conflict:1",
        "/s": "/s synced badge=synced kind=dir gen=1 counts=synced:3"}, **(statuses or {})))
    d.run(w.connected(CAPS))
    w.settled()
    return w, d


class WalkTest(unittest.TestCase):
    def test_walks_down_only_where_the_counts_say_problems(self):
        w, d = started({"/r": ["/r/a synced badge=synced kind=dir gen=1 counts=synced:5000",
                               "/r/b conflict badge=conflict kind=dir gen=1 counts=synced:9,conflict:1",
                               "/r/x.txt error badge=error kind=file gen=1 message=disk%20full"],
                        "/r/b": ["/r/b/c.txt conflict badge=conflict kind=file gen=2",
                                 "/r/b/ok.txt synced badge=synced kind=file gen=2"]})
        self.assertEqual([s for s in d.sent if s[0] == "OBSERVE"],
                         [("OBSERVE", b"/r"), ("OBSERVE", b"/s"), ("OBSERVE", b"/r/b")])
        self.assertEqual(sorted(w.problems), [b"/r/b/c.txt", b"/r/x.txt"])
        self.assertEqual(w.problems[b"/r/x.txt"].message, "disk full")
        self.assertEqual(w.counts(b"/r"), {"synced": 12408, "syncing": 2, "conflict": 1})
        # The first walk is quiet: nothing there before is news.
        self.assertEqual(w.take_entered(), [])
        # Of the listings only directories and problems are kept (a million synced files would not fit).
        self.assertEqual(sorted(w.follower.items(b"/r/b")), [b"c.txt"])
        self.assertEqual(sorted(w.follower.items(b"/r")), [b"a", b"b", b"x.txt"])
        d.push("ITEM /r/b/c.txt synced badge=synced kind=file gen=3")
        self.assertEqual(w.follower.items(b"/r/b"), {})
        self.assertEqual(sorted(w.problems), [b"/r/x.txt"])

    def test_a_new_problem_is_news_and_its_directory_followed(self):
        w, d = started({"/r": ["/r/a synced badge=synced kind=dir gen=1 counts=synced:5000"],
                        "/r/a": ["/r/a/new.txt conflict badge=conflict kind=file gen=3"]})
        d.push("ITEM /r/a conflict badge=conflict kind=dir gen=1 counts=synced:4999,conflict:1")
        self.assertEqual(d.sent[-1], ("OBSERVE", b"/r/a"))
        self.assertEqual([p.path for p in w.take_entered()], [b"/r/a/new.txt"])
        # Resolved: the directory's counts lose the conflict, and it is no longer observed.
        d.push("ITEM /r/a synced badge=synced kind=dir gen=1 counts=synced:5000")
        self.assertEqual(d.sent[-1], ("UNOBSERVE", b"/r/a"))
        self.assertEqual(w.problems, {})

    def test_gone_drops_subtrees(self):
        w, d = started({"/r": ["/r/d conflict badge=conflict kind=dir gen=1 counts=conflict:2"],
                        "/r/d": ["/r/d/e conflict badge=conflict kind=dir gen=1 counts=conflict:1",
                                 "/r/d/g conflict badge=conflict kind=file gen=1"],
                        "/r/d/e": ["/r/d/e/f conflict badge=conflict kind=file gen=1"]})
        self.assertEqual(sorted(w.problems), [b"/r/d/e/f", b"/r/d/g"])
        d.push("GONE /r/d/g")
        self.assertEqual(sorted(w.problems), [b"/r/d/e/f"])
        d.push("GONE /r/d")
        self.assertEqual(w.problems, {})
        self.assertEqual(sorted(w.follower.dirs), [b"/r", b"/s"])

    def test_root_removed_and_added(self):
        w, d = started({"/r": ["/r/x conflict badge=conflict kind=file gen=1"]})
        self.assertEqual(list(w.problems), [b"/r/x"])
        d.push("ROOT /r removed")
        self.assertEqual(list(w.roots), [b"/s"])
        self.assertEqual(w.problems, {})
        d.statuses["/t"] = "/t unknown badge=unknown kind=dir gen=1 counts=unknown:1"
        d.push("ROOT /t unknown")
        self.assertEqual(d.sent[-2:], [("OBSERVE", b"/t"), ("STATUS", b"/t")])
        self.assertEqual(w.counts(b"/t"), {"unknown": 1})

    def test_a_directory_bad_by_its_own_state_is_a_problem(self):
        w, d = started({"/r": ["/r/d error badge=error kind=dir gen=1 counts=synced:3 message=gone%20remote"]})
        self.assertEqual(list(w.problems), [b"/r/d"])
        self.assertIsNone(w.follower.directory(b"/r/d"))

    def test_reconnect_walks_again_quietly(self):
        w, d = started({"/r": ["/r/x conflict badge=conflict kind=file gen=1"]})
        w.disconnected()
        self.assertEqual(w.roots, {})
        d.sent = []
        d.run(w.connected(CAPS))
        self.assertEqual(list(w.problems), [b"/r/x"])
        self.assertEqual(w.take_entered(), [])


class TrayTest(unittest.TestCase):
    def tray(self, listing=(), toolbars=()):
        t = model.Tray(home="/home/me")
        t.running = True
        self.daemon = Daemon(t.walk, ["/home/me/Sync conflict provider=e", "/data/b syncing"],
                             {"/home/me/Sync": list(listing)}, {
                                 "/home/me/Sync": "/home/me/Sync conflict badge=conflict kind=dir gen=1 counts=synced:12406,syncing:1,conflict:1",
                                 "/data/b": "/data/b syncing badge=syncing kind=dir gen=1 counts=synced:2,syncing:1"},
                             toolbars)
        self.daemon.run(t.walk.connected(CAPS))
        t.walk.settled()
        return t

    def test_worst_status_and_tooltip(self):
        t = self.tray()
        self.assertEqual(t.icon_state(), "conflict")
        self.assertEqual(t.status(), "NeedsAttention")
        self.assertEqual(t.tooltip(), ("SyncBadge", "1 conflict, 2 syncing, 12,408 synced"))
        self.daemon.push("ROOT /home/me/Sync synced")
        self.daemon.push("ROOT /data/b synced")
        self.assertEqual(t.status(), "Active")
        t.passive_when_synced = True
        self.assertEqual(t.status(), "Passive")
        t.disconnected()
        self.assertEqual(t.icon_state(), "outside")
        self.assertEqual(t.tooltip()[0], "SyncBadge is not running")
        self.assertEqual(t.status(), "Active")

    def test_menu_layout(self):
        t = self.tray(["/home/me/Sync/a.txt conflict badge=conflict kind=file gen=1 message=both%20changed"],
                      ["name=Engine tooltip=T provider=e"])
        self.assertEqual(t.sync_toolbars(), ["e"])
        self.assertTrue(t.toolbar_menu("e", [line("5 MENUITEM e.pause title=Pause enabled=1"),
                                             line("5 MENUITEM e.off title=Off enabled=0")]))
        self.assertFalse(t.toolbar_menu("e", [line("6 MENUITEM e.pause title=Pause enabled=1"),
                                              line("6 MENUITEM e.off title=Off enabled=0")]))
        menu = t.menu(model.Notifier(), 0)
        labels = [e.label for e in menu if not e.separator]
        self.assertEqual(labels, ["~/Sync — conflict (1 conflict, 1 syncing)", "/data/b — syncing (1 syncing)",
                                  "Engine", "Recent problems", "Snooze notifications", "Quit"])
        engine = [e for e in menu if e.label == "Engine"][0]
        self.assertEqual([(c.label, c.enabled, c.click) for c in engine.children],
                         [("Pause", True, ("action", "e", "e.pause", "Pause")), ("Off", False, ("action", "e", "e.off", "Off"))])
        problems = [e for e in menu if e.label == "Recent problems"][0]
        self.assertEqual([(c.label, c.click) for c in problems.children],
                         [("a.txt — conflict: both changed", ("show", b"/home/me/Sync/a.txt"))])
        self.daemon.push("TOOLBAR provider=e removed")
        t.sync_toolbars()
        self.assertNotIn("Engine", [e.label for e in t.menu(model.Notifier(), 0)])

    def test_recent_problems_are_the_last_ten_newest_first(self):
        t = self.tray()
        for i in range(15):
            self.daemon.push("ITEM /home/me/Sync/f%d conflict badge=conflict kind=file gen=1" % i)
        self.assertEqual([os.path.basename(p.path) for p in t.walk.recent()], [b"f%d" % i for i in range(14, 4, -1)])

    def test_menu_ids_are_stable_and_forgotten(self):
        ids = model.MenuIds()
        a, b = ids.id("a"), ids.id(("root", b"/x"))
        self.assertEqual((ids.id("a"), ids.key(b)), (a, ("root", b"/x")))
        ids.keep(["a"])
        self.assertIsNone(ids.key(b))
        self.assertNotIn(ids.id(("root", b"/x")), (a, b))


def problem(path, state="conflict", root=b"/home/me/Sync", message=None):
    return model.Problem(path, state, message, root, 0)


class NotifierTest(unittest.TestCase):
    def test_a_burst_is_one_notification_after_the_settle_window(self):
        n = model.Notifier(home="/home/me")
        due = n.entered([problem(b"/home/me/Sync/a"), problem(b"/home/me/Sync/b")], 100.0)
        self.assertEqual(due, 100.0 + model.NOTIFY_SETTLE)
        n.entered([problem(b"/home/me/Sync/c", "error", message="disk full")], 100.5)
        self.assertEqual(n.flush(100.9), [])
        [note] = n.flush(due)
        self.assertEqual(note.summary, "2 files in conflict and 1 file in error in ~/Sync")
        self.assertEqual(note.paths, [b"/home/me/Sync/a", b"/home/me/Sync/b", b"/home/me/Sync/c"])
        self.assertIn("c: disk full", note.body)
        self.assertIsNone(n.deadline())

    def test_at_most_one_per_root_every_gap(self):
        n = model.Notifier()
        n.entered([problem(b"/r/a", root=b"/r")], 0.0)
        self.assertEqual(len(n.flush(model.NOTIFY_SETTLE)), 1)
        due = n.entered([problem(b"/r/b", root=b"/r")], 2.0)
        self.assertEqual(due, model.NOTIFY_SETTLE + model.NOTIFY_GAP)
        # Another root is not held back by this one.
        self.assertEqual(n.entered([problem(b"/s/x", root=b"/s")], 2.0), 2.0 + model.NOTIFY_SETTLE)
        [other] = n.flush(2.0 + model.NOTIFY_SETTLE)
        self.assertEqual(other.summary, "x is in conflict in /s")
        [later] = n.flush(due)
        self.assertEqual(later.summary, "b is in conflict in /r")

    def test_snooze_drops_and_resume(self):
        n = model.Notifier()
        n.entered([problem(b"/r/a", root=b"/r")], 0.0)
        n.snooze(3600.0)
        self.assertIsNone(n.deadline())
        self.assertIsNone(n.entered([problem(b"/r/b", root=b"/r")], 10.0))
        self.assertEqual(n.flush(100.0), [])
        # The snooze ends by itself, with no timer: the clock says so when news comes.
        self.assertIsNotNone(n.entered([problem(b"/r/c", root=b"/r")], 3600.0))
        n.snooze(9999.0)
        n.resume()
        self.assertFalse(n.snoozed(4000.0))

    def test_until_tomorrow_is_the_next_midnight(self):
        import time
        now = time.mktime((2026, 11, 27, 19, 30, 0, 0, 0, -1))
        self.assertEqual(time.localtime(model.snooze_until_tomorrow(now))[:6], (2026, 11, 28, 0, 0, 0))


class TextTest(unittest.TestCase):
    def test_counts_and_paths(self):
        self.assertEqual(model.count_text({"synced": 12408, "syncing": 2, "conflict": 1, "error": 0}),
                         "1 conflict, 2 syncing, 12,408 synced")
        self.assertEqual(model.display_path(b"/home/me/Sync", "/home/me"), "~/Sync")
        self.assertEqual(model.display_path(b"/home/meX", "/home/me"), "/home/meX")
        self.assertEqual(model.worst(["synced", "pending", "error", "ignored"]), "error")
        self.assertIsNone(model.worst([]))


if __name__ == "__main__":
    unittest.main()

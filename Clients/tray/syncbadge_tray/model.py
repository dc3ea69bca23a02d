"""The tray's model, without I/O: what the daemon said, what the panel shows, what to notify.

Everything here is driven by calls (a line from the daemon, a click, the clock passed in) and
answers with data (requests to send, notifications to raise, the menu's layout), so the tests
drive it directly; syncbadge_tray.link and syncbadge_tray.dbus do the I/O.
"""

import collections
import os
import time

from syncbadge.follow import ALL, DirectoryFollower, is_under as under, split_path

# PROTOCOL.md "States and badges": a directory reports the worst of its subtree, in this order.
WORST_FIRST = ("error", "conflict", "syncing", "pending", "unknown", "synced")
PROBLEMS = frozenset(["error", "conflict"])
RECENT = 10                 # "Recent problems" shows this many
NOTIFY_GAP = 10.0           # seconds: at most one notification per root in this time
NOTIFY_SETTLE = 1.0         # seconds a burst is collected before its one notification
COUNT_ORDER = ("error", "conflict", "syncing", "pending", "unknown", "synced", "ignored")


def worst(states):
    """The worst of `states` (PROTOCOL.md's order); None when there is none that ranks."""
    ranked = [s for s in states if s in WORST_FIRST]
    return min(ranked, key=WORST_FIRST.index) if ranked else None


def display_path(path, home=None):
    """A path for people: text, with the home directory as ``~``."""
    text = os.fsdecode(path)
    home = os.path.expanduser("~") if home is None else home
    if home and home != "/" and (text == home or text.startswith(home + "/")):
        return "~" + text[len(home):]
    return text


def count_text(counts, states=COUNT_ORDER):
    """``2 syncing, 1 conflict, 12,408 synced``: the non-zero counts, worst first."""
    parts = ["{:,} {}".format(counts[s], s) for s in states if counts.get(s)]
    return ", ".join(parts)


Problem = collections.namedtuple("Problem", "path state message root seq")


def _worth_keeping(item):
    return item.kind == "dir" or item.state in PROBLEMS


def _bad(item):
    """A directory's roll-up counts hold an error or a conflict."""
    return bool(item.counts) and any(item.counts.get(s) for s in PROBLEMS)


class Walk(object):
    """Follows the problem paths of every root without listing the whole tree, on the package's
    DirectoryFollower (roots, toolbar items, and the directories followed): each root is
    followed, and below it only the directories whose roll-up counts hold an ``error`` or
    ``conflict``. A path that turns bad makes every directory above it bad, and the highest of
    those that was not yet bad sits in a directory already followed (or is a root's child), whose
    observers get its ``* ITEM``: so these observations see every problem come and go.

    The I/O side hands it HELLO (connected), answers and pushes, and sends the req.Req lists
    they return; the problems found are kept apart from the follower's listings, newest last."""

    def __init__(self):
        # Of a followed directory's children the walk needs only the directories and the
        # problems: a million synced files are not kept.
        self.follower = DirectoryFollower(roots=True, toolbars=True, keep=_worth_keeping)
        self.problems = collections.OrderedDict()   # path -> Problem, oldest first
        self.seq = 0
        self.entered = []                           # Problems new since the last take_entered()
        self.quiet = True                           # the first walk after a connect: no news
        self.toolbars_changed = False

    # -- the follower's side ---------------------------------------------------------------

    def connected(self, caps):
        """A new connection: the problems are found again by a quiet walk (what was there
        before the daemon came back is no news)."""
        self.problems.clear()
        self.entered = []
        self.quiet = True
        return self.follower.connected(caps) + self._update()

    def disconnected(self):
        self.follower.disconnected()
        for d in list(self.follower.dirs):
            self.follower.unfollow(d)
        self._update()

    def answered(self, request, reply):
        return self.follower.answered(request, reply) + self._update()

    def push(self, message):
        return self.follower.push(message) + self._update()

    def settled(self):
        """Every request of the first walk was answered: from now on a new problem is news."""
        self.quiet = False
        self.entered = []

    # -- what is known ---------------------------------------------------------------------

    @property
    def roots(self):
        """{path: codec.Root} (empty before ROOTS answered)."""
        return self.follower.roots or {}

    def counts(self, root):
        """The root's counts (its own ITEM's ``counts=``), {} before they came."""
        d = self.follower.directory(root)
        return (d.own.counts or {}) if d is not None and d.own is not None else {}

    def root_of(self, path):
        for r in self.roots:
            if under(path, r):
                return r
        return None

    def take_entered(self):
        out, self.entered = self.entered, []
        return out

    def recent(self, n=RECENT):
        """The last `n` problems, newest first."""
        return list(reversed(list(self.problems.values())[-n:]))

    # -- the walk --------------------------------------------------------------------------

    def _update(self):
        f = self.follower
        changes = f.take_changes()
        if not changes:
            return []
        out = []
        if changes.toolbars:
            self.toolbars_changed = True
        # The daemon's order: roots are observed (and shown) as ROOTS lists them.
        for path in [p for p in self.roots if p in changes.roots] + [p for p in changes.roots if p not in self.roots]:
            if path in self.roots and f.directory(path) is None:
                out += f.follow(path)
                out.append(f.status(path))      # the root's own counts
            elif path not in self.roots:
                out += self._unfollow_under(path)
        for path in changes.forgotten:
            self._drop_under(path)
        for directory, names in changes.dirs.items():
            d = f.directory(directory)
            if d is None or d.items is None:
                continue
            if names is ALL:
                names = set(d.items) | set(split_path(p)[1] for p in self.problems if split_path(p)[0] == directory)
            for name in names:
                if name:
                    # A child the follower does not keep (a file in no trouble) is as good as
                    # gone to the walk.
                    item = d.items.get(name)
                    out += self._child(directory + b"/" + name if directory != b"/" else b"/" + name, item)
        return out

    def _child(self, path, item):
        """What a listing or a push says of one child of a followed directory."""
        f = self.follower
        if item is None:                            # gone
            self._drop_under(path)
            return self._unfollow_under(path) if path not in self.roots else []
        if item.kind == "dir":
            out = []
            bad = _bad(item)
            if bad and f.directory(path) is None:
                out += f.follow(path)
            elif not bad and path not in self.roots:
                out += self._unfollow_under(path)
            # A directory that is bad while nothing below it is: its own state.
            if item.state in PROBLEMS and not bad:
                self._problem(item)
            else:
                self.problems.pop(path, None)
            return out
        if item.state in PROBLEMS and item.kind != "gone":
            self._problem(item)
        else:
            self.problems.pop(path, None)
        return []

    def _unfollow_under(self, top):
        out = []
        for d in sorted(d for d in self.follower.dirs if under(d, top) and (d == top or d not in self.roots)):
            out += self.follower.unfollow(d)
        self._drop_under(top)
        return out

    def _problem(self, item):
        old = self.problems.get(item.path)
        if old is not None and old.state == item.state and old.message == item.message:
            return
        self.seq += 1
        problem = Problem(item.path, item.state, item.message, self.root_of(item.path), self.seq)
        self.problems.pop(item.path, None)
        self.problems[item.path] = problem
        if old is None and not self.quiet:
            self.entered.append(problem)

    def _drop_under(self, top):
        for p in [p for p in self.problems if under(p, top)]:
            del self.problems[p]


# ---------------------------------------------------------------------------------------
# Notifications

Notification = collections.namedtuple("Notification", "root summary body paths")


class Notifier(object):
    """One notification per burst of new problems, per root: the first problem of a root arms a
    NOTIFY_SETTLE window that gathers the burst; after a notification the root stays quiet for
    NOTIFY_GAP seconds, gathering what comes meanwhile into the next one. Nothing while snoozed.
    A timer exists only while something waits (deadline())."""

    def __init__(self, home=None):
        self.home = home
        self.snoozed_until = None
        self.last = {}              # root -> when its last notification went
        self.waiting = collections.OrderedDict()   # root -> [Problem], gathered
        self.due = {}               # root -> when the gathered ones go

    def snoozed(self, now):
        return self.snoozed_until is not None and now < self.snoozed_until

    def snooze(self, until):
        self.snoozed_until = until
        self.waiting.clear()
        self.due.clear()

    def resume(self):
        self.snoozed_until = None

    def entered(self, problems, now):
        """New problems; returns the deadline of the next flush (or None)."""
        if not self.snoozed(now):
            for p in problems:
                root = p.root
                if root not in self.waiting:
                    self.waiting[root] = []
                    self.due[root] = max(now + NOTIFY_SETTLE, self.last.get(root, -NOTIFY_GAP) + NOTIFY_GAP)
                self.waiting[root].append(p)
        return self.deadline()

    def deadline(self):
        return min(self.due.values()) if self.due else None

    def flush(self, now):
        """The notifications due at `now`; then deadline() says when the next is."""
        out = []
        for root in [r for r, t in self.due.items() if t <= now]:
            problems = self.waiting.pop(root)
            del self.due[root]
            if self.snoozed(now):
                continue
            self.last[root] = now
            out.append(self.summarise(root, problems))
        return out

    def summarise(self, root, problems):
        """``3 files in conflict in ~/Sync``; one file: its name, state and message."""
        where = display_path(root, self.home) if root else "a synced folder"
        latest = collections.OrderedDict()
        for p in problems:
            latest[p.path] = p
        problems = list(latest.values())
        if len(problems) == 1:
            p = problems[0]
            summary = "%s is in %s in %s" % (os.fsdecode(os.path.basename(p.path)), p.state, where)
            return Notification(root, summary, p.message or "", [p.path])
        by_state = collections.Counter(p.state for p in problems)
        parts = []
        for state in ("conflict", "error"):
            n = by_state.get(state)
            if n:
                parts.append("%d %s in %s" % (n, "file" if n == 1 else "files", state))
        summary = "%s in %s" % (" and ".join(parts), where)
        body = "\n".join(os.fsdecode(os.path.basename(p.path)) + (": " + p.message if p.message else "")
                         for p in problems[:5])
        if len(problems) > 5:
            body += "\n…"
        return Notification(root, summary, body, [p.path for p in problems])


def snooze_until_tomorrow(now_wall):
    """The wall-clock time of the next local midnight after `now_wall`."""
    t = time.localtime(now_wall)
    midnight = time.mktime((t.tm_year, t.tm_mon, t.tm_mday + 1, 0, 0, 0, 0, 0, -1))
    return midnight


# ---------------------------------------------------------------------------------------
# What the panel shows

class Tray(object):
    """The whole state the panel shows: the daemon's roots and problems (a Walk), the engines'
    toolbar items and their menus, the last action answer, and whether the daemon runs."""

    def __init__(self, home=None, passive_when_synced=False):
        self.home = home
        self.passive_when_synced = passive_when_synced
        self.running = False
        self.walk = Walk()
        self.toolbar_menus = {}                     # provider -> [(action id, title, enabled)]
        self.answers = {}                           # provider -> the last action's answer text

    def disconnected(self):
        """The daemon went: its engines' items went with it (they come back with the engines)."""
        self.running = False
        self.toolbar_menus.clear()
        self.answers.clear()

    # -- toolbars -----------------------------------------------------------------------

    @property
    def toolbars(self):
        """{provider: Toolbar}, in the daemon's order."""
        return collections.OrderedDict((t.provider, t) for t in self.walk.follower.toolbars or [])

    def sync_toolbars(self):
        """After the toolbar items changed: the providers whose menu to ask for (new ones); the
        menus and answers of those gone are forgotten."""
        toolbars = self.toolbars
        for p in [p for p in self.toolbar_menus if p not in toolbars]:
            del self.toolbar_menus[p]
            self.answers.pop(p, None)
        return [p for p in toolbars if p not in self.toolbar_menus]

    def toolbar_menu(self, provider, messages):
        """A ``MENU toolbar provider=`` answer: True when the items changed."""
        items = [(m.arg(0), m.opt("title", m.arg(0)), m.opt("enabled", "1") != "0")
                 for m in messages if m.kind == "MENUITEM" and m.fields]
        if self.toolbar_menus.get(provider) == items:
            return False
        self.toolbar_menus[provider] = items
        return True

    # -- what it looks like -------------------------------------------------------------

    def totals(self):
        """Every root's counts added up."""
        total = collections.Counter()
        for root in self.walk.roots:
            total.update(self.walk.counts(root))
        return total

    def worst(self):
        if not self.running:
            return None
        return worst(r.state for r in self.walk.roots.values())

    def icon_state(self):
        """The badge id the icon shows: the worst state; ``outside`` with no daemon or no root."""
        return self.worst() or "outside"

    def status(self):
        """SNI Status: NeedsAttention while a root is in error or conflict; Passive when every
        root is synced and the user asked for it; else Active."""
        w = self.worst()
        if w in PROBLEMS:
            return "NeedsAttention"
        if self.passive_when_synced and w == "synced":
            return "Passive"
        return "Active"

    def tooltip(self):
        """(title, body)."""
        if not self.running:
            return "SyncBadge is not running", "Start it with: syncbadge status"
        if not self.walk.roots:
            return "SyncBadge", "No synced folders (add one with: syncbadge add DIR)"
        return "SyncBadge", count_text(self.totals()) or "nothing to show yet"

    def root_label(self, root):
        text = "%s — %s" % (display_path(root.path, self.home), root.state)
        counts = count_text(self.walk.counts(root.path), ("error", "conflict", "syncing", "pending"))
        if root.scanning:
            counts = ", ".join(c for c in ("scanning", counts) if c)
        if root.message:
            counts = ", ".join(c for c in (counts, root.message) if c)
        return text + (" (%s)" % counts if counts else "")

    def problem_label(self, problem):
        name = os.fsdecode(os.path.basename(problem.path))
        return "%s — %s%s" % (name, problem.state, ": " + problem.message if problem.message else "")

    def menu(self, notifier, now_wall):
        """The menu as a tree: [Entry]. Entry keys are stable between layouts (dbus.MenuIds
        gives them numbers); `click` says what activating it does."""
        out = []
        if not self.running:
            out.append(Entry("status", "SyncBadge is not running", enabled=False))
        elif not self.walk.roots:
            out.append(Entry("status", "No synced folders", enabled=False))
        for root in self.walk.roots.values() if self.running else ():
            out.append(Entry(("root", root.path), self.root_label(root), icon="emblem-syncbadge-" + root.state,
                             click=("open", root.path)))
        if self.toolbars:
            out.append(Entry("sep-toolbars", separator=True))
        for provider, t in self.toolbars.items():
            children = [Entry(("action", provider, aid), title, enabled=enabled, click=("action", provider, aid, title))
                        for aid, title, enabled in self.toolbar_menus.get(provider, [])]
            if not children:
                children.append(Entry(("noaction", provider), "No actions", enabled=False))
            answer = self.answers.get(provider)
            if answer:
                children.append(Entry(("answer", provider), answer, enabled=False))
            out.append(Entry(("toolbar", provider), t.name or provider, children=children, tooltip=t.tooltip))
        out.append(Entry("sep-problems", separator=True))
        # What the walk knew is kept while the daemon is away (so that its return notifies
        # nothing old), but not shown as if it were still true.
        recent = self.walk.recent() if self.running else []
        problems = [Entry(("problem", p.path), self.problem_label(p), icon="emblem-syncbadge-" + p.state,
                          click=("show", p.path)) for p in recent]
        if not problems:
            problems.append(Entry("no-problems", "No problems", enabled=False))
        out.append(Entry("problems", "Recent problems", children=problems))
        if notifier.snoozed(now_wall):
            snooze = [Entry("snooze-label", "Snoozed until " + time.strftime("%H:%M", time.localtime(notifier.snoozed_until)),
                            enabled=False),
                      Entry("resume", "Resume notifications", click=("resume",))]
        else:
            snooze = [Entry("snooze-hour", "For 1 hour", click=("snooze", "hour")),
                      Entry("snooze-tomorrow", "Until tomorrow", click=("snooze", "tomorrow"))]
        out.append(Entry("snooze", "Snooze notifications", children=snooze))
        out.append(Entry("sep-quit", separator=True))
        out.append(Entry("quit", "Quit", click=("quit",)))
        return out


class Entry(object):
    """One menu item: a stable key, its label, and what a click does."""

    __slots__ = ("key", "label", "enabled", "children", "click", "icon", "separator", "tooltip")

    def __init__(self, key, label="", enabled=True, children=None, click=None, icon=None, separator=False,
                 tooltip=None):
        self.key = key
        self.label = label
        self.enabled = enabled
        self.children = children
        self.click = click
        self.icon = icon
        self.separator = separator
        self.tooltip = tooltip

    def __repr__(self):
        return "<Entry %r %r%s>" % (self.key, self.label, " +%d" % len(self.children) if self.children else "")


class MenuIds(object):
    """dbusmenu needs int ids that stay the same for the same item between layouts."""

    def __init__(self):
        self.ids = {}
        self.keys = {}
        self.next = 0               # 0 is the menu's root

    def id(self, key):
        n = self.ids.get(key)
        if n is None:
            self.next += 1
            n = self.ids[key] = self.next
            self.keys[n] = key
        return n

    def key(self, n):
        return self.keys.get(n)

    def keep(self, keys):
        """Forgets the keys of items no longer shown (problem paths come and go for months)."""
        keys = set(keys)
        for key in [k for k in self.ids if k not in keys]:
            del self.keys[self.ids.pop(key)]

"""Following directories: the daemon's answers and pushes turned into per-directory state, with
no I/O (no sockets, no threads, no timers). The file-manager extension, ranger and vifm's
helper keep their badges this way, each from its own kind of loop.

A DirectoryFollower never sends anything: each method that may need the daemon returns a list of
req.Req, which the caller sends on its connection and whose answers it hands back through
``answered(request, reply)`` (and, optionally, each data line as it is read through
``data(request, message)``: a long listing is then made into Items a slice at a time). Pushes go
to ``push(message)``. What changed since the last look
collects in a Changes, taken with ``take_changes()``: a GUI takes it once per main-loop
iteration and invalidates once.

    follower = DirectoryFollower(max_dirs=64, badges=True, toolbars=True)

    def send_all(requests):
        for r in requests:
            conn.send(r, on_answer=lambda reply, r=r: send_all(follower.answered(r, reply)))

    # Connection(on_hello=..., on_close=..., on_push=...):
    on_hello = lambda conn: send_all(follower.connected(conn.caps))    # observes everything again
    on_close = lambda conn, reason: follower.disconnected()            # every listing dropped
    on_push = lambda message: send_all(follower.push(message))

    send_all(follower.follow(b"/home/me/Sync/docs"))       # OBSERVE (LRU: the oldest UNOBSERVEd)
    follower.item(b"/home/me/Sync/docs/a.txt")             # an Item from the cache, or None
    changes = follower.take_changes()                      # {dir: names or ALL}, and the rest

What it follows (PROTOCOL.md):

- **Directories** (``follow``/``unfollow``, at most `max_dirs`, least recently followed ones
  given up first): ``OBSERVE``'s listing, then ``* ITEM`` (a child's, or the directory's own),
  ``* GONE`` (a child; or the directory itself, which ends its observation: it is forgotten),
  ``* RESET`` (``LIST`` again; only what differs is reported). A directory the daemon refuses
  (``outside``, ``not-found``, ``not-a-directory``) is kept with no items; it is observed again
  when a ``* ROOT`` over it comes (not while it is scanning), when its own ``* ITEM`` shows a
  directory there, or when the caller says ``retry`` (after ``not-found``: made a moment ago).
  ``* ROOT <root> removed`` empties the directories below it.
- **Roots** (``roots=True``): ``ROOTS`` at connect, then ``* ROOT``: ``roots`` {path: Root}.
- **Toolbar items** (``toolbars=True``): ``TOOLBAR`` at connect, then ``* TOOLBAR``
  (``toolbar-push``), or ``TOOLBAR`` again after each ``* ROOT`` where the daemon does not push
  them: ``toolbars`` [Toolbar] in the daemon's order, an item that changes keeping its place.
- **Badges** (``badges=True``): ``BADGES`` at connect, ``* BADGE`` (``badge-push``), and
  ``BADGES`` again once for each badge an ``ITEM`` names that is not known yet: ``badges``
  {id: Badge}.
- **STATUS** answers (``follower.status(paths)`` builds the request) go where the paths
  belong: a followed directory's own item, an entry of a followed directory's listing, else a
  table of paths looked up (``item()`` finds them there; emptied at disconnect).

After a reconnect (a daemon restart, a new epoch) ``connected()`` gives the requests that observe
every followed directory again and ask what is followed at connect; until their answers come,
``items()`` is None for each, unless ``disconnected(hold=True)`` kept the last listings: then
they answer until the new ones come, which report only what differs (``release()`` drops what
is still held, the caller's bound on how long old states may show).
"""

import collections

from . import codec, req
from .viewer import Toolbar

__all__ = ["DirectoryFollower", "Directory", "Changes", "ALL", "NEW", "ASKED", "OBSERVED", "REFUSED",
           "split_path", "is_under"]

# Directory.status
NEW = "new"             # not asked on this connection (or no connection)
ASKED = "asked"         # OBSERVE sent, not answered yet
OBSERVED = "observed"   # listed, and followed by pushes
REFUSED = "refused"     # the daemon said no (Directory.code): no items

ALL = None              # in Changes.dirs: the whole directory (its listing came, went or was replaced)
SELF = b""              # in Changes.dirs[d]: the name that stands for d's own item
LISTINGS = ("OBSERVE", "LIST")   # the requests whose data lines data() takes as they come
_HELD = object()        # _offline(): keep only the listings already held
LOOKED_MAX = 4096       # STATUS answers kept outside followed directories, least recent dropped


def split_path(path):
    """(parent, name) of an absolute path in bytes; the root's parent is itself."""
    head, _, name = path.rpartition(b"/")
    return (head or b"/"), name


def is_under(path, root):
    """Whether `path` is `root` or below it (bytes)."""
    return path == root or path.startswith(root.rstrip(b"/") + b"/")


def _listing(data, keep=None, items=None):
    """{name: Item} of a listing's data lines (OBSERVE's, LIST's), those `keep` takes, added
    to `items` when given."""
    items = {} if items is None else items
    for m in data:
        item = codec.Item.from_message(m)
        if item is not None and (keep is None or keep(item)):
            items[split_path(item.path)[1]] = item
    return items


def _differs(old, new):
    """Whether a viewer sees a difference between two Items (a new gen alone is none)."""
    return old is None or old[1:4] != new[1:4] or old[5:] != new[5:]


class Directory(object):
    """One followed directory. `items` {name (bytes): Item} once listed (OBSERVED), {} when
    REFUSED, None before (NEW, ASKED) unless `held` (the last connection's listing, kept by
    disconnected(hold=True) until the new one comes); `own` the directory's own Item when one
    came (a parent's listing, a push, a STATUS); `code` the ERR code that refused it; `extra` is
    the caller's (a file manager keeps its file objects there): the follower never reads it."""

    __slots__ = ("path", "items", "own", "status", "code", "request", "relist", "incoming", "held", "extra")

    def __init__(self, path):
        self.path = path
        self.items = None
        self.own = None
        self.status = NEW
        self.code = None
        self.request = None     # the OBSERVE waited for
        self.relist = None      # the LIST waited for after a RESET
        self.incoming = None    # (request, {name: Item}) read so far of its answer (data())
        self.held = False       # items are the last connection's, kept by disconnected(hold=True)
        self.extra = None

    @property
    def listed(self):
        return self.status == OBSERVED

    def __repr__(self):
        return "<Directory %r %s%s>" % (self.path, self.status, " %s" % self.code if self.code else "")


class Changes(object):
    """What changed since the last take_changes().

    - dirs: {directory: set of names, or ALL}: entries whose Item changed, appeared or went (a
      name without an Item now went); ``b""`` (SELF) for the directory's own Item; ALL when the
      whole listing came, went or was replaced. Keys are directories whether followed or not (a
      STATUS answer reports its path under its parent).
    - listed: directories whose OBSERVE listing came in (each also in dirs: ALL, or the names
      that differ from the listing held since the last connection; not in dirs when none do).
    - refused: {directory: ERR code} of OBSERVEs refused.
    - forgotten: {directory: Directory} no longer followed (given up for the LRU, unfollowed,
      or gone: ``* GONE`` of the directory itself).
    - roots: root paths whose ROOT line came, changed or went.
    - toolbars: True when the toolbar items changed.
    - badges: ids listed by a BADGES answer; badge_pushes: ids (re)defined by ``* BADGE``.
    """

    __slots__ = ("dirs", "listed", "refused", "forgotten", "roots", "toolbars", "badges", "badge_pushes")

    def __init__(self):
        self.dirs = {}
        self.listed = set()
        self.refused = {}
        self.forgotten = {}
        self.roots = set()
        self.toolbars = False
        self.badges = set()
        self.badge_pushes = set()

    def __bool__(self):
        return bool(self.dirs or self.listed or self.refused or self.forgotten or self.roots
                    or self.toolbars or self.badges or self.badge_pushes)

    def names(self, directory):
        """The names changed in `directory`: a set, ALL, or an empty set for none."""
        return self.dirs[directory] if directory in self.dirs else set()

    def _name(self, directory, name):
        names = self.dirs.get(directory, ())
        if names is ALL:
            return
        if directory not in self.dirs:
            self.dirs[directory] = names = set()
        names.add(name)

    def _all(self, directory):
        self.dirs[directory] = ALL

    def __repr__(self):
        parts = ["%s=%r" % (k, getattr(self, k)) for k in self.__slots__ if getattr(self, k)]
        return "<Changes %s>" % " ".join(parts)


class DirectoryFollower(object):
    """Per-directory state from the daemon's answers and pushes; pure (see the module's text).

    max_dirs: directories followed at once (None: no limit). roots, toolbars, badges: also
    follow those (asked at connect, then kept by pushes). keep: a predicate on a child's Item;
    the children it refuses are not stored (a tray that wants the problems of a directory of
    100,000 files keeps 100, not 100,000 Items). A kept child that a push makes refused is
    dropped and reported as a change, so the caller sees it go.
    """

    def __init__(self, max_dirs=None, roots=False, toolbars=False, badges=False, keep=None):
        if max_dirs is not None and max_dirs < 1:
            raise ValueError("max_dirs is at least 1")
        self.max_dirs = max_dirs
        self.follow_roots = roots
        self.follow_toolbars = toolbars
        self.follow_badges = badges
        self.keep = keep
        self.online = False                    # between connected() and disconnected()
        self.caps = frozenset()
        self.dirs = collections.OrderedDict()  # path -> Directory, least recently followed first
        self.looked = collections.OrderedDict()  # path -> Item of STATUS answers outside followed dirs (LRU)
        self.roots = None                      # {path: Root} once ROOTS answered (roots=True)
        self.toolbars = None                   # [Toolbar] once TOOLBAR answered (toolbars=True)
        self.badges = {}                       # id -> Badge (badges=True)
        self._asked = {}                       # verb -> the ROOTS/TOOLBAR/BADGES Req waited for
        self._badges_asked = set()             # unknown badge ids BADGES was asked again for
        self._badges_current = set()           # ids this daemon (this connection) defined
        self._changes = Changes()

    # -- what is known ------------------------------------------------------------------

    def directory(self, path):
        """The Directory followed at `path`, or None."""
        return self.dirs.get(path)

    def items(self, directory):
        """{name: Item} of a followed directory: None until listed (or not followed), {} when
        the daemon refused it; while held (disconnected(hold=True)), the last connection's."""
        d = self.dirs.get(directory)
        return None if d is None else d.items

    def item(self, path):
        """What the cache knows of `path` (bytes), without a round trip: its Item in a followed
        directory's listing, a followed directory's own Item, or a STATUS answer's; else None."""
        parent, name = split_path(path)
        d = self.dirs.get(parent)
        if d is not None and d.items and name in d.items:
            return d.items[name]
        d = self.dirs.get(path)
        if d is not None and d.own is not None:
            return d.own
        return self.looked.get(path)

    @property
    def holding(self):
        """True while a listing kept by disconnected(hold=True) is not yet replaced or released."""
        return any(d.held for d in self.dirs.values())

    def take_changes(self):
        """What changed since the last call (a Changes, false when nothing did)."""
        changes, self._changes = self._changes, Changes()
        return changes

    # -- the connection -----------------------------------------------------------------

    def connected(self, caps=()):
        """HELLO was answered on a new connection (after a daemon restart too): the requests
        that observe every followed directory again and ask ROOTS, TOOLBAR, BADGES as chosen.
        Listings held by disconnected(hold=True) stay until the new ones replace them."""
        self._offline(hold=_HELD)
        self.online = True
        self.caps = frozenset(caps)
        out = []
        for kind, wanted, make in (("ROOTS", self.follow_roots, req.roots),
                                   ("TOOLBAR", self.follow_toolbars, req.toolbar),
                                   ("BADGES", self.follow_badges, req.badges)):
            if wanted:
                out.append(self._ask(kind, make()))
        for d in self.dirs.values():
            out.append(self._observe(d))
        return out

    def disconnected(self, hold=False):
        """The connection closed: every listing, root and toolbar item is dropped (reported in
        the changes), nothing is waited for. Badges stay: a badge's look outlives connections.

        hold=True keeps each directory's listing instead (items() and item() answer from it for
        its entries, and nothing is reported for them; the directory's own Item goes, as it
        comes again with the new listing) until the next connection's listing of the directory
        replaces it, reporting only the entries that differ, or until release(). For a daemon
        restarted at once (socket activation), where a file manager would otherwise redraw
        every file shown twice, cleared and then listed again: 20,000 files cost Nautilus two
        seconds. The caller bounds how long the old states may show by calling release()."""
        self._offline(hold=hold)

    def release(self):
        """Ends disconnected(hold=True)'s hold: the listings no new one has replaced yet are
        dropped and reported, as disconnected() would have."""
        for d in self.dirs.values():
            if d.held:
                d.held = False
                if d.items is not None:
                    self._changes._all(d.path)
                d.items = None

    def _offline(self, hold):
        """disconnected()'s work. hold: True (keep every listing), False (drop them all) or
        _HELD (keep only those already held: connected() after disconnected(hold=True))."""
        self.online = False
        for d in self.dirs.values():
            keep = d.held if hold is _HELD else (hold and (d.held or d.items is not None))
            if keep:
                if d.own is not None:
                    self._changes._name(d.path, SELF)
            elif d.items is not None or d.own is not None:
                self._changes._all(d.path)
            if not keep:
                d.items = None
            d.held = keep
            d.own = d.code = d.request = d.relist = d.incoming = None
            d.status = NEW
        for path in self.looked:
            self._changes._name(split_path(path)[0], split_path(path)[1])
        self.looked = collections.OrderedDict()
        if self.roots:
            self._changes.roots.update(self.roots)
        self.roots = None
        if self.toolbars:
            self._changes.toolbars = True
        self.toolbars = None
        self._asked = {}
        self._badges_asked = set()
        self._badges_current = set()

    # -- what the caller follows ---------------------------------------------------------

    def follow(self, path):
        """Follows the directory `path` (bytes, absolute and normalised, as the daemon names
        it: symbolic links resolved). Already followed: it becomes the most recent, and nothing
        is sent. New: ``OBSERVE`` once connected, and where that makes more than max_dirs, the
        least recent ones are given up (``UNOBSERVE``; in changes.forgotten)."""
        if not path.startswith(b"/"):
            raise ValueError("follow() takes an absolute path, not %r" % (path,))
        d = self.dirs.get(path)
        if d is not None:
            self.dirs.move_to_end(path)
            return []
        d = self.dirs[path] = Directory(path)
        out = []
        while self.max_dirs is not None and len(self.dirs) > self.max_dirs:
            _, old = self.dirs.popitem(last=False)
            out += self._give_up(old)
        if self.online:
            out.append(self._observe(d))
        return out

    def unfollow(self, path):
        """Stops following `path`: ``UNOBSERVE`` where it was observed."""
        d = self.dirs.pop(path, None)
        return [] if d is None else self._give_up(d)

    def retry(self, path):
        """Observes again a followed directory the daemon refused (``not-found``: made a moment
        ago, before the daemon saw it). Nothing where it is not refused."""
        d = self.dirs.get(path)
        if d is None or d.status != REFUSED or not self.online:
            return []
        return [self._observe(d)]

    def status(self, *paths):
        """``STATUS <path>...``, whose answer (through answered()) updates the cache."""
        return req.status(*paths)

    # -- answers and pushes ---------------------------------------------------------------

    def data(self, request, message):
        """A data line of the answer to a request this follower gave, as it arrives (the
        Connection's ``on_data``). Optional: a listing's lines are then read into Items as they
        come, a slice of the connection at a time, so its final line costs little (a 20,000-line
        listing read at once holds a file manager's main loop for over 100 ms)."""
        if request.verb not in LISTINGS:
            return
        d = self.dirs.get(request.path)
        if d is None or (d.request is not request and d.relist is not request):
            return
        if d.incoming is None or d.incoming[0] is not request:
            d.incoming = (request, {})
        _listing((message,), self.keep, d.incoming[1])

    def _take_listing(self, d, request, data):
        """The listing of an answer: what data() read of it (dropped from the directory), else
        its data lines now."""
        if d.incoming is not None and d.incoming[0] is request:
            items, d.incoming = d.incoming[1], None
            return items
        return _listing(data, self.keep)

    def answered(self, request, reply):
        """The answer to a request this follower gave (a Reply, or anything with `final`, the
        OK/ERR Message or None when the connection closed first, and `data`, the data lines).
        Returns further requests. Answers to requests it no longer waits for are ignored."""
        final = reply.final
        if final is None:
            return []
        verb = request.verb
        if verb == "OBSERVE":
            return self._observed(request, final, reply.data)
        if verb == "LIST":
            return self._relisted(request, final, reply.data)
        if verb == "STATUS":
            for m in reply.data:
                item = codec.Item.from_message(m)
                if item is not None:
                    self._item(item, looked_up=True)
            return []
        if self._asked.get(verb) is not request:
            return []
        del self._asked[verb]
        if not final.ok:
            return []
        if verb == "ROOTS":
            old = self.roots or {}
            self.roots = {}
            for m in reply.data:
                root = codec.Root.from_message(m)
                if root is not None:
                    self.roots[root.path] = root
            self._changes.roots.update(p for p in set(old) | set(self.roots) if old.get(p) != self.roots.get(p))
        elif verb == "TOOLBAR":
            self._set_toolbars([t for t in (Toolbar.from_message(m) for m in reply.data) if t is not None])
        elif verb == "BADGES":
            # The whole set: what a new daemon no longer defines goes (PROTOCOL.md: a client
            # drops its badges at a new epoch; they stay until this answer so nothing flickers).
            listed = {}
            for m in reply.data:
                badge = codec.Badge.from_message(m)
                if badge is not None:
                    listed[badge.id] = badge
            for badge_id in set(self.badges) | set(listed):
                if self.badges.get(badge_id) != listed.get(badge_id):
                    self._changes.badges.add(badge_id)
            self.badges = listed
            self._badges_current.update(listed)
        return []

    def push(self, message):
        """A push (``* ...``) from the daemon; returns the requests it calls for."""
        kind = message.kind
        if kind == "ITEM":
            item = codec.Item.from_message(message)
            return [] if item is None else self._item(item)
        if kind == "TOOLBAR":
            self._toolbar_pushed(Toolbar.from_message(message))
            return []
        if not message.fields:
            return []
        path = message.fields[0]
        if kind == "GONE":
            return self._gone(path)
        if kind == "RESET":
            d = self.dirs.get(path)
            if d is None or d.status not in (ASKED, OBSERVED) or not self.online:
                return []
            d.relist = req.list_dir(path)
            return [d.relist]
        if kind == "ROOT":
            return self._root(message)
        if kind == "BADGE":
            badge = codec.Badge.from_message(message)
            if badge is not None:
                self.badges[badge.id] = badge
                self._badges_current.add(badge.id)
                self._changes.badge_pushes.add(badge.id)
        return []

    # -- inside ---------------------------------------------------------------------------

    def _ask(self, verb, request):
        self._asked[verb] = request
        return request

    def _observe(self, d):
        d.status = ASKED
        d.code = None
        d.request = req.observe(d.path)
        return d.request

    def _give_up(self, d):
        d.incoming = None
        self._changes.forgotten[d.path] = d
        if d.items is not None or d.own is not None:
            self._changes._all(d.path)
        if self.online and d.status in (ASKED, OBSERVED):
            return [req.unobserve(d.path)]
        return []

    def _observed(self, request, final, data):
        d = self.dirs.get(request.path)
        if d is None or d.request is not request:
            return []
        d.request = None
        if final.ok:
            items = self._take_listing(d, request, data)
            if d.held:
                self._differences(d.path, d.items, items)
            else:
                self._changes._all(d.path)
            d.items = items
            d.status = OBSERVED
            self._changes.listed.add(d.path)
        else:
            self._take_listing(d, request, ())
            d.items = {}
            d.status = REFUSED
            d.code = final.code
            self._changes.refused[d.path] = d.code
            self._changes._all(d.path)
        d.held = False
        return []

    def _differences(self, path, old, new):
        """Reports the entries of `path` whose Item differs between two listings of it."""
        for name, item in new.items():
            if _differs(old.get(name), item):
                self._changes._name(path, name)
        for name in old:
            if name not in new:
                self._changes._name(path, name)

    def _relisted(self, request, final, data):
        d = self.dirs.get(request.path)
        if d is None or d.relist is not request:
            return []
        d.relist = None
        if not final.ok or d.status != OBSERVED:
            self._take_listing(d, request, ())
            return []
        old, d.items = d.items, self._take_listing(d, request, data)
        self._differences(d.path, old, d.items)
        return []

    def _item(self, item, looked_up=False):
        path = item.path
        parent, name = split_path(path)
        placed = False
        d = self.dirs.get(parent)
        if d is not None and d.status == OBSERVED and path != parent:
            placed = True
            if self.keep is not None and not self.keep(item):
                if d.items.pop(name, None) is not None:
                    self._changes._name(parent, name)
            else:
                old = d.items.get(name)
                d.items[name] = item
                if _differs(old, item):
                    self._changes._name(parent, name)
        out = []
        own = self.dirs.get(path)
        if own is not None:
            placed = True
            if _differs(own.own, item):
                self._changes._name(path, SELF)
            own.own = item
            if own.status == REFUSED and own.code == "not-found" and item.kind == "dir" and self.online:
                out.append(self._observe(own))     # asked about before the daemon had seen it
        # A STATUS answer outside the followed directories is kept (and kept current by the
        # pushes that reach it) for item() to find; the least recently asked go first.
        if not placed and (looked_up or path in self.looked):
            if _differs(self.looked.get(path), item):
                self._changes._name(parent, name)
            self.looked[path] = item
            if looked_up:
                self.looked.move_to_end(path)
                while len(self.looked) > LOOKED_MAX:
                    self.looked.popitem(last=False)
        if (self.follow_badges and self.online and item.badge and item.badge not in self._badges_current
                and item.badge not in self._badges_asked and "BADGES" not in self._asked):
            self._badges_asked.add(item.badge)    # a provider defined a badge (no badge-push)
            out.append(self._ask("BADGES", req.badges()))
        return out

    def _gone(self, path):
        parent, name = split_path(path)
        d = self.dirs.get(parent)
        if d is not None and d.items and d.items.pop(name, None) is not None:
            self._changes._name(parent, name)
        if self.looked.pop(path, None) is not None:
            self._changes._name(parent, name)
        gone = self.dirs.pop(path, None)
        if gone is not None:
            # Its observation ended with it: a directory made again there is observed anew.
            self._changes.forgotten[path] = gone
            self._changes._all(path)
        return []

    def _root(self, message):
        root = codec.Root.from_message(message)
        if root is None:
            return []
        out = []
        if self.roots is not None:
            if root.removed:
                if self.roots.pop(root.path, None) is not None:
                    self._changes.roots.add(root.path)
            elif self.roots.get(root.path) != root:
                self.roots[root.path] = root
                self._changes.roots.add(root.path)
        # Engines come and go with their claims, their toolbar items with them: a daemon that
        # pushes `* TOOLBAR` says so itself, an older one is asked.
        if (self.follow_toolbars and self.online and "toolbar-push" not in self.caps
                and "TOOLBAR" not in self._asked):
            out.append(self._ask("TOOLBAR", req.toolbar()))
        if root.removed:
            for path in [p for p in self.looked if is_under(p, root.path)]:
                del self.looked[path]
                self._changes._name(*split_path(path))
        for d in list(self.dirs.values()):
            if not is_under(d.path, root.path):
                continue
            if root.removed:
                # The root's tree is forgotten, and the observations in it end.
                if d.items or d.own is not None or d.status != REFUSED:
                    self._changes._all(d.path)
                d.items = {}
                d.own = None
                d.held = False
                d.status = REFUSED
                d.code = "outside"
                d.request = d.relist = d.incoming = None
            elif d.status == REFUSED and d.code == "outside" and not root.scanning and self.online:
                out.append(self._observe(d))       # a root now holds it: only "outside" mends so
        return out

    def _set_toolbars(self, toolbars):
        if toolbars != (self.toolbars or []):
            self._changes.toolbars = True
        self.toolbars = toolbars

    def _toolbar_pushed(self, toolbar):
        """One engine's item appears, changes (in its place) or goes. Before TOOLBAR answered
        nothing: its answer comes after, and says it all."""
        if toolbar is None or self.toolbars is None:
            return
        toolbars = list(self.toolbars)
        at = next((i for i, t in enumerate(toolbars) if t.provider == toolbar.provider), None)
        if toolbar.removed:
            if at is not None:
                del toolbars[at]
        elif at is not None:
            toolbars[at] = toolbar
        else:
            toolbars.append(toolbar)
        self._set_toolbars(toolbars)

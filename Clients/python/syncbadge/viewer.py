"""Helpers for viewers (file managers, prompts, scripts): actions and the engines' answers,
toolbar items, and waiting until paths are synced (PROTOCOL.md "Capabilities of version 1.2").

    conn = Connection(role="viewer", name="my-tool").open()
    viewer = Viewer(conn)
    print(viewer.action("sync.now", b"/home/me/Sync/a.txt"))     # the engine's answer, or None
    for t in viewer.toolbars():                                    # [Toolbar]
        ...
    wait([b"/home/me/Sync"], timeout=600)                          # every path synced, or raises

- ``action(..., reply=True)`` asks with ``reply=1`` where the daemon announces ``action-reply``
  and returns the engine's ``message=`` (None without one); ``ERR failed`` raises ActionFailed,
  ``ERR timeout`` ActionTimeout, ``ERR no-provider`` NoProvider (each a ServerError).
- Toolbar: a ``TOOLBAR`` data line, a ``* TOOLBAR`` push (cap ``toolbar-push``), or
  ``* TOOLBAR provider=<name> removed``.
- wait(): its own connection, which OBSERVEs the directories that hold the paths and reads
  the pushes (never polls) until every path is ``synced``; a directory is synced when its
  whole subtree is (its state is the roll-up).
"""

import collections
import os
import time

from . import codec, req
from .connection import Connection, Disconnected, ServerError

__all__ = ["Viewer", "Toolbar", "ActionFailed", "ActionTimeout", "NoProvider", "action_error",
           "answer_of", "toolbars_of", "WaitState", "WaitFailed", "WaitTimeout", "wait", "ANSWER_DEADLINE"]

ANSWER_DEADLINE = 10        # seconds the daemon waits for an engine's ANSWER before ERR timeout
ACTION_WAIT = ANSWER_DEADLINE + 5   # how long action() waits for the daemon by default


# ---------------------------------------------------------------------------------------
# Actions and their answers

class _ActionError(ServerError):
    def __init__(self, reply):
        ServerError.__init__(self, reply)
        self.action_id = getattr(reply, "action_id", None) or "the action"


class ActionFailed(_ActionError):
    """``ERR failed``: the engine answered the action with ``failed=1``; `message` is what
    it said."""

    def __str__(self):
        return "failed" + (": " + self.message if self.message else "")


class ActionTimeout(_ActionError):
    """``ERR timeout``: the engine did not answer within ANSWER_DEADLINE seconds."""

    def __str__(self):
        return "the engine did not answer within %d seconds" % ANSWER_DEADLINE


class NoProvider(_ActionError):
    """``ERR no-provider``: no engine handles the action there, or the engine went away before
    it answered."""

    def __str__(self):
        return self.message or "no sync engine handles %s there" % self.action_id


_ACTION_ERRORS = {"failed": ActionFailed, "timeout": ActionTimeout, "no-provider": NoProvider}


def action_error(reply):
    """The exception for an ACTION's ERR answer: ActionFailed, ActionTimeout, NoProvider, or
    a plain ServerError for any other code."""
    return _ACTION_ERRORS.get(reply.code, ServerError)(reply)


def answer_of(reply):
    """The engine's answer to an ACTION Reply that is done: its ``message=`` (None without
    one); raises as action_error says for ERR, Disconnected when the connection closed first."""
    if reply.final is None:
        raise Disconnected(reply.reason or "no answer")
    if not reply.ok:
        raise action_error(reply)
    return reply.final.opt("message")


_ToolbarBase = collections.namedtuple("Toolbar", "name tooltip provider image removed")


class Toolbar(_ToolbarBase):
    """A provider's toolbar item: ``TOOLBAR name= tooltip= provider= [image=]`` (a data line of
    TOOLBAR, or the ``* TOOLBAR`` push), or ``* TOOLBAR provider=<name> removed`` (removed True,
    the other fields None)."""

    __slots__ = ()

    @classmethod
    def from_message(cls, message):
        """The Toolbar of a TOOLBAR line, or None for any other line (or one without provider=)."""
        if message.kind != "TOOLBAR":
            return None
        provider = message.opt("provider")
        if provider is None:
            return None
        if message.is_push and message.arg(0) == "removed":
            return cls(None, None, provider, None, True)
        return cls(message.opt("name", ""), message.opt("tooltip", ""), provider, message.opt("image"), False)


class Viewer(object):
    """A viewer's requests over a Connection: actions with their answers, toolbar items."""

    def __init__(self, connection):
        self.conn = connection

    @property
    def answers(self):
        """Whether the daemon passes engines' answers on (cap ``action-reply``)."""
        return "action-reply" in self.conn.caps

    def send_action(self, action_id, *paths, target=None, provider=None, reply=True, on_answer=None):
        """``ACTION <action-id> [target=] [provider=] <path>... [reply=1]`` without waiting;
        returns the Reply (see answer_of). ``reply=1`` goes only where the daemon announces
        ``action-reply``; then the answer comes once the engine answered (at most
        ANSWER_DEADLINE seconds), and this connection's later requests are answered after it."""
        r = self.conn.send(req.action(action_id, *paths, target=target, provider=provider,
                                      reply=reply and self.answers), on_answer=on_answer)
        r.action_id = action_id
        return r

    def action(self, action_id, *paths, target=None, provider=None, reply=True, timeout=ACTION_WAIT):
        """send_action(), then waits: the engine's ``message=`` (None without one, and always
        None where the daemon does not pass answers on: then OK only says it was delivered).
        Raises ActionFailed, ActionTimeout, NoProvider, ServerError, Disconnected, or
        TimeoutError after `timeout` seconds."""
        r = self.send_action(action_id, *paths, target=target, provider=provider, reply=reply)
        if not r.wait(timeout):
            raise TimeoutError("no answer to ACTION %s within %gs" % (action_id, timeout))
        return answer_of(r)

    def toolbar(self, on_answer=None):
        """``TOOLBAR``: the Reply; toolbars_of(reply) gives its items."""
        return self.conn.send(req.toolbar(), on_answer=on_answer)

    def toolbars(self, timeout=None):
        """``TOOLBAR``, waited for: [Toolbar]."""
        return toolbars_of(self.toolbar().result(timeout))


def toolbars_of(reply):
    """The Toolbar items of a TOOLBAR Reply."""
    return [t for t in (Toolbar.from_message(m) for m in reply.data) if t is not None]


# ---------------------------------------------------------------------------------------
# Waiting until paths are synced

DONE_STATES = frozenset(["synced", "ignored"])
FAILED_STATES = frozenset(["error", "conflict"])


class WaitFailed(Exception):
    """A path waited for is ``error`` or ``conflict`` (or ``outside`` every root): `path` is the
    path waited for, `item` the Item that says so (for a directory, the entry below it whose
    state made the roll-up, when it could be found), `state` and `message` its own."""

    def __init__(self, path, item):
        self.path = path
        self.item = item
        self.state = item.state
        self.message = item.message
        where = os.fsdecode(item.path)
        if self.state == "outside":
            text = "%s: not under a registered root" % where
        else:
            text = "%s: %s%s" % (where, self.state, ": " + self.message if self.message else "")
        Exception.__init__(self, text)


class WaitTimeout(TimeoutError):
    """The timeout passed first; `left` is {path: Item} of the paths not synced yet."""

    def __init__(self, timeout, left):
        self.left = left
        TimeoutError.__init__(self, "not synced after %gs: %s" % (
            timeout, ", ".join("%s (%s)" % (os.fsdecode(p), i.state if i else "?") for p, i in sorted(left.items()))))


class WaitState(object):
    """What wait() knows, without I/O: the newest Item of each path waited for, and when that
    is enough (every path synced or ignored) or a failure (one is error, conflict or outside).
    A path whose tombstone went (update_gone) counts as synced: its deletion reached the
    other side."""

    def __init__(self, paths):
        self.paths = list(dict.fromkeys(paths))
        self.items = dict((p, None) for p in self.paths)

    def update(self, item):
        """Takes an Item (a STATUS answer's, or a push's) for a path waited for; True when what
        a viewer sees of it changed."""
        if item is None or item.path not in self.items:
            return False
        old = self.items[item.path]
        self.items[item.path] = item
        return old is None or (old.state, old.progress, old.message, old.counts, old.kind) != \
            (item.state, item.progress, item.message, item.counts, item.kind)

    def update_gone(self, path):
        """The path's entry and tombstone are both gone: it stands as ``synced`` of kind
        ``gone`` (a tombstone is dropped when it is set synced)."""
        return self.update(codec.Item(path, "synced", "synced", "gone"))

    def failed(self):
        """(path, Item) of the first path in error, conflict or outside, else None."""
        for p in self.paths:
            item = self.items[p]
            if item is not None and (item.state in FAILED_STATES or item.state == "outside"):
                return p, item
        return None

    def done(self):
        return not self.left()

    def left(self):
        """{path: Item or None} of the paths not synced yet."""
        return dict((p, i) for p, i in self.items.items() if i is None or i.state not in DONE_STATES)


def _parent(path):
    head = path.rpartition(b"/")[0]
    return head or b"/"


def _normalise(path):
    data = codec._bytes(path)
    return os.path.abspath(data)     # absolute, no `.`, `..` or trailing `/` (PROTOCOL.md "Framing")


def wait(paths, timeout=None, socket=None, on_progress=None, name="wait", connect_timeout=5.0):
    """Waits until every path is ``synced`` (a directory: its whole subtree, through the
    roll-up; an ``ignored`` path needs nothing), reading pushes on a connection of its own.

    paths: bytes or str, relative ones taken from the current directory. timeout: seconds (None:
    no limit). on_progress(state): called with the WaitState after each change (state.left()
    is what is still to come, with its Items: state, progress, counts).

    Returns {path: Item}. Raises WaitFailed when a path is (or becomes) ``error`` or
    ``conflict``, or is under no root; WaitTimeout (a TimeoutError) at the timeout;
    ServerError where the daemon refuses (``not-found``...); OSError when no daemon answers;
    Disconnected when it goes away meanwhile."""
    paths = [_normalise(p) for p in paths]
    state = WaitState(paths)
    deadline = None if timeout is None else time.monotonic() + timeout
    targets = {}                # path -> the directory observed for it
    changed = [False]
    errors = []                 # a refresh's ServerError, raised from the loop
    pending_refresh = {}        # path -> Reply of a STATUS under way

    def left():
        return None if deadline is None else max(0.0, deadline - time.monotonic())

    def apply(message):
        item = codec.Item.from_message(message)
        if state.update(item):
            changed[0] = True

    def refresh(path):
        """STATUS again, its answer applied in order with the pushes around it."""
        if path in pending_refresh:
            return

        def answered(reply, path=path):
            pending_refresh.pop(path, None)
            if reply.final is None or reply.ok:
                return
            if reply.code == "not-found" and state.items.get(path) is not None:
                if state.update_gone(path):       # neither entry nor tombstone: the deletion synced
                    changed[0] = True
            else:
                errors.append(ServerError(reply))
        pending_refresh[path] = conn.send(req.status(path), on_answer=answered, on_data=apply)

    def on_push(m):
        if m.kind == "ITEM":
            item = codec.Item.from_message(m)
            if item is None:
                return
            if state.update(item):
                changed[0] = True
            # A tombstone shows in no listing: its parent's roll-up moving may be it going.
            for p, d in targets.items():
                if d == item.path and state.items.get(p) is not None and state.items[p].kind == "gone":
                    refresh(p)
        elif m.kind == "GONE" and m.fields:
            gone = m.fields[0]
            for p, d in targets.items():
                if p == gone or d == gone:
                    refresh(p)
        elif m.kind == "RESET" and m.fields:
            for p, d in targets.items():
                if d == m.fields[0]:
                    refresh(p)
        elif m.kind == "ROOT" and m.arg(1) == "removed" and m.fields:
            root = m.fields[0]
            for p in targets:
                if p == root or p.startswith(root.rstrip(b"/") + b"/"):
                    refresh(p)

    conn = Connection(socket, role="viewer", name=name, on_push=on_push)
    conn.open(connect_timeout)
    try:
        # The paths' kinds and the roots: a path is followed through its parent's observation
        # (which pushes `* ITEM` of the path itself), a root through its own.
        roots = conn.send(req.roots())
        first = conn.send(req.status(*paths))
        roots.result(left())
        first.result(left())
        root_paths = set(m.fields[0] for m in roots.lines("ROOT") if m.fields)
        for item in first.items:
            if item.state == "outside":
                raise WaitFailed(item.path, item)
        for p in paths:
            targets[p] = p if p in root_paths else _parent(p)
        nolist = "observe-nolist" in conn.caps
        observes = [conn.send(req.observe(d, listing=not nolist)) for d in dict.fromkeys(targets.values())]
        # Then the states, answered after the observations began: every change from here on
        # is pushed, in order with this answer's lines.
        status = conn.send(req.status(*paths), on_data=apply)
        for r in observes:
            r.result(left())
        status.result(left())
        while True:
            if errors:
                raise errors[0]
            bad = state.failed()
            if bad is not None:
                raise WaitFailed(bad[0], _culprit(conn, bad[1], left()))
            if changed[0]:
                changed[0] = False
                if on_progress is not None:
                    on_progress(state)
            if state.done() and not pending_refresh:
                return dict((p, state.items[p]) for p in paths)
            rest = left()
            if rest is not None and rest <= 0:
                raise WaitTimeout(timeout, state.left())
            if not conn.pump(rest):
                raise Disconnected(conn.closed_reason or "the daemon went away")
    finally:
        conn.close()


def _culprit(conn, item, timeout):
    """For a directory in error or conflict, the entry below it that has that state itself
    (following the roll-up down with LIST); the item itself where there is none."""
    seen = 0
    while item.kind == "dir" and seen < 256:
        seen += 1
        try:
            children = conn.request(req.list_dir(item.path), timeout=timeout).items
        except (ServerError, TimeoutError):
            break
        below = next((c for c in children if c.state == item.state), None)
        if below is None:
            break
        item = below
    return item

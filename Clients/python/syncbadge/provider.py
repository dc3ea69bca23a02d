"""Helpers for sync engines (``HELLO role=provider``; PROTOCOL.md "Verbs for providers").

    conn = Connection(role="provider", name="my-engine", threaded=True).open()
    engine = Provider(conn)
    engine.claim(root).result()
    engine.subscribe_changes(root).result()
    engine.define_menu("items", "sync.now", "Sync now")
    engine.on_action("sync.now", lambda action: ...)
    while True:
        push = conn.next_push()
        change = Change.from_message(push)
        if change: ...                         # the path changed: sync it, then
            engine.set("synced", change.path, gen=change.gen)
        else:
            engine.handle_push(push)            # `* ACTION` to its handler

Every request method sends at once and returns the Reply: requests pipeline, and
``.result()`` waits for (and checks) the answer when it matters.

Where the daemon announces ``action-reply`` (PROTOCOL.md "Capabilities of version 1.2"), an
``* ACTION`` may carry ``reply=<token>`` (``Action.reply``): the client that triggered it waits
for ``answer(action, message, failed=...)``. ``set("syncing", ..., lease=SECONDS)`` (cap
``lease``) keeps a ``syncing`` after the connection closes; ``unclaim(root)`` (cap ``unclaim``)
gives one root up.
"""

import collections

from . import codec, req
from .req import MAX_LEASE

__all__ = ["Provider", "Change", "Action", "MAX_LEASE"]


_ChangeBase = collections.namedtuple("Change", "path gen what from_path")
_ActionBase = collections.namedtuple("Action", "id paths target client provider reply", defaults=(None,))


class Change(_ChangeBase):
    """``* CHANGED <path> gen=<n> what=create|modify|delete|move [from=<path>]``: path and
    from_path are bytes (from_path None unless a move), gen an int (or None), what a str."""

    __slots__ = ()

    @classmethod
    def from_message(cls, message):
        """The Change of a ``* CHANGED`` push, or None for any other line."""
        if not message.is_push or message.kind != "CHANGED" or not message.fields:
            return None
        return cls(message.fields[0], message.opt_int("gen"), message.opt("what"),
                   message.options.get("from"))


class Action(_ActionBase):
    """``* ACTION <action-id> [target=<path>] <path>... from=<client-name> [reply=<token>]``: a
    menu item or the toolbar item was triggered. paths (a list) and target (or None) are bytes,
    client is the triggering client's name, provider the ``provider=`` it addressed (or None),
    reply the token to ``ANSWER`` (None when the client did not ask for an answer, or the
    token is not one the daemon could have sent)."""

    __slots__ = ()

    @classmethod
    def from_message(cls, message):
        """The Action of a ``* ACTION`` push, or None for any other line."""
        if not message.is_push or message.kind != "ACTION" or not message.fields:
            return None
        token = message.options.get("reply")
        return cls(message.arg(0), list(message.fields[1:]), message.options.get("target"),
                   message.opt("from"), message.opt("provider"),
                   token.decode("ascii") if token is not None and codec.is_tag(token) else None)


class Provider(object):
    """A sync engine's requests over a Connection, and the dispatch of ``* ACTION`` pushes."""

    def __init__(self, connection):
        self.conn = connection
        self.handlers = {}          # action id -> handler(Action)

    # -- requests -------------------------------------------------------------------

    def claim(self, root, on_answer=None):
        """``CLAIM <root>``: this connection provides the root's menus, toolbar and actions."""
        return self.conn.send(req.claim(root), on_answer=on_answer)

    def subscribe_changes(self, root, on_answer=None):
        """``SUBSCRIBE-CHANGES <root>``: ``* CHANGED`` pushes from now on."""
        return self.conn.send(req.subscribe_changes(root), on_answer=on_answer)

    def changes(self, root, on_answer=None):
        """``CHANGES <root>``: every pending path (Reply.items), tombstones included."""
        return self.conn.send(req.changes(root), on_answer=on_answer)

    def unclaim(self, root, on_answer=None):
        """``UNCLAIM <root>`` (cap ``unclaim``): gives up this connection's claim of one root; its
        menus, toolbar and actions stop applying there, and the ``syncing`` states this
        connection set under it without a lease are released. ``ERR not-found`` when this
        connection does not hold the claim."""
        return self.conn.send(req.unclaim(root), on_answer=on_answer)

    def set(self, state, path, gen=None, progress=None, message=None, badge=None, recursive=False,
            lease=None, on_answer=None):
        """``SET <state> <path> [gen=] [progress=] [message=] [badge=] [recursive=1] [lease=]``.
        The answer is ``OK gen=<current>``, with ``stale=1`` when `gen` was older than the path's
        (nothing changed): ``reply.final.opt("stale") == "1"``.

        `lease` (seconds, 1 to MAX_LEASE; cap ``lease``) keeps a ``syncing`` after this
        connection closes, until the lease runs out or a later SET; it raises ValueError for
        another state, where the daemon would ignore it, and for a value out of range."""
        return self.conn.send(req.set_state(state, path, gen=gen, progress=progress, message=message, badge=badge,
                                            recursive=recursive, lease=lease), on_answer=on_answer)

    def answer(self, action, message=None, failed=False, on_answer=None):
        """``ANSWER <token> [message=<text>] [failed=1]`` (cap ``action-reply``): the answer the
        client that triggered the action gets (``OK message=``, or ``ERR failed`` with `failed`).
        `action` is an Action or its token; an Action that asked for no answer (``reply`` None)
        sends nothing and returns None. The daemon answers ``ERR not-found`` for a token that
        is unknown, already answered or expired (after 10 seconds)."""
        token = action.reply if isinstance(action, Action) else action
        if token is None:
            return None
        return self.conn.send(req.answer(token, message=message, failed=failed), on_answer=on_answer)

    def define_menu(self, kind, action_id, title, states=None, enabled=True, on_answer=None):
        """``DEFINE-MENU <kind> <action-id> title= [states=a,b] [enabled=0]``; kind is
        ``items``, ``container``, ``sidebar`` or ``toolbar``."""
        return self.conn.send(req.define_menu(kind, action_id, title, states=states, enabled=enabled),
                              on_answer=on_answer)

    def define_toolbar(self, name, tooltip, image=None, on_answer=None):
        """``DEFINE-TOOLBAR name= tooltip= [image=]``."""
        return self.conn.send(req.define_toolbar(name, tooltip, image=image), on_answer=on_answer)

    def define_badge(self, badge_id, label, glyph, ascii, color, image=None, on_answer=None):
        """``DEFINE-BADGE <id> label= glyph= ascii= color= [image=]``."""
        return self.conn.send(req.define_badge(badge_id, label, glyph, ascii, color, image=image),
                              on_answer=on_answer)

    # -- actions --------------------------------------------------------------------

    def on_action(self, action_id, handler):
        """Calls handler(Action) for ``* ACTION <action_id> ...`` (see handle_push)."""
        self.handlers[action_id] = handler

    def handle_push(self, message):
        """Dispatches a ``* ACTION`` push to its handler. Returns True when a handler took
        it; False for another push or an action without a handler."""
        action = Action.from_message(message)
        if action is None:
            return False
        handler = self.handlers.get(action.id)
        if handler is None:
            return False
        handler(action)
        return True

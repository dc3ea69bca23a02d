"""Request builders: every verb of PROTOCOL.md as a function that returns a Req, so that clients
never spell a verb, an option or a role by hand (as Sources/SyncBadgeProtocol/Request.swift does
for Swift).

    from syncbadge import req
    conn.send(req.observe(directory), on_answer=listed)      # Connection.send takes a Req
    conn.request(req.status(a, b))
    req.menu("items", *paths, target=directory).line("7")     # b"7 MENU items /a /b target=/dir\\n"

A Req is a value (verb, fields, options): equal Reqs mean the same request, it can be kept,
compared in tests, and sent later. Fields and option values are bytes or str, as everywhere in
the package (codec.format_line, which raises ValueError for a field that cannot be sent). The
builders leave checking to the daemon, except where it would silently ignore a mistake: a
``lease=`` on a state other than ``syncing``, or out of range.
"""

import collections

from . import codec

__all__ = [
    "Req", "MENU_KINDS", "MAX_LEASE",
    "hello", "ping", "bye", "roots", "badges", "stats", "toolbar", "status", "list_dir", "observe",
    "unobserve", "menu", "action", "add_root", "remove_root", "claim", "unclaim", "changes",
    "subscribe_changes", "set_state", "answer", "define_badge", "define_menu", "define_toolbar",
]

MAX_LEASE = 86400           # seconds: the longest lease= the daemon takes (PROTOCOL.md "lease")
MENU_KINDS = ("items", "container", "sidebar", "toolbar")

_ReqBase = collections.namedtuple("Req", "verb fields options")


class Req(_ReqBase):
    """One request without its tag: `verb` (str), `fields` (a tuple of bytes or str), `options`
    (a tuple of (key, value) pairs, in the order they are written; None values are left out)."""

    __slots__ = ()

    def __new__(cls, verb, fields=(), options=()):
        items = options.items() if hasattr(options, "items") else options
        return _ReqBase.__new__(cls, verb, tuple(fields), tuple((k, v) for k, v in items if v is not None))

    def option(self, key, default=None):
        """The value of option `key` as given, or `default`."""
        for k, v in self.options:
            if k == key:
                return v
        return default

    @property
    def path(self):
        """The first positional field that is a path (OBSERVE's, LIST's directory...), as bytes,
        or None."""
        for f in self.fields:
            b = codec._bytes(f)
            if b.startswith(b"/"):
                return b
        return None

    def line(self, tag):
        """The line to send with `tag`, ending in LF (codec.format_line)."""
        return codec.format_line(tag, self.verb, self.fields, self.options)


def _flag(value):
    return True if value else None


def _bare(verb, doc):
    """A builder for a verb without fields."""
    def build():
        return Req(verb)
    build.__name__ = verb.lower()
    build.__doc__ = doc
    return build


def _on_path(verb, doc):
    """A builder for a verb that takes one path (a directory, a root)."""
    def build(path):
        return Req(verb, (path,))
    build.__name__ = verb.lower().replace("-", "_")
    build.__doc__ = doc
    return build


# -- every role ---------------------------------------------------------------------------

def hello(role, name=None, proto=1, **options):
    """``HELLO proto=1 role=<role> [name=] ...``; `role` is viewer, provider or admin; extra
    options as given, in order (``roots=False`` for no ``* ROOT`` pushes)."""
    return Req("HELLO", (), [("proto", proto), ("role", role), ("name", name)] + list(options.items()))


ping = _bare("PING", "``PING``: OK.")
bye = _bare("BYE", "``BYE``: OK, then the daemon closes the connection.")
roots = _bare("ROOTS", "``ROOTS``: a ``ROOT`` data line per root.")
badges = _bare("BADGES", "``BADGES``: a ``BADGE`` data line per badge.")
stats = _bare("STATS", "``STATS``: a ``STAT <key> <value>`` data line each.")
toolbar = _bare("TOOLBAR", "``TOOLBAR``: a ``TOOLBAR`` data line per provider that defined one.")


def status(*paths):
    """``STATUS <path>...``: one ``ITEM`` per path."""
    if not paths:
        raise ValueError("STATUS needs at least one path")
    return Req("STATUS", paths)


list_dir = _on_path("LIST", "``LIST <dir>``: an ``ITEM`` per direct child.")
unobserve = _on_path("UNOBSERVE", "``UNOBSERVE <dir>``: no more pushes for it (on this connection).")


def observe(directory, listing=True):
    """``OBSERVE <dir>``: as LIST, then pushes for it. ``listing=False`` sends ``list=0`` (cap
    ``observe-nolist``: no data lines, only ``OK count=``)."""
    return Req("OBSERVE", (directory,), [("list", None if listing else False)])


def menu(kind, *paths, target=None, provider=None):
    """``MENU <kind> [target=] [provider=] <path>...``; kind is one of MENU_KINDS."""
    return Req("MENU", (kind,) + paths, [("target", target), ("provider", provider)])


def action(action_id, *paths, target=None, provider=None, reply=False):
    """``ACTION <action-id> [target=] [provider=] <path>... [reply=1]`` (``reply=1``: cap
    ``action-reply``, answered once the engine answered)."""
    return Req("ACTION", (action_id,) + paths,
               [("target", target), ("provider", provider), ("reply", _flag(reply))])


# -- admins -------------------------------------------------------------------------------

add_root = _on_path("ADD-ROOT", "``ADD-ROOT <dir>``: register, watch and index it; OK once indexed.")
remove_root = _on_path("REMOVE-ROOT", "``REMOVE-ROOT <dir>``: stop watching it; its states are forgotten.")


# -- providers ----------------------------------------------------------------------------

claim = _on_path("CLAIM", "``CLAIM <root>``: this connection provides the root's menus, toolbar and actions.")
unclaim = _on_path("UNCLAIM", "``UNCLAIM <root>`` (cap ``unclaim``): gives the claim of one root up.")
changes = _on_path("CHANGES", "``CHANGES <root>``: an ``ITEM`` per pending path, tombstones included.")
subscribe_changes = _on_path("SUBSCRIBE-CHANGES", "``SUBSCRIBE-CHANGES <root>``: ``* CHANGED`` pushes from now on.")


def set_state(state, path, gen=None, progress=None, message=None, badge=None, recursive=False, lease=None):
    """``SET <state> <path> [gen=] [progress=] [message=] [badge=] [recursive=1] [lease=]``.
    `lease` (whole seconds, 1 to MAX_LEASE; cap ``lease``) only holds a ``syncing``: another
    state or a value out of range raises ValueError, where the daemon would ignore or refuse it."""
    if lease is not None:
        if isinstance(lease, bool) or not isinstance(lease, int) or not 1 <= lease <= MAX_LEASE:
            raise ValueError("lease is whole seconds from 1 to %d, not %r" % (MAX_LEASE, lease))
        if state != "syncing":
            raise ValueError("a lease holds a syncing state, not %r" % (state,))
    return Req("SET", (state, path), [("gen", gen), ("progress", progress), ("message", message),
                                      ("badge", badge), ("recursive", _flag(recursive)), ("lease", lease)])


def answer(token, message=None, failed=False):
    """``ANSWER <token> [message=] [failed=1]`` (cap ``action-reply``)."""
    if not codec.is_tag(token):
        raise ValueError("not a reply token: %r" % (token,))
    return Req("ANSWER", (token,), [("message", message), ("failed", _flag(failed))])


def define_badge(badge_id, label, glyph, ascii, color, image=None):
    """``DEFINE-BADGE <id> label= glyph= ascii= color= [image=]``."""
    return Req("DEFINE-BADGE", (badge_id,),
               [("label", label), ("glyph", glyph), ("ascii", ascii), ("color", color), ("image", image)])


def define_menu(kind, action_id, title, states=None, enabled=True):
    """``DEFINE-MENU <kind> <action-id> title= [states=a,b] [enabled=0]``."""
    return Req("DEFINE-MENU", (kind, action_id),
               [("title", title), ("states", ",".join(states) if states else None),
                ("enabled", None if enabled else False)])


def define_toolbar(name, tooltip, image=None):
    """``DEFINE-TOOLBAR name= tooltip= [image=]``."""
    return Req("DEFINE-TOOLBAR", (), [("name", name), ("tooltip", tooltip), ("image", image)])

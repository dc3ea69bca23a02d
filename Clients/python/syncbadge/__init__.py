"""SyncBadge client library: the wire protocol of syncbadged for Python 3 (standard library only).

- codec: percent-encoding of fields, parsing and building lines (PROTOCOL.md "Framing")
- socketpath: where the daemon's socket is (PROTOCOL.md "Transport")
- connection: HELLO, tagged requests and their answers, pushes, reconnects; blocking, with a
  reader thread, or driven by an event loop
- provider: requests and pushes of sync engines (CLAIM, UNCLAIM, SET with lease=, CHANGES, menus,
  ``* ACTION`` and its ANSWER)
- viewer: actions with the engines' answers, toolbar items (``* TOOLBAR``), and wait(): until
  paths are synced
- req: request builders, one per verb (``conn.send(req.observe(d))``)
- follow: DirectoryFollower, per-directory state from answers and pushes, without I/O
- testing (imported on its own: ``from syncbadge import testing``): a syncbadged of a test's
  own, on a private socket, its log read as it comes

See Clients/python/README.md.
"""

from . import req
from .codec import (MAX_REQUEST_LINE, Badge, Item, LineBuffer, Message, ProtocolError, Request, Root, decode,
                    encode, format_line, is_id, is_tag, parse_message, parse_request)
from .connection import MAX_LINE, PROTOCOL_VERSION, Connection, Disconnected, Reply, ServerError
from .provider import MAX_LEASE, Action, Change, Provider
from .follow import ALL, Changes, Directory, DirectoryFollower
from .req import Req
from .socketpath import socket_path
from .viewer import (ActionFailed, ActionTimeout, NoProvider, Toolbar, Viewer, WaitFailed, WaitState, WaitTimeout,
                     action_error, answer_of, toolbars_of, wait)

__version__ = "0.1.0"

__all__ = [
    "ALL", "Badge", "Changes", "Directory", "DirectoryFollower", "Req", "Root", "req",
    "MAX_LEASE", "MAX_LINE", "MAX_REQUEST_LINE", "PROTOCOL_VERSION", "Action", "ActionFailed", "ActionTimeout",
    "Change", "Connection", "Disconnected", "Item", "LineBuffer", "Message", "NoProvider", "ProtocolError",
    "Provider", "Reply", "Request", "ServerError", "Toolbar", "Viewer", "WaitFailed", "WaitState", "WaitTimeout",
    "action_error", "answer_of", "decode", "encode", "format_line", "is_id", "is_tag", "parse_message",
    "parse_request", "socket_path", "toolbars_of", "wait",
]

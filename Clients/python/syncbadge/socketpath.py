"""Where the daemon's socket is (PROTOCOL.md "Transport"), as Sources/SyncBadgeCore/SocketPath.swift.

The first that applies:
1. the explicit path (a ``--socket`` option), unless empty;
2. ``$SYNCBADGE_SOCKET``, unless empty;
3. ``$XDG_RUNTIME_DIR/syncbadge/daemon.sock``, when ``$XDG_RUNTIME_DIR`` is absolute (starts
   with ``/``; an empty or relative value does not apply);
4. ``/tmp/syncbadge-$UID/daemon.sock``.
"""

import os

__all__ = ["socket_path"]


def socket_path(explicit=None, environ=None, uid=None):
    """The socket path. `environ` defaults to os.environ, `uid` to os.getuid()."""
    if explicit:
        return explicit
    env = os.environ if environ is None else environ
    value = env.get("SYNCBADGE_SOCKET")
    if value:
        return value
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime is not None and runtime.startswith("/"):
        return runtime + "/syncbadge/daemon.sock"
    return "/tmp/syncbadge-%d/daemon.sock" % (os.getuid() if uid is None else uid)

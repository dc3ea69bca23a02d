#!/usr/bin/env python3
"""A stand-in for the Nextcloud desktop client's SocketApi, serving SyncBadge's states.

Debian's `nautilus-nextcloud`, `nemo-nextcloud` and `caja-nextcloud` (3.7.3) are extensions
that talk to `$XDG_RUNTIME_DIR/Nextcloud/socket`. This program listens there and answers them
as the client does, with the states a running syncbadged holds, so that the same work (a SET to
the daemon) drives SyncBadge's extension and Nextcloud's side by side (make bench-fm).

    nextcloud_standin.py --socket PATH --root DIR [--root DIR ...]

What it speaks (the extension's syncstate-Nextcloud.py, shell_integration in the client):

- at connect: `REGISTER_PATH:<root>` for each root (the extension asks only under them);
- `VERSION:` -> `VERSION:3.7.3:1.1`; `GET_STRINGS:` -> `GET_STRINGS:BEGIN`, `STRING:...`,
  `GET_STRINGS:END`; `GET_MENU_ITEMS:<paths>` -> `GET_MENU_ITEMS:BEGIN`, `GET_MENU_ITEMS:END`;
- `RETRIEVE_FILE_STATUS:<path>`, `RETRIEVE_FOLDER_STATUS:<path>/` -> `STATUS:<state>:<path as
  asked>`, the state mapped from the daemon's (synced OK, syncing SYNC, pending NEW, error and
  conflict ERROR, ignored IGNORE, unknown and outside NOP);
- when the daemon pushes a change of a path it was asked about: `STATUS:<state>:<path>` to every
  client, as the client broadcasts its sync engine's changes.

The daemon's side is the Python package's DirectoryFollower on one viewer connection: the
parent of each path asked about is OBSERVEd once, and its listing answers every later request
without a round trip. The extension sends one request per file with a blocking `send` and reads
only between main-loop iterations, so each client is written by a thread of its own from a
queue, as the real client (Qt, buffered) does: answering from the reading thread would deadlock
once both socket buffers are full.
"""

import argparse
import os
import queue
import signal
import socket
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "..", "Clients", "python")))

import syncbadge as sb  # noqa: E402
from syncbadge.follow import split_path  # noqa: E402

STATES = {"synced": "OK", "syncing": "SYNC", "pending": "NEW", "error": "ERROR", "conflict": "ERROR",
          "ignored": "IGNORE"}


def nextcloud_state(item):
    if item is None or item.kind == "gone":
        return "NOP"
    return STATES.get(item.state, "NOP")


class Client(object):
    """One extension's connection: read on one thread, written from a queue on another."""

    def __init__(self, server, sock):
        self.server = server
        self.sock = sock
        self.out = queue.Queue()
        self.alive = True
        threading.Thread(target=self._write_loop, daemon=True).start()
        threading.Thread(target=self._read_loop, daemon=True).start()

    def send(self, line):
        if self.alive:
            self.out.put(line.encode("utf-8", "surrogateescape") + b"\n")

    def _write_loop(self):
        while True:
            data = [self.out.get()]
            # What queued meanwhile goes in the same write, as a buffered socket would.
            try:
                while len(data) < 4096:
                    data.append(self.out.get_nowait())
            except queue.Empty:
                pass
            if data[-1] is None:
                return
            try:
                self.sock.sendall(b"".join(d for d in data if d is not None))
            except OSError:
                self.close()
                return
            if None in data:
                return

    def _read_loop(self):
        rest = b""
        while True:
            try:
                chunk = self.sock.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                self.close()
                return
            rest += chunk
            *lines, rest = rest.split(b"\n")
            for raw in lines:
                if raw:
                    self.server.request(self, raw.decode("utf-8", "surrogateescape"))

    def close(self):
        if self.alive:
            self.alive = False
            self.out.put(None)
            self.server.gone(self)
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class StandIn(object):
    def __init__(self, path, roots, daemon_socket=None):
        self.path = path
        self.roots = [os.path.realpath(r) for r in roots]
        self.lock = threading.RLock()
        self.clients = []
        self.follower = sb.DirectoryFollower()
        self.waiting = {}          # real directory (bytes) -> [(client, path as asked, real path)]
        self.asked = set()         # real paths (bytes) some client asked about: pushes go out for these
        self.conn = sb.Connection(path=daemon_socket, role="viewer", name="nextcloud-standin",
                                  threaded=True, on_push=self._push, on_close=self._closed)
        self.relisted = set()      # directories observed again on a new connection
        self.reconnecting = False

    # -- the daemon ---------------------------------------------------------------------

    def start(self):
        self._connect(10)
        os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
        if os.path.exists(self.path):
            os.unlink(self.path)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(16)
        sys.stderr.write("nextcloud-standin: listening on %s for %s\n" % (self.path, ", ".join(self.roots)))
        sys.stderr.flush()

    def serve(self):
        while True:
            sock, _ = self.listener.accept()
            client = Client(self, sock)
            with self.lock:
                self.clients.append(client)
            for root in self.roots:
                client.send("REGISTER_PATH:" + root)

    def _connect(self, timeout):
        self.conn.open(timeout)
        with self.lock:
            self.relisted = set(self.follower.dirs)
            self._send_all(self.follower.connected(self.conn.caps))

    def _reconnect(self):
        """The daemon went (killed, restarted): connect again as soon as it answers, as the
        real client keeps serving its own state; the listings that come say what is true now."""
        while True:
            time.sleep(0.25)
            try:
                self._connect(5)
                with self.lock:
                    self.reconnecting = False
                return
            except (OSError, sb.Disconnected, sb.ServerError):
                continue

    def _send_all(self, requests):
        for r in requests:
            self.conn.send(r, on_answer=lambda reply, r=r: self._answered(r, reply))

    def _answered(self, request, reply):
        with self.lock:
            self._send_all(self.follower.answered(request, reply))
            self._settle()

    def _push(self, message):
        with self.lock:
            self._send_all(self.follower.push(message))
            self._settle()

    def _closed(self, conn, reason):
        sys.stderr.write("nextcloud-standin: the daemon went away (%s)\n" % reason)
        sys.stderr.flush()
        with self.lock:
            self.follower.disconnected()
            if self.reconnecting:
                return
            self.reconnecting = True
        threading.Thread(target=self._reconnect, daemon=True).start()

    def _settle(self):
        """Answers what waited for a listing, and broadcasts what changed that was asked about."""
        changes = self.follower.take_changes()
        for d in list(changes.listed) + list(changes.refused):
            for client, asked, real in self.waiting.pop(d, []):
                self._answer(client, asked, real)
            if d in self.relisted:
                # Listed again after a reconnect: what was asked there before may have changed.
                self.relisted.discard(d)
                for real in [p for p in self.asked if split_path(p)[0] == d]:
                    self._broadcast(real)
        for d, names in changes.dirs.items():
            if names is sb.ALL or d in changes.listed:
                continue
            for name in names:
                real = d.rstrip(b"/") + b"/" + name if name else d
                if real in self.asked:
                    self._broadcast(real)

    def _broadcast(self, real):
        item = self.follower.item(real)
        path = os.fsdecode(real)
        if item is not None and item.kind == "dir":
            path += "/"
        line = "STATUS:%s:%s" % (nextcloud_state(item), path)
        for client in self.clients:
            client.send(line)

    def _answer(self, client, asked, real):
        client.send("STATUS:%s:%s" % (nextcloud_state(self.follower.item(real)), asked))

    # -- the extensions -----------------------------------------------------------------

    def gone(self, client):
        with self.lock:
            if client in self.clients:
                self.clients.remove(client)

    def request(self, client, line):
        verb, _, arg = line.partition(":")
        if verb == "VERSION":
            client.send("VERSION:3.7.3:1.1")
        elif verb == "GET_STRINGS":
            client.send("GET_STRINGS:BEGIN")
            client.send("STRING:CONTEXT_MENU_TITLE:Nextcloud")
            client.send("GET_STRINGS:END")
        elif verb == "GET_MENU_ITEMS":
            client.send("GET_MENU_ITEMS:BEGIN")
            client.send("GET_MENU_ITEMS:END")
        elif verb in ("RETRIEVE_FILE_STATUS", "RETRIEVE_FOLDER_STATUS"):
            real = os.fsencode(os.path.normpath(arg)) if arg != "/" else b"/"
            parent, _ = split_path(real)
            with self.lock:
                self.asked.add(real)
                self._send_all(self.follower.follow(parent))
                d = self.follower.directory(parent)
                if d.status in (sb.follow.OBSERVED, sb.follow.REFUSED) or not self.follower.online:
                    self._answer(client, arg, real)
                else:
                    self.waiting.setdefault(parent, []).append((client, arg, real))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--socket", default=os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/tmp"), "Nextcloud", "socket"),
                    help="the socket the extensions connect to (default $XDG_RUNTIME_DIR/Nextcloud/socket)")
    ap.add_argument("--daemon-socket", default=None, help="syncbadged's socket (default: the package's rule)")
    ap.add_argument("--root", action="append", required=True, help="a sync folder to register (repeatable)")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    standin = StandIn(args.socket, args.root, args.daemon_socket)
    standin.start()
    standin.serve()


if __name__ == "__main__":
    main()

"""The daemon's connection in the GLib main loop: the package's Connection, driven by the loop
(fileno() watched for input, and for output while wants_write()), feeding the Tray model.

Nothing polls: the socket wakes the loop when the daemon says something. While the daemon is
down, a reconnect timer backs off from RECONNECT_FIRST to RECONNECT_MAX; once connected no timer
exists.
"""

import logging

from gi.repository import GLib

from syncbadge import Connection, req
from syncbadge.viewer import Viewer, answer_of

LOG = logging.getLogger("syncbadge-tray")

RECONNECT_FIRST = 0.25
RECONNECT_MAX = 10.0


class Link(object):
    """Follows the daemon for a Tray. `on_change()` is called once per batch of input that
    changed something (at most once per main-loop wake-up); `on_answer(provider, title, text,
    failed)` when an engine answered a toolbar action."""

    def __init__(self, tray, on_change, on_answer, socket=None, name="syncbadge-tray"):
        self.tray = tray
        self.walk = tray.walk
        self.on_change = on_change
        self.on_answer = on_answer
        self.conn = Connection(socket, role="viewer", name=name, on_push=self._push, on_hello=self._hello,
                               on_close=self._closed)
        self.viewer = Viewer(self.conn)
        self.in_watch = None
        self.out_watch = None
        self.retry = None
        self.backoff = RECONNECT_FIRST
        self.first_walk = 0         # requests of the first walk not answered yet
        self.dirty = False
        self.connects = 0           # connections made (for tests and the log)

    # -- connecting ---------------------------------------------------------------------

    def start(self):
        self._connect()

    def stop(self):
        self._cancel_retry()
        self.conn.close("quitting")

    def _connect(self):
        self.retry = None
        try:
            self.conn.connect(timeout=0)
        except OSError as ex:
            LOG.debug("no daemon at %s: %s", self.conn.path, ex)
            self._schedule_retry()
            return False
        self.connects += 1
        self.in_watch = GLib.unix_fd_add_full(GLib.PRIORITY_DEFAULT, self.conn.fileno(),
                                              GLib.IOCondition.IN | GLib.IOCondition.HUP | GLib.IOCondition.ERR,
                                              self._readable)
        self._want_output()
        return False

    def _schedule_retry(self):
        if self.retry is None:
            self.retry = GLib.timeout_add(int(self.backoff * 1000), self._connect)
            self.backoff = min(self.backoff * 2, RECONNECT_MAX)

    def _cancel_retry(self):
        if self.retry is not None:
            GLib.source_remove(self.retry)
            self.retry = None

    def _hello(self, conn):
        LOG.info("connected to %s (%s)", conn.path, conn.server)
        self.backoff = RECONNECT_FIRST
        self.tray.running = True
        self.first_walk = 0
        self._send_all(self.walk.connected(conn.caps))
        self.dirty = True

    def _closed(self, conn, reason):
        LOG.info("daemon connection closed: %s", reason)
        self._remove_watches()
        self.walk.disconnected()
        self.tray.disconnected()
        self.dirty = True
        self._changed()
        self._schedule_retry()

    def _remove_watches(self):
        for watch in (self.in_watch, self.out_watch):
            if watch is not None:
                GLib.source_remove(watch)
        self.in_watch = self.out_watch = None

    # -- I/O ----------------------------------------------------------------------------

    def _readable(self, fd, condition):
        if self.conn.fileno() != fd:
            return False
        self.conn.read_available()
        if self.conn.connected:
            self._want_output()
        self._changed()
        return self.conn.connected and self.conn.fileno() == fd

    def _writable(self, fd, condition):
        self.conn.flush()
        if self.conn.wants_write() and self.conn.fileno() == fd:
            return True
        self.out_watch = None
        return False

    def _want_output(self):
        if self.conn.wants_write() and self.out_watch is None:
            self.out_watch = GLib.unix_fd_add_full(GLib.PRIORITY_DEFAULT, self.conn.fileno(), GLib.IOCondition.OUT,
                                                   self._writable)

    def _changed(self):
        if self.dirty:
            self.dirty = False
            self.on_change()

    # -- requests -----------------------------------------------------------------------

    def _send_all(self, requests):
        """Sends what the walk asks for; each answer goes back to it (and may ask for more)."""
        for r in requests:
            counted = self.walk.quiet and r.verb != "UNOBSERVE"
            if counted:
                self.first_walk += 1

            def answered(reply, r=r, counted=counted):
                self._send_all(self.walk.answered(r, reply))
                self.dirty = True
                if counted and reply.final is not None and reply.conn.ready:
                    self.first_walk -= 1
                    if self.first_walk == 0 and self.walk.quiet:
                        self.walk.settled()
                        LOG.info("followed: %d roots, %d problems, %d directories observed (%s)",
                                 len(self.walk.roots), len(self.walk.problems), len(self.walk.follower.dirs),
                                 ", ".join(p.decode("utf-8", "replace") for p in self.walk.roots))
            try:
                self.conn.send(r, on_answer=answered)
            except Exception as ex:     # closed meanwhile (the close says the rest), or a path refused
                LOG.warning("could not send %s: %s", r.verb, ex)
        if requests:
            self._want_output()
        self._toolbars()

    def _toolbars(self):
        if self.walk.toolbars_changed:
            self.walk.toolbars_changed = False
            self.dirty = True
            for provider in self.tray.sync_toolbars():
                self.ask_menu(provider)

    def ask_menu(self, provider):
        """``MENU toolbar provider=<name>``: the toolbar item's menu (no push says when an engine
        redefines it, so the tray asks when the item appears and when its submenu opens)."""
        def answered(reply):
            if reply.ok and provider in self.tray.toolbars and self.tray.toolbar_menu(provider, reply.data):
                self.dirty = True
                self._changed()
        if self.conn.ready and "provider-address" in self.conn.caps:
            try:
                self.conn.send(req.menu("toolbar", provider=provider), on_answer=answered)
            except Exception as ex:
                LOG.warning("could not ask for %s's menu: %s", provider, ex)
            self._want_output()

    def action(self, provider, action_id, title):
        """``ACTION <id> provider=<name> reply=1``; the answer goes to on_answer."""
        def answered(reply):
            try:
                text, failed = answer_of(reply), False
            except Exception as ex:
                text, failed = str(ex), True
            self.on_answer(provider, title, text, failed)
        if not self.conn.ready:
            self.on_answer(provider, title, "SyncBadge is not running", True)
            return
        self.viewer.send_action(action_id, provider=provider, on_answer=answered)
        self._want_output()

    # -- pushes -------------------------------------------------------------------------

    def _push(self, message):
        self._send_all(self.walk.push(message))
        self.dirty = True

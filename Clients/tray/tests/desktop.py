"""The desktop a tray test needs, played on a real session bus (dbus-run-session) by test code:
a StatusNotifierWatcher, a notification server and a file manager (org.freedesktop.FileManager1),
each recording what it was asked, on a GLib main loop of their own thread. The test thread waits
for what it expects with deadlines: every call and every signal of the tray wakes it.
"""

import os
import threading
import time

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

WATCHER_XML = """
<node><interface name="org.kde.StatusNotifierWatcher">
  <method name="RegisterStatusNotifierItem"><arg name="service" type="s" direction="in"/></method>
  <method name="RegisterStatusNotifierHost"><arg name="service" type="s" direction="in"/></method>
  <property name="RegisteredStatusNotifierItems" type="as" access="read"/>
  <property name="IsStatusNotifierHostRegistered" type="b" access="read"/>
  <property name="ProtocolVersion" type="i" access="read"/>
  <signal name="StatusNotifierItemRegistered"><arg type="s"/></signal>
</interface></node>"""

NOTIFICATIONS_XML = """
<node><interface name="org.freedesktop.Notifications">
  <method name="Notify">
    <arg type="s" direction="in"/><arg type="u" direction="in"/><arg type="s" direction="in"/>
    <arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="as" direction="in"/>
    <arg type="a{sv}" direction="in"/><arg type="i" direction="in"/><arg type="u" direction="out"/>
  </method>
  <method name="CloseNotification"><arg type="u" direction="in"/></method>
  <method name="GetCapabilities"><arg type="as" direction="out"/></method>
  <method name="GetServerInformation">
    <arg type="s" direction="out"/><arg type="s" direction="out"/><arg type="s" direction="out"/><arg type="s" direction="out"/>
  </method>
  <signal name="ActionInvoked"><arg type="u"/><arg type="s"/></signal>
  <signal name="NotificationClosed"><arg type="u"/><arg type="u"/></signal>
</interface></node>"""

FILE_MANAGER_XML = """
<node><interface name="org.freedesktop.FileManager1">
  <method name="ShowFolders"><arg type="as" direction="in"/><arg type="s" direction="in"/></method>
  <method name="ShowItems"><arg type="as" direction="in"/><arg type="s" direction="in"/></method>
  <method name="ShowItemProperties"><arg type="as" direction="in"/><arg type="s" direction="in"/></method>
</interface></node>"""


def _private_bus():
    address = Gio.dbus_address_get_for_bus_sync(Gio.BusType.SESSION, None)
    return Gio.DBusConnection.new_for_address_sync(
        address, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION,
        None, None)


class Desktop(object):
    """The fakes; `events` counts everything that happened, under `cond`."""

    def __init__(self, watcher=True):
        self.with_watcher = watcher     # False where a real panel is the watcher
        self.cond = threading.Condition()
        self.events = 0
        self.registered = []        # (watcher generation, service, sender)
        self.notifications = []     # dicts: id, summary, body, actions, icon, replaces
        self.file_manager = []      # (method, [uri])
        self.signals = []           # (member, args) the tray emitted
        self.watcher_generation = 0
        self.context = GLib.MainContext.new()
        self.loop = GLib.MainLoop.new(self.context, False)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.ready = threading.Event()
        self.bus = None
        self.watcher_bus = None
        self.next_id = 0
        self.thread.start()
        if not self.ready.wait(10):
            raise AssertionError("the desktop's fakes did not start")

    def _run(self):
        self.context.push_thread_default()
        self.bus = _private_bus()
        self._export(self.bus, "/org/freedesktop/Notifications", NOTIFICATIONS_XML, self._notifications_call)
        self._export(self.bus, "/org/freedesktop/FileManager1", FILE_MANAGER_XML, self._file_manager_call)
        self._own(self.bus, "org.freedesktop.Notifications")
        self._own(self.bus, "org.freedesktop.FileManager1")
        self.bus.signal_subscribe(None, None, None, None, None, Gio.DBusSignalFlags.NONE, self._signal)
        if self.with_watcher:
            self._start_watcher()
        self.ready.set()
        self.loop.run()

    def _call_in_loop(self, fn):
        done = threading.Event()
        box = []

        def run():
            box.append(fn())
            done.set()
            return False
        self.context.invoke_full(GLib.PRIORITY_DEFAULT, run)
        done.wait(10)
        return box[0] if box else None

    @staticmethod
    def _export(bus, path, xml, handler, getter=None):
        info = Gio.DBusNodeInfo.new_for_xml(xml).interfaces[0]
        return bus.register_object(path, info, handler, getter, None)

    def _own(self, bus, name):
        # Synchronous, so that a test starts the tray only once the names are there.
        reply = bus.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
                              GLib.Variant("(su)", (name, 4)), GLib.VariantType("(u)"), Gio.DBusCallFlags.NONE, -1, None)
        assert reply.unpack()[0] == 1, "could not own %s" % name

    def _bump(self, fn=None):
        with self.cond:
            if fn is not None:
                fn()
            self.events += 1
            self.cond.notify_all()

    # -- the watcher --------------------------------------------------------------------

    def _start_watcher(self):
        self.watcher_generation += 1
        self.watcher_bus = _private_bus()
        self._export(self.watcher_bus, "/StatusNotifierWatcher", WATCHER_XML, self._watcher_call, self._watcher_get)
        self._own(self.watcher_bus, "org.kde.StatusNotifierWatcher")

    def restart_watcher(self):
        """The panel restarts: the watcher's connection closes, a new one owns the name."""
        def run():
            self.watcher_bus.close_sync(None)
            self._start_watcher()
        self._call_in_loop(run)

    def _watcher_get(self, bus, sender, path, interface, name):
        return {"RegisteredStatusNotifierItems": GLib.Variant("as", [r[1] for r in self.registered]),
                "IsStatusNotifierHostRegistered": GLib.Variant("b", True),
                "ProtocolVersion": GLib.Variant("i", 0)}.get(name)

    def _watcher_call(self, bus, sender, path, interface, method, params, invocation):
        if method == "RegisterStatusNotifierItem":
            service = params.unpack()[0]
            generation = self.watcher_generation
            self._bump(lambda: self.registered.append((generation, service, sender)))
        invocation.return_value(None)

    # -- notifications and the file manager ---------------------------------------------

    def _notifications_call(self, bus, sender, path, interface, method, params, invocation):
        if method == "Notify":
            app, replaces, icon, summary, body, actions, hints, timeout = params.unpack()
            self.next_id += 1
            n = replaces or self.next_id
            note = dict(id=n, summary=summary, body=body, actions=actions, icon=icon, replaces=replaces, sender=sender)
            self._bump(lambda: self.notifications.append(note))
            invocation.return_value(GLib.Variant("(u)", (n,)))
        elif method == "GetCapabilities":
            invocation.return_value(GLib.Variant("(as)", (["actions", "body"],)))
        elif method == "GetServerInformation":
            invocation.return_value(GLib.Variant("(ssss)", ("test", "syncbadge", "1", "1.2")))
        else:
            invocation.return_value(None)

    def invoke_action(self, note, key):
        """The user clicks a notification's action."""
        self._call_in_loop(lambda: self.bus.emit_signal(note["sender"], "/org/freedesktop/Notifications",
                                                        "org.freedesktop.Notifications", "ActionInvoked",
                                                        GLib.Variant("(us)", (note["id"], key))))

    def _file_manager_call(self, bus, sender, path, interface, method, params, invocation):
        uris = params.unpack()[0]
        self._bump(lambda: self.file_manager.append((method, uris)))
        invocation.return_value(None)

    def _signal(self, bus, sender, path, interface, member, params):
        # Every signal wakes a waiting test (a name appearing on the bus, a panel's own).
        if path in ("/StatusNotifierItem", "/MenuBar"):
            self._bump(lambda: self.signals.append((member, params.unpack())))
        else:
            self._bump()

    def has_owner(self, name):
        return self.bus.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner",
                                  GLib.Variant("(s)", (name,)), GLib.VariantType("(b)"), Gio.DBusCallFlags.NONE, 5000,
                                  None).unpack()[0]

    def watcher_items(self):
        """The items the (real) watcher lists."""
        try:
            v = self.bus.call_sync("org.kde.StatusNotifierWatcher", "/StatusNotifierWatcher",
                                   "org.freedesktop.DBus.Properties", "Get",
                                   GLib.Variant("(ss)", ("org.kde.StatusNotifierWatcher", "RegisteredStatusNotifierItems")),
                                   GLib.VariantType("(v)"), Gio.DBusCallFlags.NONE, 5000, None)
        except GLib.Error:
            return []
        return v.unpack()[0]

    # -- waiting ------------------------------------------------------------------------

    def wait_for(self, what, predicate, timeout=15):
        """Waits until predicate() is true (evaluated again after every event here), or fails
        with `what` at the deadline. Returns the predicate's value."""
        deadline = time.monotonic() + timeout
        while True:
            with self.cond:
                seen = self.events
            value = predicate()
            if value:
                return value
            with self.cond:
                while self.events == seen:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise AssertionError("timed out waiting for %s" % what)
                    self.cond.wait(left)

    def stop(self):
        """Closes its connections (their names go with them), then its loop."""
        def run():
            for bus in (self.bus, self.watcher_bus):
                if bus is not None and not bus.is_closed():
                    bus.close_sync(None)
            self.loop.quit()
        self._call_in_loop(run)
        self.thread.join(10)


class TrayClient(object):
    """Asks the tray's objects, over a connection of the test's own."""

    def __init__(self, service):
        self.service = service
        self.bus = _private_bus()

    def prop(self, name):
        v = self.bus.call_sync(self.service, "/StatusNotifierItem", "org.freedesktop.DBus.Properties", "Get",
                               GLib.Variant("(ss)", ("org.kde.StatusNotifierItem", name)), GLib.VariantType("(v)"),
                               Gio.DBusCallFlags.NONE, 5000, None)
        return v.unpack()[0]

    def layout(self):
        """GetLayout(0, -1, []): (revision, tree) with tree (id, props, [children])."""
        return self.bus.call_sync(self.service, "/MenuBar", "com.canonical.dbusmenu", "GetLayout",
                                  GLib.Variant("(iias)", (0, -1, [])), GLib.VariantType("(u(ia{sv}av))"),
                                  Gio.DBusCallFlags.NONE, 5000, None).unpack()

    def labels(self):
        """Every item's label, flattened (depth first), with its id."""
        out = []

        def walk(node, depth):
            n, props, children = node
            if "label" in props:
                out.append((props["label"].replace("__", "_"), n, props.get("enabled", True), depth))
            for c in children:
                walk(c, depth + 1)
        walk(self.layout()[1], 0)
        return out

    def find(self, text):
        for label, n, enabled, depth in self.labels():
            if text in label:
                return n
        return None

    def click(self, n):
        self.bus.call_sync(self.service, "/MenuBar", "com.canonical.dbusmenu", "Event",
                           GLib.Variant("(isvu)", (n, "clicked", GLib.Variant("i", 0), 0)), None,
                           Gio.DBusCallFlags.NONE, 5000, None)

    def about_to_show(self, n):
        return self.bus.call_sync(self.service, "/MenuBar", "com.canonical.dbusmenu", "AboutToShow",
                                  GLib.Variant("(i)", (n,)), GLib.VariantType("(b)"), Gio.DBusCallFlags.NONE, 5000,
                                  None).unpack()[0]

    def close(self):
        self.bus.close_sync(None)


def tray_command(checkout):
    return ["/usr/bin/python3", os.path.join(checkout, "Clients", "tray", "syncbadge-tray"), "--verbose"]

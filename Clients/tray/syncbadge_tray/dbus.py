"""The D-Bus edge, through Gio: the StatusNotifierItem and its com.canonical.dbusmenu menu, the
notifications (org.freedesktop.Notifications) and the file manager (org.freedesktop.FileManager1,
else xdg-open). What to show comes from the model; this file only exports and calls.
"""

import logging
import os
import urllib.parse

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

LOG = logging.getLogger("syncbadge-tray")

SNI_PATH = "/StatusNotifierItem"
MENU_PATH = "/MenuBar"
WATCHER = "org.kde.StatusNotifierWatcher"
WATCHER_PATH = "/StatusNotifierWatcher"
NOTIFICATIONS = "org.freedesktop.Notifications"
NOTIFICATIONS_PATH = "/org/freedesktop/Notifications"
FILE_MANAGER = "org.freedesktop.FileManager1"
FILE_MANAGER_PATH = "/org/freedesktop/FileManager1"

SNI_XML = """
<node>
  <interface name="org.kde.StatusNotifierItem">
    <property name="Category" type="s" access="read"/>
    <property name="Id" type="s" access="read"/>
    <property name="Title" type="s" access="read"/>
    <property name="Status" type="s" access="read"/>
    <property name="WindowId" type="i" access="read"/>
    <property name="IconThemePath" type="s" access="read"/>
    <property name="IconName" type="s" access="read"/>
    <property name="IconPixmap" type="a(iiay)" access="read"/>
    <property name="OverlayIconName" type="s" access="read"/>
    <property name="OverlayIconPixmap" type="a(iiay)" access="read"/>
    <property name="AttentionIconName" type="s" access="read"/>
    <property name="AttentionIconPixmap" type="a(iiay)" access="read"/>
    <property name="AttentionMovieName" type="s" access="read"/>
    <property name="ToolTip" type="(sa(iiay)ss)" access="read"/>
    <property name="ItemIsMenu" type="b" access="read"/>
    <property name="Menu" type="o" access="read"/>
    <method name="ContextMenu"><arg name="x" type="i" direction="in"/><arg name="y" type="i" direction="in"/></method>
    <method name="Activate"><arg name="x" type="i" direction="in"/><arg name="y" type="i" direction="in"/></method>
    <method name="SecondaryActivate"><arg name="x" type="i" direction="in"/><arg name="y" type="i" direction="in"/></method>
    <method name="Scroll"><arg name="delta" type="i" direction="in"/><arg name="orientation" type="s" direction="in"/></method>
    <signal name="NewTitle"/>
    <signal name="NewIcon"/>
    <signal name="NewAttentionIcon"/>
    <signal name="NewOverlayIcon"/>
    <signal name="NewToolTip"/>
    <signal name="NewStatus"><arg name="status" type="s"/></signal>
  </interface>
</node>
"""

MENU_XML = """
<node>
  <interface name="com.canonical.dbusmenu">
    <property name="Version" type="u" access="read"/>
    <property name="TextDirection" type="s" access="read"/>
    <property name="Status" type="s" access="read"/>
    <property name="IconThemePath" type="as" access="read"/>
    <method name="GetLayout">
      <arg type="i" name="parentId" direction="in"/>
      <arg type="i" name="recursionDepth" direction="in"/>
      <arg type="as" name="propertyNames" direction="in"/>
      <arg type="u" name="revision" direction="out"/>
      <arg type="(ia{sv}av)" name="layout" direction="out"/>
    </method>
    <method name="GetGroupProperties">
      <arg type="ai" name="ids" direction="in"/>
      <arg type="as" name="propertyNames" direction="in"/>
      <arg type="a(ia{sv})" name="properties" direction="out"/>
    </method>
    <method name="GetProperty">
      <arg type="i" name="id" direction="in"/>
      <arg type="s" name="name" direction="in"/>
      <arg type="v" name="value" direction="out"/>
    </method>
    <method name="Event">
      <arg type="i" name="id" direction="in"/>
      <arg type="s" name="eventId" direction="in"/>
      <arg type="v" name="data" direction="in"/>
      <arg type="u" name="timestamp" direction="in"/>
    </method>
    <method name="EventGroup">
      <arg type="a(isvu)" name="events" direction="in"/>
      <arg type="ai" name="idErrors" direction="out"/>
    </method>
    <method name="AboutToShow">
      <arg type="i" name="id" direction="in"/>
      <arg type="b" name="needUpdate" direction="out"/>
    </method>
    <method name="AboutToShowGroup">
      <arg type="ai" name="ids" direction="in"/>
      <arg type="ai" name="updatesNeeded" direction="out"/>
      <arg type="ai" name="idErrors" direction="out"/>
    </method>
    <signal name="ItemsPropertiesUpdated">
      <arg type="a(ia{sv})" name="updatedProps"/>
      <arg type="a(ias)" name="removedProps"/>
    </signal>
    <signal name="LayoutUpdated">
      <arg type="u" name="revision"/>
      <arg type="i" name="parent"/>
    </signal>
    <signal name="ItemActivationRequested">
      <arg type="i" name="id"/>
      <arg type="u" name="timestamp"/>
    </signal>
  </interface>
</node>
"""


def _interface(xml):
    return Gio.DBusNodeInfo.new_for_xml(xml).interfaces[0]


class Item(object):
    """The StatusNotifierItem and its menu on `bus`. `app` gives what to show:
    app.icon_name(), app.icon_theme_path(), app.status(), app.tooltip() -> (title, body),
    app.menu() -> [model.Entry] with app.ids (model.MenuIds), app.clicked(entry),
    app.about_to_show(entry) -> bool."""

    def __init__(self, bus, app):
        self.bus = bus
        self.app = app
        self.name = "org.kde.StatusNotifierItem-%d-1" % os.getpid()
        self.sni_info = _interface(SNI_XML)
        self.menu_info = _interface(MENU_XML)
        self.revision = 1
        self.layout = None          # the last layout sent, to tell whether it changed
        self.shown = {}             # what the properties said last: name -> value
        self.registered = False
        self.registrations = 0
        self.owner_id = None
        self.watch_id = None
        self.entries = {}           # id -> Entry of the last layout

    def start(self):
        self.bus.register_object(SNI_PATH, self.sni_info, self._sni_call, self._sni_get, None)
        self.bus.register_object(MENU_PATH, self.menu_info, self._menu_call, self._menu_get, None)
        self._build()
        self.owner_id = Gio.bus_own_name_on_connection(self.bus, self.name, Gio.BusNameOwnerFlags.NONE, None, None)
        # The watcher's owner changes when the panel restarts: register again with each new one.
        self.watch_id = Gio.bus_watch_name_on_connection(self.bus, WATCHER, Gio.BusNameWatcherFlags.NONE,
                                                         self._watcher_appeared, self._watcher_vanished)

    def _watcher_appeared(self, bus, name, owner):
        def done(bus, result):
            try:
                bus.call_finish(result)
                self.registered = True
                self.registrations += 1
                LOG.info("registered with the StatusNotifierWatcher (%s)", owner)
            except GLib.Error as ex:
                LOG.warning("the StatusNotifierWatcher refused the item: %s", ex.message)
        self.bus.call(WATCHER, WATCHER_PATH, WATCHER, "RegisterStatusNotifierItem", GLib.Variant("(s)", (self.name,)),
                      None, Gio.DBusCallFlags.NONE, -1, None, done)

    def _watcher_vanished(self, bus, name):
        if self.registered:
            LOG.info("the StatusNotifierWatcher went away; waiting for another")
        self.registered = False

    # -- the item's properties ----------------------------------------------------------

    def _props(self):
        title, body = self.app.tooltip()
        icon = self.app.icon_name()
        return {
            "Category": GLib.Variant("s", "ApplicationStatus"),
            "Id": GLib.Variant("s", "syncbadge-tray"),
            "Title": GLib.Variant("s", "SyncBadge"),
            "Status": GLib.Variant("s", self.app.status()),
            "WindowId": GLib.Variant("i", 0),
            "IconThemePath": GLib.Variant("s", self.app.icon_theme_path()),
            "IconName": GLib.Variant("s", icon),
            "IconPixmap": GLib.Variant("a(iiay)", []),
            "OverlayIconName": GLib.Variant("s", ""),
            "OverlayIconPixmap": GLib.Variant("a(iiay)", []),
            "AttentionIconName": GLib.Variant("s", icon),
            "AttentionIconPixmap": GLib.Variant("a(iiay)", []),
            "AttentionMovieName": GLib.Variant("s", ""),
            "ToolTip": GLib.Variant("(sa(iiay)ss)", (icon, [], title, body)),
            "ItemIsMenu": GLib.Variant("b", True),
            "Menu": GLib.Variant("o", MENU_PATH),
        }

    def _sni_get(self, bus, sender, path, interface, name):
        return self._props().get(name)

    def _sni_call(self, bus, sender, path, interface, method, params, invocation):
        # ItemIsMenu: hosts show the menu on a click; Activate is where others send a left click.
        if method == "Activate":
            self.app.activate()
        invocation.return_value(None)

    def refresh(self):
        """Emits what changed since the last call: the item's signals, the menu's layout."""
        props = self._props()
        changed = dict((k, v) for k, v in props.items() if self.shown.get(k) != v)
        self.shown = props
        if changed:
            signals = []
            if "IconName" in changed or "IconThemePath" in changed:
                signals += [("NewIcon", None), ("NewAttentionIcon", None)]
            if "Status" in changed:
                signals.append(("NewStatus", GLib.Variant("(s)", (props["Status"].get_string(),))))
            if "ToolTip" in changed:
                signals.append(("NewToolTip", None))
            for signal, args in signals:
                self._emit(SNI_PATH, "org.kde.StatusNotifierItem", signal, args)
            self._emit(SNI_PATH, "org.freedesktop.DBus.Properties", "PropertiesChanged",
                       GLib.Variant("(sa{sv}as)", ("org.kde.StatusNotifierItem", changed, [])))
        self._build()

    def _emit(self, path, interface, signal, args):
        try:
            self.bus.emit_signal(None, path, interface, signal, args)
        except GLib.Error as ex:
            LOG.warning("could not emit %s: %s", signal, ex.message)

    # -- the menu -----------------------------------------------------------------------

    def _build(self):
        """Builds the layout from the model; a new revision (and LayoutUpdated) when it changed."""
        entries = self.app.menu()
        ids = self.app.ids
        self.entries = {}
        keys = []

        def node(entry):
            n = ids.id(entry.key)
            keys.append(entry.key)
            self.entries[n] = entry
            props = {}
            if entry.separator:
                props["type"] = GLib.Variant("s", "separator")
            else:
                props["label"] = GLib.Variant("s", entry.label.replace("_", "__"))
                props["enabled"] = GLib.Variant("b", entry.enabled)
                if entry.icon:
                    props["icon-name"] = GLib.Variant("s", entry.icon)
                if entry.children is not None:
                    props["children-display"] = GLib.Variant("s", "submenu")
            children = [node(c) for c in (entry.children or [])]
            return (n, props, children)
        tree = (0, {"children-display": GLib.Variant("s", "submenu")}, [node(e) for e in entries])
        ids.keep(keys)
        if tree != self.layout:
            first = self.layout is None
            self.layout = tree
            if not first:
                self.revision += 1
                self._emit(MENU_PATH, "com.canonical.dbusmenu", "LayoutUpdated", GLib.Variant("(ui)", (self.revision, 0)))

    def _find(self, n, tree=None):
        tree = self.layout if tree is None else tree
        if tree[0] == n:
            return tree
        for child in tree[2]:
            found = self._find(n, child)
            if found is not None:
                return found
        return None

    @staticmethod
    def _variant(tree, depth, names):
        n, props, children = tree
        if names:
            props = dict((k, v) for k, v in props.items() if k in names)
        kids = [] if depth == 0 else [Item._variant(c, depth - 1, names) for c in children]
        return GLib.Variant("(ia{sv}av)", (n, props, kids))

    def _menu_get(self, bus, sender, path, interface, name):
        return {"Version": GLib.Variant("u", 3), "TextDirection": GLib.Variant("s", "ltr"),
                "Status": GLib.Variant("s", "normal"),
                "IconThemePath": GLib.Variant("as", [p for p in [self.app.icon_theme_path()] if p])}.get(name)

    def _menu_call(self, bus, sender, path, interface, method, params, invocation):
        try:
            self._menu_method(method, params.unpack(), invocation)
        except Exception as ex:     # a caller gets an error, not a timeout
            LOG.exception("%s failed", method)
            invocation.return_dbus_error("org.freedesktop.DBus.Error.Failed", str(ex))

    def _menu_method(self, method, args, invocation):
        if method == "GetLayout":
            parent, depth, names = args
            tree = self._find(parent)
            if tree is None:
                invocation.return_dbus_error("com.canonical.dbusmenu.Error.UnknownId", "no item %d" % parent)
                return
            v = self._variant(tree, depth, names)
            invocation.return_value(GLib.Variant.new_tuple(GLib.Variant("u", self.revision), v))
        elif method == "GetGroupProperties":
            ids, names = args
            out = []
            for n in (ids or self._all_ids()):
                tree = self._find(n)
                if tree is not None:
                    out.append((n, dict((k, v) for k, v in tree[1].items() if not names or k in names)))
            invocation.return_value(GLib.Variant("(a(ia{sv}))", (out,)))
        elif method == "GetProperty":
            n, name = args
            tree = self._find(n)
            if tree is None or name not in tree[1]:
                invocation.return_dbus_error("com.canonical.dbusmenu.Error.UnknownId", "no property %s of %d" % (name, n))
                return
            invocation.return_value(GLib.Variant("(v)", (tree[1][name],)))
        elif method == "Event":
            n, event, data, timestamp = args
            invocation.return_value(None)
            self._event(n, event)
        elif method == "EventGroup":
            errors = []
            for n, event, data, timestamp in args[0]:
                if n not in self.entries and n != 0:
                    errors.append(n)
            invocation.return_value(GLib.Variant("(ai)", (errors,)))
            for n, event, data, timestamp in args[0]:
                self._event(n, event)
        elif method == "AboutToShow":
            invocation.return_value(GLib.Variant("(b)", (self._about_to_show(args[0]),)))
        elif method == "AboutToShowGroup":
            updates = [n for n in args[0] if self._about_to_show(n)]
            invocation.return_value(GLib.Variant("(aiai)", (updates, [])))
        else:
            invocation.return_dbus_error("org.freedesktop.DBus.Error.UnknownMethod", method)

    def _all_ids(self):
        return sorted(self.entries)

    def _event(self, n, event):
        entry = self.entries.get(n)
        if entry is not None and event == "clicked" and entry.enabled:
            self.app.clicked(entry)

    def _about_to_show(self, n):
        entry = self.entries.get(n) if n else None
        before = self.revision
        self.app.about_to_show(entry)
        return self.revision != before


class Notifications(object):
    """org.freedesktop.Notifications: Notify with the actions "Show" and "Snooze";
    `on_action(notification id, action key)` for ActionInvoked. Works without a panel."""

    def __init__(self, bus, on_action):
        self.bus = bus
        self.on_action = on_action
        self.ids = set()
        self.sub = bus.signal_subscribe(NOTIFICATIONS, NOTIFICATIONS, None, NOTIFICATIONS_PATH, None,
                                        Gio.DBusSignalFlags.NONE, self._signal)

    def _signal(self, bus, sender, path, interface, signal, params):
        args = params.unpack()
        if signal == "ActionInvoked" and args[0] in self.ids:
            self.on_action(args[0], args[1])
        elif signal == "NotificationClosed":
            self.ids.discard(args[0])

    def notify(self, summary, body, icon, actions=(), replaces=0, on_id=None):
        """Sends one notification; on_id(id) once the server gave its id."""
        flat = []
        for key, label in actions:
            flat += [key, label]

        def done(bus, result):
            try:
                (n,) = bus.call_finish(result).unpack()
            except GLib.Error as ex:
                LOG.warning("no notification server: %s", ex.message)
                return
            self.ids.add(n)
            if on_id is not None:
                on_id(n)
        hints = {"desktop-entry": GLib.Variant("s", "syncbadge-tray"), "category": GLib.Variant("s", "transfer.error")}
        self.bus.call(NOTIFICATIONS, NOTIFICATIONS_PATH, NOTIFICATIONS, "Notify",
                      GLib.Variant("(susssasa{sv}i)", ("SyncBadge", replaces, icon, summary, body, flat, hints, -1)),
                      GLib.VariantType("(u)"), Gio.DBusCallFlags.NONE, -1, None, done)


def file_uri(path):
    return "file://" + urllib.parse.quote(path if isinstance(path, bytes) else os.fsencode(path))


class FileManager(object):
    """Opens a folder or shows files: org.freedesktop.FileManager1 where a file manager provides
    it (activatable or running), else xdg-open (of the folder that holds the file)."""

    def __init__(self, bus):
        self.bus = bus

    def open_folder(self, path):
        self._call("ShowFolders", [path], path)

    def show_items(self, paths):
        parent = os.path.dirname(paths[0]) or b"/"
        self._call("ShowItems", paths, parent)

    def _call(self, method, paths, fallback):
        def done(bus, result):
            try:
                bus.call_finish(result)
            except GLib.Error as ex:
                LOG.info("no FileManager1 (%s): xdg-open %s", ex.message, os.fsdecode(fallback))
                self._xdg_open(fallback)
        self.bus.call(FILE_MANAGER, FILE_MANAGER_PATH, FILE_MANAGER, method,
                      GLib.Variant("(ass)", ([file_uri(p) for p in paths], "")), None,
                      Gio.DBusCallFlags.NONE, 10000, None, done)

    @staticmethod
    def _xdg_open(path):
        # Without DO_NOT_REAP_CHILD GLib reaps it: no zombie, no SIGCHLD handler of ours.
        try:
            GLib.spawn_async(["xdg-open", os.fsdecode(path)], flags=GLib.SpawnFlags.SEARCH_PATH)
        except GLib.Error as ex:
            LOG.warning("xdg-open: %s", ex.message)

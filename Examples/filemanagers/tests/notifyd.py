"""A stand-in notification server for the tests: owns org.freedesktop.Notifications on the
session bus, appends each notification as a JSON line {"app", "summary", "body"} to the file
named by argv[1], and prints `ready` on stdout once it owns the name. /usr/bin/python3 (gi)."""

import json
import sys

from gi.repository import Gio, GLib

XML = """
<node>
  <interface name="org.freedesktop.Notifications">
    <method name="Notify">
      <arg type="s" direction="in"/><arg type="u" direction="in"/><arg type="s" direction="in"/>
      <arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="as" direction="in"/>
      <arg type="a{sv}" direction="in"/><arg type="i" direction="in"/><arg type="u" direction="out"/>
    </method>
    <method name="GetCapabilities"><arg type="as" direction="out"/></method>
    <method name="GetServerInformation">
      <arg type="s" direction="out"/><arg type="s" direction="out"/>
      <arg type="s" direction="out"/><arg type="s" direction="out"/>
    </method>
    <method name="CloseNotification"><arg type="u" direction="in"/></method>
  </interface>
</node>
"""

LOG = sys.argv[1]
counter = [0]


def call(connection, sender, path, interface, method, params, invocation):
    if method == "Notify":
        app, _, _, summary, body = params.unpack()[:5]
        with open(LOG, "a") as f:
            f.write(json.dumps({"app": app, "summary": summary, "body": body}) + "\n")
        counter[0] += 1
        invocation.return_value(GLib.Variant("(u)", (counter[0],)))
    elif method == "GetCapabilities":
        invocation.return_value(GLib.Variant("(as)", (["body"],)))
    elif method == "GetServerInformation":
        invocation.return_value(GLib.Variant("(ssss)", ("syncbadge-test", "syncbadge", "1", "1.2")))
    else:
        invocation.return_value(None)


def acquired(connection, name):
    print("ready", flush=True)


def bus_acquired(connection, name):
    info = Gio.DBusNodeInfo.new_for_xml(XML).interfaces[0]
    connection.register_object("/org/freedesktop/Notifications", info, call, None, None)


Gio.bus_own_name(Gio.BusType.SESSION, "org.freedesktop.Notifications", Gio.BusNameOwnerFlags.NONE,
                 bus_acquired, acquired, lambda *a: sys.exit("lost the name"))
GLib.MainLoop().run()

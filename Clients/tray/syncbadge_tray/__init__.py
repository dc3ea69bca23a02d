"""syncbadge-tray: one panel indicator for every sync engine SyncBadge knows (issue 38).

- model: what the tray shows and decides, without I/O: the roots and their counts, the problem
  paths, the worst state, tooltip text, the menu's layout, the notifications to raise (coalesced
  per root, snoozed), and the walk down to the problem paths (which directories to observe)
- link: the daemon's connection in the GLib main loop (the package's Connection, event-loop
  driven), reconnecting with backoff while the daemon is down
- dbus: the edge: StatusNotifierItem, com.canonical.dbusmenu, org.freedesktop.Notifications and
  the file manager, all through Gio
"""

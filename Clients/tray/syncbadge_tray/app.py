"""The tray put together: the model, the daemon's link and the D-Bus edge, on one GLib main loop."""

import logging
import os
import signal
import time

from gi.repository import Gio, GLib

from . import model
from .dbus import FileManager, Item, Notifications
from .link import Link

LOG = logging.getLogger("syncbadge-tray")

HOUR = 3600


def find_badges(here):
    """The badge SVGs: the checkout's Badges/ (this file's ../../../Badges), else the installed
    /usr/share/syncbadge/badges."""
    for d in (os.path.join(here, "..", "..", "..", "Badges"), "/usr/local/share/syncbadge/badges",
              "/usr/share/syncbadge/badges"):
        if os.path.isfile(os.path.join(d, "badges.tsv")):
            return os.path.normpath(d)
    return None


def emblems_installed(environ=os.environ):
    """Whether the hicolor emblems (`make install-emblems`, the syncbadge package) are where an
    icon theme lookup finds them."""
    home = environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    dirs = [home] + (environ.get("XDG_DATA_DIRS") or "/usr/local/share:/usr/share").split(":")
    return any(os.path.isfile(os.path.join(d, "icons/hicolor/scalable/emblems/emblem-syncbadge-synced.svg"))
               for d in dirs if d)


def icon_dir(badges, runtime):
    """A directory of `emblem-syncbadge-<id>.svg` links to the badges, for IconThemePath: hosts
    look unthemed icons up in it by name (a checkout, or emblems not installed)."""
    d = os.path.join(runtime, "syncbadge-tray-icons-%d" % os.getuid())
    os.makedirs(d, mode=0o700, exist_ok=True)
    with open(os.path.join(badges, "badges.tsv"), encoding="utf-8") as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if line.startswith("#") or len(fields) < 6:
                continue
            link = os.path.join(d, "emblem-syncbadge-%s.svg" % fields[0])
            target = os.path.join(badges, fields[5])
            if os.path.realpath(link) != os.path.realpath(target):
                if os.path.lexists(link):
                    os.unlink(link)
                os.symlink(target, link)
    return d


class App(object):
    def __init__(self, bus, loop, socket=None, passive=False, icon_theme_path="", home=None):
        self.loop = loop
        self.home = home
        self.tray = model.Tray(home, passive)
        self.notifier = model.Notifier(home)
        self.ids = model.MenuIds()
        self.theme_path = icon_theme_path
        self.link = Link(self.tray, self.changed, self.answered, socket)
        self.item = Item(bus, self)
        self.notes = Notifications(bus, self.notification_action)
        self.files = FileManager(bus)
        self.timer = None
        self.note_paths = {}        # notification id -> paths it is about
        self.replaces = {}          # root -> its last notification's id, which the next replaces

    def start(self):
        self.item.start()
        self.link.start()

    def quit(self):
        self.link.stop()
        self.loop.quit()

    # -- what the item shows (dbus.Item asks) -------------------------------------------

    def icon_name(self):
        return "emblem-syncbadge-" + self.tray.icon_state()

    def icon_theme_path(self):
        return self.theme_path

    def status(self):
        return self.tray.status()

    def tooltip(self):
        return self.tray.tooltip()

    def menu(self):
        return self.tray.menu(self.notifier, time.time())

    # -- events -------------------------------------------------------------------------

    def changed(self):
        entered = self.tray.walk.take_entered()
        if entered:
            self.notifier.entered(entered, time.time())
            self._arm()
        self.item.refresh()

    def _arm(self):
        due = self.notifier.deadline()
        if self.timer is not None:
            GLib.source_remove(self.timer)
            self.timer = None
        if due is not None:
            self.timer = GLib.timeout_add(max(0, int((due - time.time()) * 1000) + 1), self._flush)

    def _flush(self):
        self.timer = None
        for note in self.notifier.flush(time.time()):
            self._send(note)
        self._arm()
        return False

    def _send(self, note):
        problems = self.tray.walk.problems
        state = "error" if any(p in problems and problems[p].state == "error" for p in note.paths) else "conflict"

        def got(n, note=note):
            self.note_paths[n] = note.paths
            self.replaces[note.root] = n
        self.notes.notify(note.summary, note.body, "emblem-syncbadge-" + state,
                          [("default", "Show"), ("show", "Show"), ("snooze", "Snooze")],
                          replaces=self.replaces.get(note.root, 0), on_id=got)

    def answered(self, provider, title, text, failed):
        toolbar = self.tray.toolbars.get(provider)
        name = toolbar.name if toolbar is not None and toolbar.name else provider
        shown = "%s: %s" % (title, text or ("failed" if failed else "done"))
        self.tray.answers[provider] = shown
        self.notes.notify("%s: %s" % (name, title), text or ("failed" if failed else "done"),
                          "emblem-syncbadge-" + ("error" if failed else "synced"))
        self.item.refresh()

    def notification_action(self, n, key):
        paths = self.note_paths.get(n)
        if key in ("show", "default") and paths:
            self.files.show_items(paths)
        elif key == "snooze":
            self.snooze(time.time() + HOUR)

    def snooze(self, until):
        self.notifier.snooze(until)
        self._arm()
        self.item.refresh()

    def clicked(self, entry):
        click = entry.click
        if not click:
            return
        what = click[0]
        if what == "open":
            self.files.open_folder(click[1])
        elif what == "show":
            self.files.show_items([click[1]])
        elif what == "action":
            self.link.action(click[1], click[2], click[3])
        elif what == "snooze":
            now = time.time()
            self.snooze(now + HOUR if click[1] == "hour" else model.snooze_until_tomorrow(now))
        elif what == "resume":
            self.notifier.resume()
            self.item.refresh()
        elif what == "quit":
            self.quit()

    def about_to_show(self, entry):
        # No push says when an engine redefines its toolbar menu: ask as its submenu opens.
        if entry is not None and isinstance(entry.key, tuple) and entry.key[0] == "toolbar":
            self.link.ask_menu(entry.key[1])
        self.item.refresh()

    def activate(self):
        recent = self.tray.walk.recent(1)
        if recent:
            self.files.show_items([recent[0].path])
        elif self.tray.walk.roots:
            self.files.open_folder(next(iter(self.tray.walk.roots)))


def run(args, here):
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="syncbadge-tray: %(message)s")
    try:
        bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
    except GLib.Error as ex:
        LOG.error("no session bus: %s", ex.message)
        return 1
    theme_path = ""
    if not emblems_installed():
        badges = find_badges(here)
        runtime = os.environ.get("XDG_RUNTIME_DIR") or GLib.get_user_cache_dir()
        if badges:
            theme_path = icon_dir(badges, runtime)
    loop = GLib.MainLoop()
    app = App(bus, loop, socket=args.socket, passive=args.passive_when_synced, icon_theme_path=theme_path)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        GLib.unix_signal_add(GLib.PRIORITY_HIGH, sig, lambda *a: app.quit() or False)
    app.start()
    loop.run()
    return 0

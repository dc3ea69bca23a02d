# -*- coding: utf-8 -*-
"""SyncBadge for Nautilus, Nemo and Caja: emblems, a Sync column, a Sync menu, live.

One file for the three file managers (their Python extension hosts: nautilus-python 4,
nemo-python, python3-caja). Install it into `~/.local/share/{nautilus,nemo,caja}-python/
extensions/` (`make install-user`), then restart the file manager (`nautilus -q`,
`nemo --quit`, `caja -q`). See README.md next to this file.

It is thin over the syncbadge Python package (Clients/python): the package speaks the
protocol and follows the directories shown (its DirectoryFollower holds the cache); this file
talks to the file manager.

- The host is told by the process (/proc/self/exe), never by which import succeeds: inside
  Nemo a bare `from gi.repository import Nautilus` may succeed too, and then nothing shows.
- `update_file_info` answers from the cache and never waits on the socket. The first time it
  is asked about an entry of a directory, that directory is OBSERVEd (at most MAX_DIRS of
  them, least recently used ones UNOBSERVEd); once the listing is in, the files asked about
  are invalidated and asked again.
- Pushes arrive through a GLib watch on the connection's descriptor, READ_SLICE bytes per
  main-loop iteration; `* ITEM` invalidates the one file it names. What the pushes read
  together changed is applied once, in an idle callback that runs before the next drawing;
  the files to draw again are invalidated INVALIDATE_SLICE per iteration after that, so a
  change of 20,000 files is a run of short slices, never one long freeze (make bench-fm). A
  new daemon (new epoch) drops the cache and observes again. A followed directory that goes
  (`* GONE`: renamed, moved away, deleted) has the files shown in it invalidated too, since
  the file manager keeps them (Nautilus moves them with the folder) and would show their old
  emblems when the folder is shown again.
- Menus wait for the daemon at most MENU_WAIT seconds (the file manager is blocked
  meanwhile); menus prefetched when a directory was listed answer at once.
- Without a daemon the file manager works as without the extension; one line is logged, and
  the extension connects when a daemon appears.
- Each engine's toolbar item is a button in Caja's toolbar (CajaToolbar), and a submenu of
  the background menu in Nautilus and Nemo. They follow `* TOOLBAR` pushes where the daemon
  announces toolbar-push (else TOOLBAR is asked again after each `* ROOT`).
- A chosen item's answer is a notification (notify-send), else the window's status bar. Where
  the daemon announces action-reply, an engine's action waits for the engine's own answer on
  a connection of its own (ActionCall), so nothing else waits behind it.

SYNCBADGE_DEBUG=1 logs what is drawn (`syncbadge: drew <path> emblem=<name> column=<text>`),
each menu and each action's answer to stderr, and makes SIGUSR1 dump the Python stacks (a
file manager that hangs: is it in here?).
"""

import os
import shutil
import subprocess
import sys

import gi
from gi.repository import GLib, GObject, Gio

CLIENT_NAMES = {"nautilus": "nautilus", "nemo": "nemo", "nemo-desktop": "nemo", "caja": "caja"}
MAX_DIRS = 64               # directories observed at once (LRU)
MENU_WAIT = 0.1             # seconds a menu may wait for the daemon
HELLO_WAIT = 2.0
RECONNECT_FIRST = 0.25      # seconds before the first reconnect; doubled up to RECONNECT_MAX
RECONNECT_MAX = 5.0
# Seconds the emblems shown stay as they were once the daemon goes. A daemon restarted at once
# (socket activation) answers again well within it, and then only the files whose state differs
# are drawn again: clearing 20,000 emblems and drawing them back cost Nautilus two flips' work
# (make bench-fm's recovery: 2.25 s). After it, with no daemon yet, they go.
HOLD = 2.0
NOT_FOUND_RETRIES = (0.25, 1.0, 3.0)   # a directory the daemon has not seen yet: ask again after
# The main loop's slices (make bench-fm: a flip of 20,000 files read in one callback froze
# Nautilus 0.3-1.1 s, and invalidated in one, 0.35-0.86 s). READ_SLICE bytes of pushes per
# callback (about 150 ITEM lines, ~4 ms of parsing in Python); INVALIDATE_SLICE files per idle
# callback (each invalidation makes the file manager call update_file_info again).
READ_SLICE = 16384
INVALIDATE_SLICE = 256
EMBLEM_PREFIX = "emblem-syncbadge-"
ICON_RESCAN_MS = 5500       # GTK stats the icon directories at most every 5 s
COLUMN_ATTRIBUTE = "syncbadge_sync"
DEBUG = os.environ.get("SYNCBADGE_DEBUG", "") not in ("", "0")


if DEBUG:
    import faulthandler
    import signal
    faulthandler.register(signal.SIGUSR1, all_threads=True)


def _log(message):
    try:
        sys.stderr.write("syncbadge: %s\n" % message)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _debug(message):
    if DEBUG:
        _log(message)


def host_name():
    """nautilus, nemo or caja: the process this module was loaded into (None elsewhere)."""
    try:
        exe = os.path.basename(os.readlink("/proc/self/exe"))
    except OSError:
        return None
    if exe.endswith(" (deleted)"):
        exe = exe[:-len(" (deleted)")]
    return CLIENT_NAMES.get(exe)


# The syncbadge package that came with this file comes first: ../python as `make install` lays it
# out ($(SHARE)/syncbadge/{filemanagers,python}), or the repository's Clients/python, from this
# file's real location; else an installed one (python3-syncbadge, where Debian's packages put this
# file). The file managers import extensions as top-level modules, which is why this file is not
# called syncbadge.py.
_HERE = os.path.dirname(os.path.realpath(__file__))
sys.path[:0] = [os.path.normpath(os.path.join(_HERE, rel)) for rel in ("../python", "../../Clients/python")]
import syncbadge as sb  # noqa: E402
from syncbadge import req  # noqa: E402
from syncbadge.follow import split_path as _split  # noqa: E402

HOST = host_name()
FM = None
if HOST is not None:
    if HOST == "nautilus":
        gi.require_version("Nautilus", "4.0")
        from gi.repository import Nautilus as FM
    elif HOST == "nemo":
        gi.require_version("Nemo", "3.0")
        from gi.repository import Nemo as FM
    else:
        gi.require_version("Caja", "2.0")
        gi.require_version("Gtk", "3.0")
        gi.require_version("Gdk", "3.0")
        from gi.repository import Caja as FM
        from gi.repository import Gdk, Gtk


def column_text(item):
    """The Sync column: `synced`, `syncing 40%`, `error: disk full`."""
    if item is None:
        return ""
    text = item.state or ""
    if item.progress is not None and item.state == "syncing":
        text += " %d%%" % item.progress
    if item.message:
        text += ": " + item.message
    return text


def emblem_for(item):
    """The emblem icon name of an item, or None (`unknown` and `outside` show none)."""
    if item is None or item.state in (None, "unknown", "outside") or item.kind == "gone":
        return None
    return EMBLEM_PREFIX + (item.badge or item.state)


def icon_dir():
    return os.path.join(os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"),
                        "icons", "hicolor")


def install_badge_image(badge_id, image, rendered=None):
    """Installs a provider's badge image as the emblem icon `emblem-syncbadge-<id>` in the
    user's icon directory: an SVG as the scalable icon at once, then PNGs 16..64 rendered by
    rsvg-convert (when present) in the background, never blocking the file manager;
    `rendered()` runs once they are written. A PNG goes in as 64x64. Returns True when the
    icon is in place."""
    if not sb.is_id(badge_id) or not image or not os.path.isfile(image):
        return False
    name = EMBLEM_PREFIX + badge_id
    base = icon_dir()
    try:
        if image.lower().endswith(".svg"):
            target = os.path.join(base, "scalable", "emblems")
            os.makedirs(target, exist_ok=True)
            shutil.copyfile(image, os.path.join(target, name + ".svg"))
            rsvg = shutil.which("rsvg-convert")
            if rsvg:
                left = [0]

                def exited(pid, status, child):
                    child.wait()
                    left[0] -= 1
                    if left[0] == 0 and rendered is not None:
                        try:
                            os.utime(base, None)
                        except OSError:
                            return      # the icon directory went meanwhile
                        rendered()
                for size in (16, 22, 24, 32, 48, 64):
                    target = os.path.join(base, "%dx%d" % (size, size), "emblems")
                    os.makedirs(target, exist_ok=True)
                    child = subprocess.Popen([rsvg, "-w", str(size), "-h", str(size), "-o",
                                              os.path.join(target, name + ".png"), image],
                                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                             stderr=subprocess.DEVNULL)
                    left[0] += 1
                    GLib.child_watch_add(GLib.PRIORITY_DEFAULT, child.pid, exited, child)
        else:
            target = os.path.join(base, "64x64", "emblems")
            os.makedirs(target, exist_ok=True)
            shutil.copyfile(image, os.path.join(target, name + os.path.splitext(image)[1].lower()))
        # A cache of the theme directory would no longer match it, so GTK scans it.
        os.utime(base, None)
    except (OSError, subprocess.SubprocessError) as ex:
        _log("cannot install the badge %s from %s: %s" % (badge_id, image, ex))
        return False
    return True


class LoopWatches(object):
    """The GLib main loop's watches on one Connection: input (read_available) while it is
    open, output (flush) while the socket has not taken all that was sent."""

    def __init__(self, conn):
        self.conn = conn
        self.watch = None
        self.out_watch = None
        self.in_watch = False       # in the input watch's callback: it goes by returning False

    # Below GTK's redraw (PRIORITY_HIGH_IDLE + 20): GLib dispatches only the most urgent ready
    # sources, so a socket that stays readable through a burst at PRIORITY_DEFAULT would hold
    # every redraw back until the burst was read. Input events stay above it.
    READ_PRIORITY = GLib.PRIORITY_HIGH_IDLE + 30

    def start(self):
        self.watch = GLib.io_add_watch(self.conn.fileno(), self.READ_PRIORITY,
                                       GLib.IOCondition.IN | GLib.IOCondition.HUP | GLib.IOCondition.ERR,
                                       self._readable)
        self.want_write()

    def _readable(self, fd, condition):
        self.in_watch = True
        try:
            # One slice: the watch fires again on the next iteration while more is there, so
            # drawing and input go on between slices of a burst.
            alive = self.conn.read_available(READ_SLICE)
        finally:
            self.in_watch = False
        if not alive:
            self.watch = None
        return alive

    def want_write(self):
        if self.conn.wants_write() and self.out_watch is None and self.conn.connected:
            self.out_watch = GLib.io_add_watch(self.conn.fileno(), GLib.PRIORITY_DEFAULT,
                                               GLib.IOCondition.OUT, self._writable)

    def _writable(self, fd, condition):
        more = self.conn.connected and not self.conn.flush()
        if not more:
            self.out_watch = None
        return more

    def stop(self):
        """Removes both watches (from within the input watch's callback too)."""
        if self.watch is not None and not self.in_watch:
            GLib.source_remove(self.watch)
        self.watch = None
        if self.out_watch is not None:
            GLib.source_remove(self.out_watch)
            self.out_watch = None


class Shown(object):
    """What the extension keeps beside the follower's Directory (its `extra`): the file
    manager's file objects asked about in it, by name (bytes), and the OBSERVEs asked again
    after a not-found."""

    __slots__ = ("files", "retries")

    def __init__(self):
        self.files = {}
        self.retries = 0


class Core(object):
    """The daemon connection and the cache, shared by every provider object of the process."""

    _instance = None

    @classmethod
    def get(cls):
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def __init__(self):
        self.conn = sb.Connection(role="viewer", name=HOST or "filemanager", on_push=self._push,
                                  on_hello=self._hello, on_close=self._closed)
        # The directories shown (LRU), their listings and the toolbar items, from the daemon.
        self.follower = sb.DirectoryFollower(max_dirs=MAX_DIRS, toolbars=True, badges=True)
        self.flush_source = None                 # the idle callback that applies the changes
        self.stale = {}                          # real dir (bytes) -> names (set) or sb.ALL to invalidate
        self.stale_source = None                 # the idle callback that invalidates them, a slice at a time
        self.orphans = []                        # file objects of followed directories that went, to invalidate
        self.real_dirs = {}                      # the file manager's dir (str) -> real dir (bytes)
        self.menus = {}                          # (dir, states) -> [(id, title, enabled)]
        self.toolbars = []                       # [(name, tooltip, provider)]
        self.providers = []                      # the file manager's extension objects
        self.menu_hooks = []                     # called when menus or toolbar items change
        self.badge_images = {}                   # badge id -> image path installed
        self.calls = set()                       # ActionCalls waiting for an engine's answer
        self.io = LoopWatches(self.conn)
        self.retry = None
        self.hello_timer = None
        self.hold_timer = None
        self.backoff = RECONNECT_FIRST
        self.said_down = False
        self.connect()

    def stop(self):
        """Closes the connection for good (tests; the file managers never unload extensions)."""
        for source in (self.retry, self.hello_timer, self.hold_timer, self.flush_source, self.stale_source):
            if source is not None:
                GLib.source_remove(source)
        self.retry = self.hello_timer = self.hold_timer = self.flush_source = self.stale_source = None
        for call in list(self.calls):
            call.cancel()
        self.calls.clear()
        self.conn.on_close = None
        self.conn.close("stopped")
        self.io.stop()

    # -- the connection --------------------------------------------------------------

    def connect(self):
        self.retry = None
        if self.conn.connected:
            return False
        try:
            self.conn.connect(timeout=0)
        except OSError as ex:
            if not self.said_down:
                self.said_down = True
                _log("no daemon at %s (%s): no badges until one starts" % (self.conn.path, ex.strerror or ex))
            self._schedule_connect()
            return False
        self.io.start()
        self.hello_timer = GLib.timeout_add(int(HELLO_WAIT * 1000), self._hello_late)
        return False

    def _schedule_connect(self):
        if self.retry is None:
            self.retry = GLib.timeout_add(int(self.backoff * 1000), self.connect)
            self.backoff = min(self.backoff * 2, RECONNECT_MAX)

    def _hello_late(self):
        self.hello_timer = None
        if self.conn.connected and not self.conn.ready:
            self.conn.close("the daemon did not answer HELLO within %gs" % HELLO_WAIT)
        return False

    @property
    def dirs(self):
        """The followed directories: real path (bytes) -> the follower's Directory, LRU first."""
        return self.follower.dirs

    def send(self, request, on_answer=None, on_data=None):
        """Sends a request (a req.Req) if connected; returns its Reply or None. With `on_data`
        the Reply keeps no data lines: the callback takes each."""
        if not self.conn.ready:
            return None
        try:
            reply = self.conn.send(request, on_answer=on_answer, on_data=on_data, keep_data=on_data is None)
        except (sb.Disconnected, ValueError) as ex:
            _debug("%s not sent: %s" % (getattr(request, "verb", request), ex))
            return None
        self.io.want_write()
        return reply

    def _follow_up(self, requests):
        """Sends the follower's requests; their answers go back to it. A listing's lines go
        to it as they are read, a socket slice at a time: parsed at its end, 20,000 of them
        held the main loop for over 100 ms, and a full pass of the garbage collector more."""
        for request in requests:
            listing = request.verb in sb.follow.LISTINGS
            self.send(request, on_answer=lambda reply, r=request: self._answered(r, reply),
                      on_data=(lambda m, r=request: self.follower.data(r, m)) if listing else None)
        self._changed()

    def _answered(self, request, reply):
        self._follow_up(self.follower.answered(request, reply))

    def _hello(self, conn):
        if self.hello_timer is not None:
            GLib.source_remove(self.hello_timer)
            self.hello_timer = None
        self.backoff = RECONNECT_FIRST
        self.said_down = False
        _log("connected to %s at %s (epoch %s)" % (conn.server, conn.path, conn.epoch))
        if conn.new_epoch:
            self.menus.clear()
        # A new connection observes nothing: the follower observes again what the file manager
        # showed, and asks for the badges and the toolbar items.
        self._follow_up(self.follower.connected(conn.caps))

    def _closed(self, conn, reason):
        self.io.stop()
        if not self.said_down:
            self.said_down = True
            _log("disconnected (%s): the badges shown stay %gs, then none until the daemon is back" % (reason, HOLD))
            # It was up: what is shown stays for HOLD from the loss. A timer still running from
            # an earlier loss whose listings have all been replaced since is that loss's: this
            # one gets the whole HOLD. One that still holds some stays, so that a daemon going
            # up and down before it lists again keeps no old badge past HOLD.
            if self.hold_timer is not None and not self.follower.holding:
                GLib.source_remove(self.hold_timer)
                self.hold_timer = None
            if self.hold_timer is None:
                self.hold_timer = GLib.timeout_add(int(HOLD * 1000), self._hold_over)
        # What was cached may be wrong by the time a daemon answers again: past the hold, show
        # nothing.
        self.follower.disconnected(hold=self.hold_timer is not None)
        self._changed()
        self._schedule_connect()

    def _hold_over(self):
        self.hold_timer = None
        self.follower.release()
        self._changed()
        return False

    # -- the cache -------------------------------------------------------------------

    def _directory(self, fm_dir):
        """The followed Directory of a directory the file manager shows (observed when new)."""
        real = self.real_dirs.get(fm_dir)
        if real is None:
            if len(self.real_dirs) > 4 * MAX_DIRS:
                self.real_dirs.clear()
            real = self.real_dirs[fm_dir] = os.fsencode(os.path.realpath(fm_dir))
        requests = self.follower.follow(real)
        directory = self.follower.directory(real)
        if directory.extra is None:
            directory.extra = Shown()
            _debug("asked about the entries of %s%s" % (fm_dir, "" if self.conn.ready else " (no daemon yet)"))
        if requests:
            self._follow_up(requests)
        return directory

    def _changed(self):
        """Applies the follower's changes once, before the main loop's next drawing: pushes
        read together cost one pass."""
        if self.flush_source is None:
            self.flush_source = GLib.idle_add(self._flush, priority=GLib.PRIORITY_HIGH_IDLE)

    def _flush(self):
        self.flush_source = None
        changes = self.follower.take_changes()
        if not changes:
            return False
        for path in changes.forgotten:
            _debug("unobserved %s" % os.fsdecode(path))
        for path, code in changes.refused.items():
            directory = self.follower.directory(path)
            # Made a moment ago, and the daemon has not seen it yet: ask again soon (or when
            # its parent's observers hear of it: the follower does).
            if code == "not-found" and directory is not None and directory.extra.retries < len(NOT_FOUND_RETRIES):
                delay = NOT_FOUND_RETRIES[directory.extra.retries]
                directory.extra.retries += 1
                GLib.timeout_add(int(delay * 1000), self._observe_again, path)
        for path in changes.listed:
            directory = self.follower.directory(path)
            if directory is not None:
                _debug("observing %s (%d entries)" % (os.fsdecode(path), len(directory.items)))
                self._prefetch_menus(directory)
        for path, names in changes.dirs.items():
            directory = self.follower.directory(path)
            if directory is None or directory.extra is None:
                continue
            files = directory.extra.files
            if names is not sb.ALL:
                for name in [n for n in names if n and not (directory.items and n in directory.items)]:
                    files.pop(name, None)           # gone
                    names.discard(name)
            self._mark_stale(path, names)
        for badge_id in changes.badges:
            self._define_badge(badge_id, self.follower.badges[badge_id].image, pushed=False)
        for badge_id in changes.badge_pushes:
            self._define_badge(badge_id, self.follower.badges[badge_id].image, pushed=True)
        if changes.toolbars:
            self._set_toolbars([(t.name, t.tooltip, t.provider) for t in self.follower.toolbars or []])
        return False

    def _mark_stale(self, path, names):
        """Files of `path` to draw again (names, or sb.ALL): invalidated INVALIDATE_SLICE at a
        time, one slice per main-loop iteration, so that a change of 20,000 files never freezes
        the window for long. The first slice goes before the next drawing."""
        known = self.stale.get(path, set())
        if names is sb.ALL or known is sb.ALL:
            self.stale[path] = sb.ALL
        else:
            known.update(names)
            self.stale[path] = known
        if self.stale_source is None:
            self._invalidate_slice()

    def _invalidate_slice(self):
        self.stale_source = None
        left = INVALIDATE_SLICE
        while self.orphans and left > 0:
            self.orphans.pop().invalidate_extension_info()
            left -= 1
        while self.stale and left > 0:
            path = next(iter(self.stale))
            names = self.stale[path]
            directory = self.follower.directory(path)
            if directory is None or directory.extra is None:
                del self.stale[path]
                continue
            files = directory.extra.files
            if names is sb.ALL:
                names = self.stale[path] = set(files)
            while names and left > 0:
                f = files.get(names.pop())
                if f is not None:
                    f.invalidate_extension_info()
                    left -= 1
            if not names:
                del self.stale[path]
        if self.stale or self.orphans:
            # Below drawing (GTK redraws at HIGH_IDLE + 20), so the window shows each slice.
            self.stale_source = GLib.idle_add(self._invalidate_slice, priority=GLib.PRIORITY_DEFAULT_IDLE)
        return False

    def _observe_again(self, path):
        self._follow_up(self.follower.retry(path))
        return False

    def _invalidate(self, directory, names):
        files = directory.extra.files
        for name in names:
            f = files.get(name)
            if f is not None:
                f.invalidate_extension_info()

    def lookup(self, fm_path):
        """(Directory, name, Item or None) for a path the file manager shows (str)."""
        fm_dir, name = os.path.split(fm_path)
        if not name:
            return None, None, None
        directory = self._directory(fm_dir)
        bname = os.fsencode(name)
        item = directory.items.get(bname) if directory.items else None
        return directory, bname, item

    def update_file_info(self, f):
        path = _local_path(f)
        if path is None:
            return
        directory, name, item = self.lookup(path)
        if directory is None:
            return
        directory.extra.files[name] = f
        if item is None:
            return
        emblem = emblem_for(item)
        if emblem:
            f.add_emblem(emblem)
        text = column_text(item)
        f.add_string_attribute(COLUMN_ATTRIBUTE, text)
        if DEBUG:       # called for every file shown: not even the message is made otherwise
            _debug("drew %s emblem=%s column=%s" % (path, emblem or "-", text))

    # -- pushes ----------------------------------------------------------------------

    def _push(self, m):
        if m.kind == "BYE":
            _debug("the daemon says goodbye: %s" % m.arg(0, ""))
        elif m.kind == "GONE" and m.fields:
            gone = self.follower.directory(m.fields[0])
            if gone is not None and gone.extra is not None and gone.extra.files:
                # A followed directory renamed, moved or deleted: the follower forgets it, but
                # the file manager keeps its file objects (Nautilus moves them with the folder)
                # and their emblems, and would show them again as they were once the folder is
                # back. Invalidated, they are asked again under their new path.
                self.orphans.extend(gone.extra.files.values())
                gone.extra.files = {}
                if self.stale_source is None:
                    self.stale_source = GLib.idle_add(self._invalidate_slice, priority=GLib.PRIORITY_DEFAULT_IDLE)
        self._follow_up(self.follower.push(m))

    def _define_badge(self, badge_id, image, pushed=True):
        """A badge with an image: installed as the emblem icon. One listed by BADGES at connect
        only when no icon directory has it yet (`make install` put the default set there); one
        a `* BADGE` push (re)defines, always."""
        if not badge_id or not image or self.badge_images.get(badge_id) == image:
            return
        if not pushed and emblem_installed(EMBLEM_PREFIX + badge_id):
            self.badge_images[badge_id] = image
            return
        if install_badge_image(badge_id, image, rendered=lambda: refresh_icon_theme() and self._redraw_badge(badge_id)):
            self.badge_images[badge_id] = image
            refreshed = refresh_icon_theme()
            _debug("installed the badge %s from %s" % (badge_id, image))
            self._redraw_badge(badge_id)
            if not refreshed:
                # GTK looks at the icon directories again at most every 5 seconds, and meanwhile
                # the file manager refuses the unknown emblem: draw its files again after that.
                GLib.timeout_add(ICON_RESCAN_MS, self._redraw_badge, badge_id)

    def _redraw_badge(self, badge_id):
        # A copy: invalidating calls back into update_file_info, which may follow a directory.
        for directory in list(self.dirs.values()):
            if directory.extra is not None:
                self._invalidate(directory, [n for n, i in (directory.items or {}).items() if i.badge == badge_id])
        return False

    def _set_toolbars(self, toolbars):
        if toolbars != self.toolbars:
            self.toolbars = toolbars
            _debug("toolbar items: %s" % ", ".join(t[0] for t in toolbars))
            self._menus_changed()

    def _menus_changed(self):
        """Asks the file manager for our menu and toolbar items again (open windows)."""
        for provider in self.providers:
            try:
                provider.emit_items_updated_signal()
            except (AttributeError, TypeError) as ex:
                _debug("cannot update the menus: %r" % ex)
        for hook in self.menu_hooks:
            hook()

    # -- menus -----------------------------------------------------------------------

    def _prefetch_menus(self, directory):
        """One MENU per state met in a listing, so that a right-click answers at once."""
        seen = {}
        for name, item in directory.items.items():
            seen.setdefault(item.state, item.path)
        for state, path in seen.items():
            key = (directory.path, frozenset([state]))
            self.send(req.menu("items", path, target=directory.path),
                      on_answer=lambda r, key=key: self._menu_answered(key, r))

    def _menu_answered(self, key, reply):
        if reply.ok:
            self.menus[key] = [(m.arg(0), m.opt("title", m.arg(0)), m.opt("enabled", "1") != "0")
                               for m in reply.lines("MENUITEM")]
        elif reply.final is not None:
            self.menus[key] = []

    def menu(self, kind, paths, target, key, provider=None):
        """The MENUITEMs [(id, title, enabled)]: the cached answer for `key` at once (and a
        fresh one asked for next time), else the daemon's within MENU_WAIT, else None."""
        cached = self.menus.get(key) if key is not None else None
        reply = self.send(req.menu(kind, *paths, target=target, provider=provider),
                          on_answer=(lambda r: self._menu_answered(key, r)) if key is not None else None)
        if cached is not None:
            return cached
        if reply is None:
            return None
        if not reply.wait(MENU_WAIT):
            _debug("MENU %s: no answer within %gs" % (kind, MENU_WAIT))
            return None
        if not reply.ok:
            return None
        return [(m.arg(0), m.opt("title", m.arg(0)), m.opt("enabled", "1") != "0") for m in reply.lines("MENUITEM")]

    def item_menu(self, files):
        if not self.conn.ready or not files:
            return None
        paths, states, dirs = [], set(), set()
        for f in files:
            path = _local_path(f)
            if path is None:
                return None
            directory, name, item = self.lookup(path)
            if directory is None or directory.status == sb.follow.REFUSED:
                return None
            paths.append(directory.path.rstrip(b"/") + b"/" + name)
            dirs.add(directory.path)
            states.add(item.state if item is not None else None)
        key = None
        if len(dirs) == 1 and None not in states:
            key = (next(iter(dirs)), frozenset(states))
        items = self.menu("items", paths, next(iter(dirs)) if len(dirs) == 1 else None, key)
        _debug("menu items for %d paths: %s" % (len(paths), " ".join(i[0] for i in items or [])))
        return items and (paths, items)

    def action(self, action_id, paths, target=None, provider=None, window=None):
        """Sends ACTION; its answer is shown to the user (notify), `window` being where the
        item was chosen (Nemo and Caja say; Nautilus 4 does not). Where the daemon passes
        engines' answers on (action-reply), an engine's action asks for one on a connection of
        its own (ActionCall), and what the engine said is shown, a failure too."""
        def shown(text, ok):
            _debug("action %s -> %s %s" % (action_id, "OK" if ok else "ERR", text))
            notify("Sync: %s" % action_id, text, ok, window)

        # The built-in syncbadge.* items answer at once, with or without reply=1.
        if self.conn.ready and "action-reply" in self.conn.caps and not action_id.startswith("syncbadge."):
            waiting = []

            def answered_by_engine(text, ok):
                self.calls.difference_update(waiting)
                shown(text, ok)
            call = ActionCall(self.conn.path, self.conn.name, action_id, paths, target, provider, answered_by_engine)
            if not call.finished:
                waiting.append(call)
                self.calls.add(call)
            return

        def answered(reply):
            if reply.final is None:
                text, ok = "the daemon went away", False
            elif reply.ok:
                text, ok = reply.final.opt("message", "done"), True
            else:
                text, ok = "%s %s" % (reply.code, reply.final.opt("message", "")), False
            _debug("action %s -> %s %s" % (action_id, "OK" if ok else "ERR", text))
            notify("Sync: %s" % action_id, text, ok, window)

        if self.send(req.action(action_id, *paths, target=target, provider=provider), on_answer=answered) is None:
            notify("Sync", "no daemon answers", False, window)


class ActionCall(object):
    """One engine's action with reply=1, on a connection of its own, driven by the GLib main
    loop: the daemon answers it only once the engine has (up to 10 s later), and answers that
    connection's later requests after it; on the extension's own connection, badges, menus
    and listings would wait meanwhile. `done(text, ok)` is called once: the engine's message
    (or "done"), or what went wrong."""

    def __init__(self, path, name, action_id, paths, target, provider, done):
        self.action_id = action_id
        self.args = (paths, target, provider)
        self.done = done
        self.finished = False
        self.timer = None
        self.conn = sb.Connection(path=path, role="viewer", name=name, hello_options={"roots": 0},
                                  on_hello=self._hello, on_close=self._closed)
        self.io = LoopWatches(self.conn)
        try:
            self.conn.connect(timeout=0)
        except OSError as ex:
            self._finish("no daemon answers (%s)" % (ex.strerror or ex), False)
            return
        self.io.start()
        # The daemon's own deadline is 10 s; this one covers a daemon that never answers at all.
        self.timer = GLib.timeout_add(int((HELLO_WAIT + sb.viewer.ANSWER_DEADLINE + 3) * 1000), self._late)

    def _hello(self, conn):
        paths, target, provider = self.args
        _debug("asking %s for the engine's answer" % self.action_id)
        try:
            sb.Viewer(conn).send_action(self.action_id, *paths, target=target, provider=provider,
                                        on_answer=self._answered)
        except (sb.Disconnected, ValueError) as ex:
            self._finish("not sent: %s" % ex, False)
            return
        self.io.want_write()

    def _answered(self, reply):
        try:
            text = sb.answer_of(reply)
        except sb.ServerError as ex:
            self._finish(str(ex) if isinstance(ex, (sb.ActionFailed, sb.ActionTimeout, sb.NoProvider))
                         else "%s %s" % (ex.code, ex.message), False)
        except sb.Disconnected:
            self._finish("the daemon went away", False)
        else:
            self._finish(text or "done", True)

    def _closed(self, conn, reason):
        if not self.finished:
            self._finish("the daemon went away (%s)" % reason, False)

    def _late(self):
        self.timer = None
        self._finish("no answer from syncbadged", False)
        return False

    def cancel(self):
        self.done = None
        self._finish(None, False)

    def _finish(self, text, ok):
        if self.finished:
            return
        self.finished = True
        if self.timer is not None:
            GLib.source_remove(self.timer)
            self.timer = None
        self.io.stop()
        self.conn.on_close = None
        self.conn.close("answered")
        if self.done is not None:
            self.done(text, ok)


def refresh_icon_theme():
    """Makes GTK look at the icon directories again now, so a badge image just installed is
    found (GTK itself checks them at most every few seconds, and keeps a failed lookup)."""
    try:
        if HOST == "nautilus":
            gi.require_version("Gtk", "4.0")
            gi.require_version("Gdk", "4.0")
            from gi.repository import Gdk, Gtk
            display = Gdk.Display.get_default()
            if display is not None:
                theme = Gtk.IconTheme.get_for_display(display)
                theme.set_search_path(theme.get_search_path())   # drops GTK 4's caches
                return True
        else:
            gi.require_version("Gtk", "3.0")
            gi.require_version("Gdk", "3.0")
            from gi.repository import Gdk, Gtk
            if Gdk.Screen.get_default() is not None:
                # Not rescan_if_needed(): it sees only directories that were there when the
                # theme was loaded, and a user's icon directory is often made by this install
                # (a packaged install puts the default emblems in /usr/share).
                theme = Gtk.IconTheme.get_default()
                theme.set_search_path(theme.get_search_path())
                return True
    except (ImportError, ValueError, AttributeError) as ex:
        _debug("cannot refresh the icon theme: %r" % ex)
    return False


def emblem_installed(name):
    """Whether an icon directory (the user's, then $XDG_DATA_DIRS) has the emblem."""
    homes = [os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")]
    homes += (os.environ.get("XDG_DATA_DIRS") or "/usr/local/share:/usr/share").split(":")
    return any(os.path.exists(os.path.join(d, "icons", "hicolor", "scalable", "emblems", name + ".svg"))
               for d in homes if d)


def _local_path(f):
    if f.get_uri_scheme() != "file":
        return None
    location = f.get_location()
    path = location.get_path() if location is not None else None
    if not path or not path.startswith("/"):
        return None
    return os.path.normpath(path)


def notify(title, text, ok, window=None):
    """Shows an action's result: notify-send where it exists, else the status bar of `window`
    (Nemo and Caja), else the application's own notification (GLib)."""
    tool = shutil.which("notify-send")
    if tool:
        try:
            child = subprocess.Popen([tool, "-a", "SyncBadge", "-i", "dialog-information" if ok else "dialog-error",
                                      title, text], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
            GLib.child_watch_add(GLib.PRIORITY_DEFAULT, child.pid, lambda pid, status: child.wait())
            return
        except OSError:
            pass
    if window is not None and status_bar_message(window, "%s: %s" % (title, text)):
        return
    app = Gio.Application.get_default()
    if app is not None:
        n = Gio.Notification.new(title)
        n.set_body(text)
        app.send_notification("syncbadge", n)
    else:
        _log("%s: %s" % (title, text))


STATUS_SECONDS = 8


def status_bar_message(window, text):
    """Shows `text` on the shown status bar of a GTK 3 `window` for STATUS_SECONDS, above what
    the file manager says there (its own messages come back after). False when there is none."""
    try:
        gi.require_version("Gtk", "3.0")
        from gi.repository import Gtk
    except (ImportError, ValueError):
        return False
    bar = find_widget(window, lambda w: isinstance(w, Gtk.Statusbar))
    if bar is None or not bar.is_visible():
        return False
    context = bar.get_context_id("syncbadge")
    message = bar.push(context, text)
    GLib.timeout_add_seconds(STATUS_SECONDS, lambda: bar.remove(context, message) and False)
    return True


def find_widget(widget, match):
    """The first widget under `widget` (itself included, depth first) that `match`es."""
    if match(widget):
        return widget
    children = []
    if hasattr(widget, "forall"):
        widget.forall(lambda child, _data: children.append(child), None)
    for child in children:
        found = find_widget(child, match)
        if found is not None:
            return found
    return None


def _mnemonic_safe(text):
    return text.replace("_", "__")


if FM is not None:

    def _menu_item(name, label, tip="", sensitive=True):
        item = FM.MenuItem(name="SyncBadge::" + name, label=_mnemonic_safe(label), tip=tip)
        item.set_property("sensitive", sensitive)
        return item

    def _submenu(name, label, entries, activate):
        """A "Sync"-like item whose submenu holds `entries` [(id, title, enabled)]."""
        top = _menu_item(name, label)
        menu = FM.Menu()
        top.set_submenu(menu)
        for action_id, title, enabled in entries:
            sub = _menu_item(name + "::" + action_id, title, sensitive=enabled)
            sub.connect("activate", lambda _item, a=action_id: activate(a))
            menu.append_item(sub)
        return top

    class CajaToolbar(object):
        """Each engine's toolbar item (`DEFINE-TOOLBAR`) as a button in the toolbar of every
        Caja window. Caja shows extensions' toolbar items, but python3-caja 1.26 never asks a
        Python extension for them (it wraps no get_toolbar_items); it does hand
        get_background_items the window, each time a window shows a directory. So the buttons
        go into the window's own GtkToolbar (named "Toolbar" by Caja's UI description), and a
        click pops up the engine's `MENU toolbar` items."""

        def __init__(self, core):
            self.core = core
            self.windows = []      # [(window, state)]: state is {"location", "toolbar", "buttons", "window"}
            core.menu_hooks.append(self.refresh)

        def show(self, window, location):
            """Called from get_background_items: the buttons of `window`, now showing
            `location` (a real path, bytes; None where it is not a local directory). False
            when the window shows no toolbar to hold them: then the background menu does."""
            state = self._state(window)
            if state["toolbar"] is None:
                return False
            state["location"] = location
            self._sync(state)
            return state["toolbar"].get_visible()

        def refresh(self):
            for _, state in list(self.windows):
                if state["toolbar"] is not None:
                    self._sync(state)

        def _state(self, window):
            for known, state in self.windows:
                if known is window:
                    return state
            toolbar = find_widget(window, lambda w: isinstance(w, Gtk.Toolbar) and w.get_name() == "Toolbar")
            state = {"location": None, "toolbar": toolbar, "buttons": [], "window": window}
            self.windows.append((window, state))
            window.connect("destroy", lambda w: self._forget(w))
            if toolbar is None:
                _debug("no toolbar in %r: the toolbar items stay in the background menu" % window)
            else:
                # View > Toolbar hides it or shows it again: the background menu takes the
                # items over, or gives them back.
                toolbar.connect("notify::visible", lambda *_: self.core._menus_changed())
            return state

        def _forget(self, window):
            self.windows = [(w, s) for w, s in self.windows if w is not window]

        def _sync(self, state):
            wanted = list(self.core.toolbars)
            if [b[0] for b in state["buttons"]] == wanted:
                return
            for _, button in state["buttons"]:
                state["toolbar"].remove(button)
                button.destroy()
            state["buttons"] = []
            # After Caja's own navigation buttons, before its zoom control: the last items of
            # a toolbar are the first to go into its overflow menu when the window is narrow.
            toolbar = state["toolbar"]
            at = next((i for i in range(toolbar.get_n_items()) if toolbar.get_nth_item(i).get_name() == "Zoom"), -1)
            for item in wanted:
                name, tooltip, provider = item
                button = Gtk.ToolButton(label=name or "Sync engine", icon_name="view-refresh")
                button.set_name("SyncBadgeToolbar")
                button.set_is_important(True)          # its label beside the icon
                if tooltip:
                    button.set_tooltip_text(tooltip)
                button.connect("clicked", lambda b, i=item, s=state: self._clicked(b, i, s))
                if DEBUG:
                    button.connect("size-allocate", lambda b, a, n=name, seen=[]: self._placed(b, a, n, seen))
                toolbar.insert(button, at)
                at = at + 1 if at >= 0 else -1
                button.show_all()
                state["buttons"].append((item, button))
            _debug("toolbar buttons: %s" % ", ".join(i[0] for i in wanted))

        def _placed(self, button, allocation, name, seen):
            """Logs where a button is on the screen when that changes (tests click there)."""
            window = button.get_window()
            if window is not None:
                x, y = window.get_root_coords(allocation.x, allocation.y)
                place = (x, y, allocation.width, allocation.height)
                if seen[-1:] != [place]:
                    seen[:] = [place]
                    _debug("toolbar button %s at %d,%d size %dx%d" % ((name,) + place))

        def _clicked(self, button, item, state):
            name, _, provider = item
            location = state["location"]   # None: not a local directory (provider= needs no path)
            entries = self.core.menu("toolbar", [], location, (location, "toolbar", provider),
                                     provider=provider or None)
            _debug("toolbar menu of %s: %s" % (name, " ".join(e[0] for e in entries or [])))
            menu = Gtk.Menu()
            for action_id, title, enabled in entries or []:
                entry = Gtk.MenuItem.new_with_label(title)
                entry.set_sensitive(enabled)
                entry.connect("activate", lambda _e, a=action_id: self.core.action(
                    a, [], location, provider=provider or None, window=state["window"]))
                menu.append(entry)
            if not entries:
                entry = Gtk.MenuItem.new_with_label("No answer from syncbadged" if entries is None else "Nothing to do")
                entry.set_sensitive(False)
                menu.append(entry)
            menu.show_all()
            menu.attach_to_widget(button, None)
            # Destroyed once closed; later than "deactivate", which comes before an item's "activate".
            menu.connect("deactivate", lambda m: GLib.idle_add(m.destroy))
            if button.get_mapped():
                menu.popup_at_widget(button, Gdk.Gravity.SOUTH_WEST, Gdk.Gravity.NORTH_WEST, None)
            else:   # chosen from the toolbar's overflow menu
                menu.popup_at_pointer(None)

    class SyncBadgeExtension(GObject.GObject, FM.InfoProvider, FM.MenuProvider, FM.ColumnProvider):
        """The file manager's side: every call goes to the shared Core."""

        def __init__(self):
            GObject.GObject.__init__(self)
            self.core = Core.get()
            self.core.providers.append(self)
            self.toolbar = CajaToolbar(self.core) if HOST == "caja" else None

        def update_file_info(self, f):
            try:
                self.core.update_file_info(f)
            except Exception as ex:  # never break the file manager
                _log("update_file_info: %r" % ex)
            return FM.OperationResult.COMPLETE

        def get_columns(self):
            return [FM.Column(name="SyncBadge::sync", attribute=COLUMN_ATTRIBUTE, label="Sync",
                              description="Sync state, progress and message (SyncBadge)")]

        # Nautilus 4: (files); Nemo and Caja: (window, files).
        def get_file_items(self, *args):
            files, window = args[-1], (args[0] if len(args) > 1 else None)
            try:
                found = self.core.item_menu(files)
            except Exception as ex:
                _log("menu: %r" % ex)
                return []
            if not found:
                return []
            paths, entries = found
            target = _split(paths[0])[0]
            return [_submenu("sync", "Sync", entries, lambda a: self.core.action(a, paths, target, window=window))]

        def get_background_items(self, *args):
            folder, window = args[-1], (args[0] if len(args) > 1 else None)
            path = _local_path(folder) if folder is not None else None
            try:
                real = os.fsencode(os.path.realpath(path)) if path is not None else None
                # Before the daemon answers too: the buttons come when the toolbar items do.
                in_toolbar = self.toolbar is not None and window is not None and self.toolbar.show(window, real)
                if real is None or not self.core.conn.ready:
                    return []
                return self._background(path, real, in_toolbar, window)
            except Exception as ex:
                _log("background menu: %r" % ex)
                return []

        def _background(self, path, real, in_toolbar, window):
            entries = self.core.menu("container", [], real, (real, "container")) or []
            items = []
            if entries:
                items.append(_submenu("container", "Sync", entries, lambda a: self.core.action(a, [], real, window=window)))
            _debug("background menu for %s: %s" % (path, " ".join(e[0] for e in entries)))
            # Each engine's toolbar item: a button in Caja's toolbar, else (Nautilus and Nemo
            # have no toolbar items for extensions) a submenu of the background menu.
            if in_toolbar:
                return items
            for n, (name, tooltip, provider) in enumerate(self.core.toolbars):
                tools = self.core.menu("toolbar", [], real, (real, "toolbar", provider), provider=provider or None) or []
                items.append(_submenu("toolbar%d" % n, name or "Sync engine", tools,
                                      lambda a, p=provider: self.core.action(a, [], real, provider=p, window=window)))
            return items

    if HOST == "nemo":
        class SyncBadgeNameAndDesc(GObject.GObject, FM.NameAndDescProvider):
            def get_name_and_desc(self):
                return ["SyncBadge:::Sync badges, a Sync column and a Sync menu from syncbadged"]

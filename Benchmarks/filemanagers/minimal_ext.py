# -*- coding: utf-8 -*-
"""The `minimal` side of make bench-fm (Nautilus, Nemo, Caja): the least work any emblem
extension can do, to tell the file manager's own cost of emblems from an extension's.

No socket, no protocol, no parsing: every file under $SYNCBADGE_MINIMAL_ROOT gets the emblem of
one state held in a dict (`synced` to begin with), and `update_file_info` is that lookup. The
bench says what changed through a FIFO ($SYNCBADGE_MINIMAL_FIFO), one line at a time:

    ALL <state>      every file is <state> now
    <state> <path>   that file is <state> now

and the extension invalidates exactly the files that changed, as syncbadge_fm.py does: the
first INVALIDATE_SLICE before the next drawing, the rest that many per main-loop iteration
below GTK's redraw priority (the same numbers: a flip of every file makes the same calls; a
flip reaches SyncBadge's in slices of pushes, this one in one line).
What SyncBadge's extension spends above this side is its own (the link to the daemon, the
follower, its lookups); what this side spends above no extension is the file manager's.
"""

import os
import sys

from gi.repository import GLib, GObject

# The extension host puts this directory on sys.path before it imports any module of it, and
# imports each once: the probe's rule for which file manager this is serves here too.
from syncbadge_probe import _host_module

FIFO = os.environ.get("SYNCBADGE_MINIMAL_FIFO")
ROOT = os.environ.get("SYNCBADGE_MINIMAL_ROOT", "").rstrip("/") + "/"
INVALIDATE_SLICE = 256      # syncbadge_fm.INVALIDATE_SLICE
EMBLEM_PREFIX = "emblem-syncbadge-"


class Minimal(object):
    def __init__(self):
        self.default = "synced"
        self.states = {}        # path -> state, where not the default
        self.files = {}         # path -> the file manager's file object, as it asked
        self.stale = set()
        self.stale_source = None
        self.rest = b""
        # Read and write, so that the FIFO never reads as closed between the bench's writes.
        self.fd = os.open(FIFO, os.O_RDWR | os.O_NONBLOCK)
        GLib.io_add_watch(self.fd, GLib.PRIORITY_DEFAULT, GLib.IO_IN, self._readable)

    def _readable(self, fd, condition):
        try:
            self.rest += os.read(fd, 65536)
        except BlockingIOError:
            return True
        *lines, self.rest = self.rest.split(b"\n")
        for line in lines:
            first, _, rest = line.decode("utf-8", "surrogateescape").partition(" ")
            if first == "ALL" and rest:
                self.default = rest
                self.states.clear()
                self.stale.update(self.files)
            elif rest:
                self.states[rest] = first
                self.stale.add(rest)
        if self.stale_source is None:
            self._invalidate_slice()
        return True

    def _invalidate_slice(self):
        self.stale_source = None
        for _ in range(min(INVALIDATE_SLICE, len(self.stale))):
            f = self.files.get(self.stale.pop())
            if f is not None:
                f.invalidate_extension_info()
        if self.stale:
            self.stale_source = GLib.idle_add(self._invalidate_slice, priority=GLib.PRIORITY_DEFAULT_IDLE)
        return False

    def update_file_info(self, f):
        if f.get_uri_scheme() != "file":
            return
        path = f.get_location().get_path()
        if not path or not path.startswith(ROOT):
            return
        self.files[path] = f
        f.add_emblem(EMBLEM_PREFIX + self.states.get(path, self.default))


FM = _host_module() if FIFO else None
if FM is not None:
    MINIMAL = Minimal()

    class SyncBadgeMinimal(GObject.GObject, FM.InfoProvider):
        def update_file_info(self, f):
            MINIMAL.update_file_info(f)

    sys.stderr.write("syncbadge-minimal: loaded, %s\n" % FIFO)
    sys.stderr.flush()

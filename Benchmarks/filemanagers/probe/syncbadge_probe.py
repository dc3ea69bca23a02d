# -*- coding: utf-8 -*-
"""A heartbeat in the file manager's main loop, for make bench-fm (Benchmarks/filemanagers).

Loaded as a second extension beside the one measured (Nautilus, Nemo and Caja import every
module of their Python extension directory). SIGUSR2 starts a GLib timeout of PROBE_MS (5 ms)
that stamps time.monotonic() (CLOCK_MONOTONIC, the harness's clock too) at every tick, and
creates $SYNCBADGE_PROBE_OUT.<n>.on once the main loop has handled the signal; SIGUSR1 stops it
and writes the stamps to $SYNCBADGE_PROBE_OUT.<n> (n counting from 1, written to a temporary
name then renamed, so a file that is there is whole). Two signals, not one that toggles: two
of the same signal sent while the main loop is frozen arrive as one. A gap between
two stamps is how long the main loop did not come back to the timeout: a frozen window.
SYNCBADGE_PROBE_START=1 starts it at load; make bench-fm does not: started with the process,
Nautilus 43 under Xvfb never loaded a folder of 20,000 files without an extension (the window
stayed empty, idle, for 30 s), so the open is measured on the screen alone.
While it is off it adds no source to the loop, so idle wake-ups are measured without it.
SYNCBADGE_PROBE_GC=1 also logs every collection of Python's cyclic garbage collector that takes
GC_LOG_MS or more (in whichever thread allocated when it began: the main loop's, unless the
sampler's) to stderr: `syncbadge-probe: gc generation G took T ms at M (N collected)`, M the
monotonic clock at its end.
SYNCBADGE_PROBE_SAMPLE=1 also samples, while the heartbeat runs, what Python code the main
thread is in, every SAMPLE_MS from a thread of the probe's, and writes the samples beside the
stamps ($SYNCBADGE_PROBE_OUT.<n>.stacks: `time<TAB>innermost < caller < ...`). The sampler
needs the GIL, which the file manager's Python host holds while the file manager runs its own C
code: a long gap without a sample in it is the file manager's own work (README.md).
SYNCBADGE_PROBE_LINES=1 also counts, while the heartbeat runs, the lines the extension's
SyncBadge connection parses, by kind (`* ITEM`, `* RESET`, an answer's `ITEM` data lines...),
and writes them beside the stamps ($SYNCBADGE_PROBE_OUT.<n>.lines: `head kind<TAB>count`, head
`*` for a push and `answer` for a tagged line). It wraps the package's parse_message for that
time, which costs each line about half a microsecond more.
"""

import gc
import os
import signal
import sys
import threading
import time
from array import array

from gi.repository import GLib

PROBE_MS = int(os.environ.get("SYNCBADGE_PROBE_MS", "5"))
OUT = os.environ.get("SYNCBADGE_PROBE_OUT")
GC_LOG_MS = 10
SAMPLE_MS = 2
SAMPLE = os.environ.get("SYNCBADGE_PROBE_SAMPLE") == "1"
LINES = os.environ.get("SYNCBADGE_PROBE_LINES") == "1"


class LineCounter(object):
    """Counts what syncbadge.codec.parse_message returns (the Connection looks it up in the
    module at every line, so the wrapper sees every line) until stop() puts it back."""

    def __init__(self):
        self.counts = {}
        self.codec = sys.modules.get("syncbadge.codec")
        if self.codec is None:
            return
        self.parse = parse = self.codec.parse_message
        counts = self.counts

        def counting(line):
            m = parse(line)
            key = ("*" if m.head == "*" else "answer") + " " + m.kind
            counts[key] = counts.get(key, 0) + 1
            return m
        self.codec.parse_message = counting

    def stop(self):
        if self.codec is not None:
            self.codec.parse_message = self.parse
        return self.counts


class Sampler(object):
    """What Python code the main thread runs, every SAMPLE_MS (a thread of its own takes the
    GIL in turn, so samples inside a long stretch of Python come at most every switch interval)."""

    def __init__(self):
        self.main = threading.main_thread().ident
        self.samples = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopping.wait(SAMPLE_MS / 1000.0):
            frame = sys._current_frames().get(self.main)
            names = []
            while frame is not None and len(names) < 4:
                code = frame.f_code
                names.append("%s:%s:%d" % (os.path.basename(code.co_filename), code.co_name, frame.f_lineno))
                frame = frame.f_back
            self.samples.append((time.monotonic(), " < ".join(names) or "-"))

    def stop(self):
        self.stopping.set()
        self.thread.join()
        return self.samples


def _gc_logger():
    started = {}

    def callback(phase, info):
        if phase == "start":
            started["t"] = time.monotonic()
        elif "t" in started:
            ms = (time.monotonic() - started.pop("t")) * 1000
            if ms >= GC_LOG_MS:
                sys.stderr.write("syncbadge-probe: gc generation %d took %.1f ms at %.6f (%d collected)\n"
                                 % (info["generation"], ms, time.monotonic(), info["collected"]))
                sys.stderr.flush()
    return callback


class Probe(object):
    def __init__(self):
        self.source = None
        self.ticks = array("d")
        self.dumps = 0
        self.sampler = None
        self.lines = None

    def _tick(self):
        self.ticks.append(time.monotonic())
        return True

    def start(self):
        if self.source is not None:
            return True
        self.ticks = array("d", [time.monotonic()])
        self.source = GLib.timeout_add(PROBE_MS, self._tick)
        if SAMPLE:
            self.sampler = Sampler()
        if LINES:
            self.lines = LineCounter()
        if OUT:
            with open("%s.%d.on" % (OUT, self.dumps + 1), "w"):
                pass
        return True

    def stop(self):
        if self.source is None:
            return True
        GLib.source_remove(self.source)
        self.source = None
        self._tick()
        # Before any file is written: a write that fails must not leave the sampler running.
        sampler, self.sampler = self.sampler, None
        samples = sampler.stop() if sampler is not None else None
        lines, self.lines = self.lines, None
        counts = lines.stop() if lines is not None else None
        self.dumps += 1
        path = "%s.%d" % (OUT, self.dumps)
        with open(path + ".tmp", "w") as f:
            f.write("\n".join("%.6f" % t for t in self.ticks))
            f.write("\n")
        if samples is not None:
            with open(path + ".stacks", "w") as f:
                f.write("".join("%.6f\t%s\n" % s for s in samples))
        if counts is not None:
            with open(path + ".lines", "w") as f:
                f.write("".join("%s\t%d\n" % kv for kv in sorted(counts.items())))
        os.rename(path + ".tmp", path)
        self.ticks = array("d")
        return True

    def safely(self, what):
        def run():
            try:
                what()
            except Exception as ex:   # never break the file manager
                sys.stderr.write("syncbadge-probe: %r\n" % ex)
            return True
        return run


def _host_module():
    """The file manager's extension module, by the process (as syncbadge_fm.py tells it)."""
    import gi
    exe = os.path.basename(os.readlink("/proc/self/exe")).replace(" (deleted)", "")
    if exe == "nautilus":
        gi.require_version("Nautilus", "4.0")
        from gi.repository import Nautilus as FM
    elif exe.startswith("nemo"):
        gi.require_version("Nemo", "3.0")
        from gi.repository import Nemo as FM
    elif exe == "caja":
        gi.require_version("Caja", "2.0")
        from gi.repository import Caja as FM
    else:
        return None
    return FM


FM = _host_module() if OUT else None
if FM is not None:
    from gi.repository import GObject

    class SyncBadgeProbe(GObject.GObject, FM.ColumnProvider):
        """A provider type of no cost (no columns): a module that registers no type is not kept
        by the Python extension host (with the probe alone, the no-extension side, its signal
        sources never ran)."""

        def get_columns(self):
            return []


if OUT:
    PROBE = Probe()
    GLib.unix_signal_add(GLib.PRIORITY_HIGH, signal.SIGUSR2, PROBE.safely(PROBE.start))
    GLib.unix_signal_add(GLib.PRIORITY_HIGH, signal.SIGUSR1, PROBE.safely(PROBE.stop))
    if os.environ.get("SYNCBADGE_PROBE_GC") == "1":
        gc.callbacks.append(_gc_logger())
    if os.environ.get("SYNCBADGE_PROBE_START") == "1":
        PROBE.start()
    sys.stderr.write("syncbadge-probe: loaded in %d\n" % os.getpid())
    sys.stderr.flush()

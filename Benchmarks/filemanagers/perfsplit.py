"""make bench-fm --perf: where the file manager's CPU goes in each phase, by library.

The heartbeat says how long the main loop was away, and the sampler (SYNCBADGE_PROBE_SAMPLE)
which Python line held it; neither says how much of a phase's CPU was Python's and how much
the file manager's own, GTK's or the drawing libraries'. `perf record -a` on the whole run,
with the monotonic clock the bench stamps its phases with, gives that: each sample of the
file manager's process inside a phase's window is counted against its library's group.

Python's own frames are not in perf's view (Debian 12's Python 3.11 has no perf
trampolines): everything the interpreter runs, the extension's code and the probe's
heartbeat alike, counts as "Python".
"""

import bisect
import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import time

FREQ = 997      # samples a second per CPU: about 1 ms of CPU each, off the timer ticks

# A library's group, by the first pattern its path matches.
GROUPS = [
    ("Python", r"libpython|/python3\.\d+$|/lib-dynload/"),
    ("PyGObject", r"/gi/_gi|libffi|libgirepository"),
    ("file manager", r"/(nautilus|nemo|caja|dolphin)[^/]*$|lib(nautilus|nemo|caja)-extension|libdolphin|"
                     r"/(nautilus|nemo|caja)/|kf\d/overlayicon"),
    ("GTK", r"libgtk-|libgdk-3|libgail|libatk"),
    ("Qt/KF", r"libQt|libKF"),
    ("GLib", r"libglib-|libgobject-|libgio-|libgmodule-"),
    ("drawing", r"libcairo|libpixman|libpango|libharfbuzz|libfreetype|librsvg|libgdk_pixbuf|libfontconfig|"
                r"libpng|libthai|libfribidi|libX|libxcb|libepoxy|libGL|libEGL|/gdk-pixbuf-2\.0/|libxml2"),
    ("libc", r"libc\.so|libm\.so|ld-linux|libstdc\+\+|libpcre"),
    ("kernel", r"\[kernel"),
]
NAMES = [g for g, _ in GROUPS] + ["other"]
_PATTERNS = [(g, re.compile(p)) for g, p in GROUPS]
_LINE = re.compile(r"^\s*(.*?)\s+(\d+)/(\d+)\s+(\d+\.\d+):\s+[0-9a-f]+\s+(.*?)\s+\(([^()]*)\)\s*$")


def group(dso):
    for g, p in _PATTERNS:
        if p.search(dso):
            return g
    return "other"


def require():
    """Stops the bench before it sets anything up where there is no perf."""
    if shutil.which("perf") is None:
        raise SystemExit("--perf needs perf (apt-get install linux-perf)")


class Recorder(object):
    """`perf record -a` from start() to stop(), to PATH."""

    def __init__(self, path):
        require()
        self.path = path
        self.proc = None

    def start(self):
        self.log = open(self.path + ".log", "ab")
        # cpu-clock, not perf's default `cycles` where the hardware counts them: a sample is then
        # 1/FREQ s of CPU, which is what split() adds up. -B: no build-id pass over every DSO
        # sampled, which stop() would wait for; `perf script` reads this machine's files by path.
        self.proc = subprocess.Popen(["perf", "record", "-a", "-B", "-e", "cpu-clock", "-k", "CLOCK_MONOTONIC", "-F", str(FREQ),
                                      "-o", self.path], stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=self.log, start_new_session=True)
        # perf fails at once where it may not watch every CPU (not root, and
        # kernel.perf_event_paranoid above 0): say so before the run, not after it.
        time.sleep(0.5)
        if self.proc.poll() is not None:
            self.proc = None        # nothing for stop() to stop, nor to split
            self.log.close()
            with open(self.path + ".log", "rb") as f:
                said = f.read().decode("utf-8", "replace").strip()[-600:]
            raise SystemExit("--perf: perf record exited at once (%s): %s" % (self.proc.returncode, said))

    def stop(self):
        """Whether there was a recording to stop (then self.path holds it)."""
        if self.proc is None:
            return False
        try:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                # A perf left running would record the whole machine until reboot.
                self.proc.kill()
                self.proc.wait()
                raise
        finally:
            self.proc = None
            self.log.close()
        return True


def _samples(path, names):
    """(pid, time, symbol, library) of every sample in `path` but the idle task's, in order;
    `names` {pid: process name} is filled on the way (the main thread's name, else any
    thread's: NIO-ELT-0-#0)."""
    proc = subprocess.Popen(["perf", "script", "-i", path, "-F", "comm,pid,tid,time,ip,sym,dso"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors="replace")
    unread, first = 0, None
    try:
        for line in proc.stdout:
            m = _LINE.match(line)
            if not m:
                # A perf whose `perf script` prints another layout would otherwise give a split
                # of nothing with no word why.
                if line.strip():
                    unread += 1
                    first = first or line.strip()
                continue
            pid = int(m.group(2))
            if pid == 0:
                continue            # idle
            if pid == int(m.group(3)) or pid not in names:
                names[pid] = m.group(1)
            yield pid, float(m.group(4)), m.group(5), m.group(6)
    finally:
        proc.stdout.close()
        proc.wait()
        if unread:
            sys.stderr.write("perfsplit: %d line(s) of perf script not read, the first: %s\n" % (unread, first))


def split(path, phases):
    """phases: [(key, pid, t0, t1)]. Returns {key: {"n": windows, "ms": {group: ms},
    "top": [(symbol (library), ms)], "elsewhere": [(process, ms)]}}, each over all windows of
    that key (not averaged); "elsewhere" is every other process's CPU in the same windows (Xvfb
    drawing, syncbadged answering), by the name of its main thread."""
    out = {}
    for key, _, _, _ in phases:
        entry = out.setdefault(key, {"n": 0, "ms": collections.Counter(), "symbols": collections.Counter(),
                                     "elsewhere": collections.Counter()})
        entry["n"] += 1
    ordered = sorted((t0, t1, pid, key) for key, pid, t0, t1 in phases)
    starts = [w[0] for w in ordered]
    names = {}
    ms = 1000.0 / FREQ
    for pid, t, sym, dso in _samples(path, names):
        i = bisect.bisect_right(starts, t) - 1      # the windows follow one another, never overlap
        if i < 0 or t > ordered[i][1]:
            continue
        _, _, owner, key = ordered[i]
        if pid == owner:
            out[key]["ms"][group(dso)] += ms
            out[key]["symbols"]["%s (%s)" % (sym or "?", os.path.basename(dso))] += ms
        else:
            out[key]["elsewhere"][pid] += ms
    for entry in out.values():
        entry["top"] = entry.pop("symbols").most_common(8)
        entry["ms"] = dict(entry["ms"])
        by_name = collections.Counter()
        for pid, v in entry["elsewhere"].items():
            by_name[names.get(pid, str(pid))] += v
        entry["elsewhere"] = by_name.most_common(4)
    return out


def table(result):
    """Markdown: one line per (fm, side, size, view, phase), CPU ms a window and each group's
    share of it."""
    lines = ["| file manager | side | folder | view | phase | windows | CPU ms a window | "
             + " | ".join(NAMES) + " | elsewhere, ms a window |",
             "|---|---|---|---|---|---:|---:|" + "---:|" * len(NAMES) + "---|"]
    for key in sorted(result):
        entry = result[key]
        total = sum(entry["ms"].values())
        shares = " | ".join(("%.0f%%" % (100 * entry["ms"].get(g, 0) / total)) if total else "–" for g in NAMES)
        n = max(entry["n"], 1)
        elsewhere = ", ".join("%s %.0f" % (name, v / n) for name, v in entry["elsewhere"])
        lines.append("| %s | %d | %.0f | %s | %s |" % (" | ".join(key), entry["n"], total / n, shares, elsewhere))
    return "\n".join(lines)


def timeline(path, pid, t0, t1, bin_ms=50):
    """CPU ms of each process in `bin_ms` bins of one window: [(bin start in s from t0,
    {process: ms})], the file manager's process named "FM". Shows what a window waited on:
    bins where the file manager is idle and another process is not."""
    bins = collections.defaultdict(collections.Counter)
    names = {}
    ms = 1000.0 / FREQ
    for p, t, _, _ in _samples(path, names):
        if t0 <= t <= t1:
            bins[int((t - t0) * 1000 // bin_ms)][p] += ms
    out = []
    for b in range(int((t1 - t0) * 1000 // bin_ms) + 1):
        row = collections.Counter()
        for p, v in bins[b].items():
            row["FM" if p == pid else names.get(p, str(p))] += v
        out.append((b * bin_ms / 1000.0, dict(row)))
    return out


def main():
    import argparse
    import json
    ap = argparse.ArgumentParser(description="One window of a kept bench-fm --perf run, in time: "
                                 "each process's CPU per bin (what the window waited on).")
    ap.add_argument("perf_data", help="the work directory's perf.data (bench-fm --perf --keep)")
    ap.add_argument("perf_json", help="OUT/fm-perf.json of the same run")
    ap.add_argument("key", help="fm,side,size,view,phase (dolphin,syncbadge,20000,icon,open)")
    ap.add_argument("--index", type=int, default=0, help="which window of that key (0: the first)")
    ap.add_argument("--bin-ms", type=int, default=50)
    args = ap.parse_args()
    want = args.key.split(",")
    windows = [w for w in json.load(open(args.perf_json))["windows"] if w["key"] == want]
    if len(windows) <= args.index:
        raise SystemExit("no window %d of %s in %s" % (args.index, args.key, args.perf_json))
    w = windows[args.index]
    rows = timeline(args.perf_data, w["pid"], w["t0"], w["t1"], args.bin_ms)
    procs = collections.Counter()
    for _, row in rows:
        procs.update(row)
    top = ["FM"] + [p for p, _ in procs.most_common() if p != "FM"][:5]
    print("from s | " + " | ".join(top) + " | (CPU ms per %d ms)" % args.bin_ms)
    for start, row in rows:
        print("%6.2f | " % start + " | ".join("%4.0f" % row.get(p, 0) for p in top))


if __name__ == "__main__":
    main()

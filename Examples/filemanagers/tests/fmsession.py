"""Support for the file-manager tests: the real daemon (syncbadge.testing), a file manager on its own session bus
(with a stand-in notification server), screenshots, emblem finding by colour, clicks.

Every process is started here and stopped by its pid (a file manager by its process group,
whose leader is the dbus-run-session started here). Waits poll something observable (a log
line, a screenshot) until a deadline.
"""

import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "Clients", "python"))

import syncbadge as sb  # noqa: E402  (the package under Clients/python)
from syncbadge import testing  # noqa: E402

# The daemon under test: $SYNCBADGED, else this checkout's debug build.
BINARY = testing.daemon_binary()

# The fill colour of each default badge (Badges/<id>.svg), as drawn: emblems are opaque there.
BADGE_COLOURS = {
    "synced": (0x2e, 0x9e, 0x44), "syncing": (0x15, 0x91, 0xb0), "error": (0xd3, 0x2f, 0x2f),
    "conflict": (0xa8, 0x3b, 0xb5), "pending": (0xe0, 0x9b, 0x00), "ignored": (0x61, 0x61, 0x61),
    "unknown": (0x78, 0x90, 0x9c),
}


class Failure(AssertionError):
    pass


def wait_until(what, predicate, timeout, interval=0.05):
    """testing.wait_until, failing the test with Failure."""
    return testing.wait_until(what, predicate, timeout, interval, error=Failure)


def missing_daemon():
    """Why the daemon under test cannot run here, or None."""
    if not os.access(BINARY, os.X_OK):
        return "no daemon at %s (swift build --product syncbadged, or set SYNCBADGED)" % BINARY
    return None


def daemon(workdir):
    """The real syncbadged on a private socket and state directory in `workdir`, with the
    repository's badges; its log also in workdir/syncbadged.log (kept with a failing run's
    artifacts). Not started yet."""
    return testing.Daemon(workdir, badges=os.path.join(REPO, "Badges"),
                          log_file=os.path.join(workdir, "syncbadged.log"))


class FileManager(object):
    """nautilus, nemo or caja on `directory`, on a session bus of its own (dbus-run-session)
    with notifyd.py owning org.freedesktop.Notifications; stderr goes to a log file."""

    COMMANDS = {
        "nautilus": ["nautilus", "--new-window"],
        "nemo": ["nemo"],
        "caja": ["caja", "--no-desktop"],
    }

    def __init__(self, name, workdir, env):
        self.name = name
        self.workdir = workdir
        self.env = env
        self.log_path = os.path.join(workdir, name + ".log")
        self.notes_path = os.path.join(workdir, name + "-notifications.jsonl")
        self.proc = None

    def start(self, directory):
        # sh -c SCRIPT $0 $1 $2...: $0 notifyd.py, $1 the notes file, then "--" and the command.
        argv = ["dbus-run-session", "--", "sh", "-c",
                '/usr/bin/python3 "$0" "$1" > "$1.ready" & shift; shift; exec "$@"',
                os.path.join(HERE, "notifyd.py"), self.notes_path, "--"] + self.COMMANDS[self.name] + [directory]
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(argv, env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                     start_new_session=True, cwd=self.workdir)
        log.close()

    def text(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def wait_log(self, pattern, timeout=20, start=0):
        """Waits for a log line matching the regular expression; returns the match."""
        rx = re.compile(pattern, re.M)

        def found():
            if self.proc.poll() is not None:
                raise Failure("%s exited (%s); log:\n%s" % (self.name, self.proc.returncode, self.text()[-3000:]))
            return rx.search(self.text(), start)
        return wait_until("%s to log /%s/" % (self.name, pattern), found, timeout)

    def notifications(self):
        import json
        try:
            with open(self.notes_path) as f:
                return [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []

    def stop(self):
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)   # what is left of the group
        except ProcessLookupError:
            pass
        if self.proc.returncode is None:
            self.proc.wait()
        self.proc = None


# -- the screen -------------------------------------------------------------------------

class Shot(object):
    """A screenshot: the PNG (kept as an artifact) and its pixels."""

    def __init__(self, png, width, height, rgb):
        self.png = png
        self.width = width
        self.height = height
        self.rgb = rgb

    def pixel(self, x, y):
        i = (y * self.width + x) * 3
        return tuple(self.rgb[i:i + 3])

    def blobs(self, colour, min_area=12):
        """Connected groups (8-neighbour) of pixels exactly of `colour` with at least
        `min_area` pixels: [(x0, y0, x1, y1, area)], top to bottom, then left to right."""
        needle = bytes(colour)
        points = set()
        start = 0
        while True:
            i = self.rgb.find(needle, start)
            if i < 0:
                break
            if i % 3 == 0:
                points.add(divmod(i // 3, self.width))   # (y, x)
                start = i + 3
            else:
                start = i + 1
        out = []
        while points:
            seed = points.pop()
            stack, group = [seed], [seed]
            while stack:
                y, x = stack.pop()
                for dy in (-1, 0, 1):
                    for dx in (-1, 0, 1):
                        p = (y + dy, x + dx)
                        if p in points:
                            points.remove(p)
                            stack.append(p)
                            group.append(p)
            if len(group) >= min_area:
                ys = [p[0] for p in group]
                xs = [p[1] for p in group]
                out.append((min(xs), min(ys), max(xs), max(ys), len(group)))
        out.sort(key=lambda b: (b[1], b[0]))
        return out


def emblems(shot, colours, min_area=40):
    """The emblems on a screenshot: [(state, x, y)] (their centres) in reading order: rows
    (centres within 20 px of each other) top to bottom, then left to right. A blob inside
    another one's box (the white glyph leaves islands of the fill colour) is not counted."""
    found = []
    for state, colour in colours.items():
        # A state may be drawn in one of several colours (a list), one per emblem.
        variants = colour if isinstance(colour, list) else [colour]
        blobs = [b for c in variants for b in shot.blobs(c, min_area)]
        for b in blobs:
            if any(o is not b and o[0] <= b[0] and o[1] <= b[1] and o[2] >= b[2] and o[3] >= b[3] for o in blobs):
                continue
            # Emblems are round: a long run of the colour is something else (the edge of
            # Nautilus 48's grey file icon on a focused tile is the dimmed "ignored" grey).
            w, h = b[2] - b[0] + 1, b[3] - b[1] + 1
            if w > 2 * h or h > 2 * w:
                continue
            found.append((state, (b[0] + b[2]) // 2, (b[1] + b[3]) // 2))
    found.sort(key=lambda e: e[2])
    rows, out = [], []
    for e in found:
        if rows and abs(e[2] - rows[-1][0][2]) < 20:
            rows[-1].append(e)
        else:
            rows.append([e])
    for row in rows:
        out += sorted(row, key=lambda e: e[1])
    return out


def grid_cells(found, near=20):
    """The cell of each emblem of `found` (emblems()) on the grid they lie on, in reading order,
    counted from the column of the leftmost and the row of the topmost: an icon view's rows of
    equal columns, or a list's one column. A file without its emblem between two with theirs
    shows as a cell skipped (the states alone cannot tell: three missing in a row of states
    that repeat every three read the same)."""
    def axis(values):
        starts = []
        for v in sorted(values):
            if not starts or v - starts[-1] >= near:
                starts.append(v)
        return starts[0], min((b - a for a, b in zip(starts, starts[1:])), default=None)
    x0, dx = axis([x for _, x, _ in found])
    y0, dy = axis([y for _, _, y in found])
    col = [round((x - x0) / dx) if dx else 0 for _, x, _ in found]
    row = [round((y - y0) / dy) if dy else 0 for _, _, y in found]
    columns = max(col) + 1
    return [r * columns + c for r, c in zip(row, col)]


def changed_pixels(a, b, step=5):
    """How many of every `step`-th pixel differ between two screenshots of one size."""
    n = 0
    ra, rb = a.rgb, b.rgb
    for i in range(0, min(len(ra), len(rb)) - 2, 3 * step):
        if ra[i:i + 3] != rb[i:i + 3]:
            n += 1
    return n * step


def screenshot(path):
    """The whole X screen (DISPLAY) with `import -window root`, saved to `path`."""
    subprocess.run(["import", "-window", "root", path], check=True, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=20)
    return load(path)


def load(path):
    """The pixels of a PNG (ImageMagick's convert to PPM)."""
    ppm = subprocess.run(["convert", path, "-depth", "8", "ppm:-"], check=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=20).stdout
    m = re.match(rb"P6\s+(\d+)\s+(\d+)\s+255\s", ppm)
    width, height = int(m.group(1)), int(m.group(2))
    return Shot(path, width, height, ppm[m.end():])


def xdotool(*args):
    subprocess.run(["xdotool"] + [str(a) for a in args], check=True, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=10)


def window_titles():
    """The titles of the screen's visible windows (none where xdotool found none, or took over
    10 s)."""
    try:
        r = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", ".", "getwindowname", "%@"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           universal_newlines=True, timeout=10)
    except subprocess.TimeoutExpired:
        return []
    return r.stdout.splitlines()


def right_click(x, y):
    xdotool("mousemove", x, y)
    xdotool("click", 3)


def left_click(x, y):
    xdotool("mousemove", x, y)
    xdotool("click", 1)

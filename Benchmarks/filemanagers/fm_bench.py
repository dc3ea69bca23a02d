#!/usr/bin/python3
"""make bench-fm: file managers under Xvfb with SyncBadge's extension, Nextcloud's and none,
in the same run (README.md here says what each figure is and how it is measured).

    xvfb-run -a -s '-screen 0 1280x800x24' /usr/bin/python3 Benchmarks/filemanagers/fm_bench.py \
        [--quick] [--fm nautilus,nemo,caja,dolphin] [--sides syncbadge,nextcloud,none] [--runs N] \
        [--out DIR] [--plot PNG]
    fm_bench.py --merge OUT1/fm-latest.json OUT2/fm-latest.json [--out DIR] [--plot PNG]

Environment: SYNCBADGED (the daemon; default .build/release/syncbadged, else .build/debug),
NEXTCLOUD_EXT (the .debs' tree from make bench-fm-deps).
"""

import argparse
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "Clients", "python"))
sys.path.insert(0, HERE)

import gi  # noqa: E402
gi.require_version("Gdk", "3.0")
from gi.repository import Gdk  # noqa: E402

import syncbadge as sb  # noqa: E402
from syncbadge.testing import percentile  # noqa: E402
import gtkfm  # noqa: E402
import dolphinfm  # noqa: E402
import perfsplit  # noqa: E402

# The module of each file manager (README.md: "A file manager module"); gtkfm the rest.
MODULES = {"dolphin": dolphinfm}


def fm_module(fm):
    return MODULES.get(fm, gtkfm)

# The emblems' fill colours as drawn (Badges/*.svg; the tests' fmsession.BADGE_COLOURS).
GREEN = bytes((0x2e, 0x9e, 0x44))     # synced
BLUE = bytes((0x15, 0x91, 0xb0))      # syncing
RED = bytes((0xd3, 0x2f, 0x2f))       # error
PENDING = bytes((0xe0, 0x9b, 0x00))   # pending
STATE_COLOUR = {"synced": GREEN, "syncing": BLUE, "error": RED}
CLK = os.sysconf("SC_CLK_TCK")


def log(msg):
    sys.stderr.write("[%s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


# -- the screen ---------------------------------------------------------------------------

class Screen(object):
    """The X screen through GDK (a 1280x800 grab takes about 8 ms on Xvfb, a 64x64 one 0.7 ms)."""

    def __init__(self):
        self.root = Gdk.get_default_root_window()
        self.width = self.root.get_width()
        self.height = self.root.get_height()

    def grab(self, x=0, y=0, w=None, h=None):
        pb = Gdk.pixbuf_get_from_window(self.root, x, y, w or self.width, h or self.height)
        return pb.get_pixels() if pb is not None else b""

    def save(self, path):
        pb = Gdk.pixbuf_get_from_window(self.root, 0, 0, self.width, self.height)
        pb.savev(path, "png", [], [])

    def emblem_box(self, frame, colour):
        """(x, y, w, h): the 56x48 box around the first emblem of `colour` in `frame` (the
        first file's, f00000.txt, in every view the bench opens), or None when none shows.
        The box starts a little left of and above the emblem's first pixel in reading order,
        so that it holds the whole emblem and nothing of the next file's."""
        at = first_pixel(frame, colour, self.width)
        if at is None:
            return None
        x, y = max(0, at[0] - 24), max(0, at[1] - 4)
        return x, y, min(56, self.width - x), min(48, self.height - y)


def first_pixel(frame, colour, width):
    """(x, y) of the first pixel of `colour` in reading order, or None."""
    i = 0
    while True:
        i = frame.find(colour, i)
        if i < 0:
            return None
        if i % 3 == 0:
            return (i // 3) % width, (i // 3) // width
        i += 1


# -- /proc ----------------------------------------------------------------------------------

def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def context_switches(pid):
    """{thread id: its context switches, voluntary and not}."""
    out = {}
    for task in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, task)) as f:
                out[task] = sum(int(line.split()[1]) for line in f
                                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")))
        except OSError:
            pass
    return out


def switches_between(before, after):
    """The context switches of the threads alive at both readings (one that ended meanwhile
    would count negative)."""
    return sum(after[t] - before[t] for t in after if t in before)


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[:3]


# -- the daemon, socket-activated -------------------------------------------------------------

class Activator(object):
    """systemd's socket activation, played by a thread: the socket stays bound; whenever a
    client connects and no daemon runs, syncbadged starts with it as fd 3 (LISTEN_FDS=1,
    LISTEN_PID its own). So a killed daemon comes back when a client reconnects, as under
    systemd (systemd-socket-activate execs once and is gone)."""

    def __init__(self, binary, work):
        self.binary = binary
        self.socket = os.path.join(work, "run", "daemon.sock")
        self.state = os.path.join(work, "state")
        self.log_path = os.path.join(work, "syncbadged.log")
        os.makedirs(os.path.dirname(self.socket), mode=0o700)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.socket)
        self.listener.listen(64)
        self.proc = None
        self.stopping = False
        self.starts = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        import select
        while not self.stopping:
            proc = self.proc
            if proc is not None and proc.poll() is None:
                try:
                    proc.wait(0.2)
                except subprocess.TimeoutExpired:
                    pass
                continue
            r, _, _ = select.select([self.listener], [], [], 0.2)
            if r and not self.stopping:
                self._spawn()

    def _spawn(self):
        fd = self.listener.fileno()
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                ["sh", "-c", 'LISTEN_PID=$$ LISTEN_FDS=1 exec "$@"', "sh", self.binary, "--socket", self.socket,
                 "--state-dir", self.state, "--badges", os.path.join(REPO, "Badges"), "--log-level", "info"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True,
                pass_fds=(3,), preexec_fn=lambda: os.dup2(fd, 3))
        self.starts += 1

    def kill(self):
        proc = self.proc
        if proc is not None:
            proc.kill()
            proc.wait()

    def stop(self):
        self.stopping = True
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.listener.close()


# -- the bench ----------------------------------------------------------------------------------

def make_files(directory, n, prefix="f"):
    os.makedirs(directory)
    for i in range(n):
        with open(os.path.join(directory, "%s%05d.txt" % (prefix, i)), "wb"):
            pass


def gaps_ms(ticks, t0, t1):
    """The gaps between heartbeat stamps that end within [t0, t1], in ms."""
    return [(b - a) * 1000 for a, b in zip(ticks, ticks[1:]) if t0 <= b <= t1 + 0.5]


class Bench(object):
    def __init__(self, args):
        self.args = args
        self.quick = args.quick
        self.runs = args.runs or (1 if self.quick else 3)
        self.work = os.path.realpath(tempfile.mkdtemp(prefix="sbfm."))
        self.rows = []          # {fm, side, size, view, figure, value, spread, unit, n}
        self.samples = {}       # (fm, side, size, view, figure) -> [values]
        self.timelines = {}     # (fm, side) -> [(t since SET, gap ms)] of the 20,000 flip in icon view
        self.screen = Screen()
        self.standin = None
        self.loads = []
        self.stale = 0
        self.phases = []        # (fm, side, size, view, phase), pid, t0, t1: the windows --perf splits
        self.perf = None
        self.perf_split = None

    # -- set-up -----------------------------------------------------------------------

    def setup(self):
        binary = os.environ.get("SYNCBADGED") or next(
            (p for p in (os.path.join(REPO, ".build", "release", "syncbadged"),
                         os.path.join(REPO, ".build", "debug", "syncbadged")) if os.access(p, os.X_OK)), None)
        if binary is None:
            raise SystemExit("no syncbadged (make release, or set SYNCBADGED)")
        self.binary = binary
        for module in {fm_module(fm) for fm in self.args.fm}:
            module.check_clean([fm for fm in self.args.fm if fm_module(fm) is module])
        root = self.root = os.path.join(self.work, "Sync")
        self.folders = {}
        for size in self.sizes():
            if size == "root100k":
                tree = os.path.join(root, "tree")
                dirs = 100 if self.quick else 1000
                for d in range(dirs):
                    make_files(os.path.join(tree, "d%04d" % d), 100)
                self.folders[size] = (os.path.join(tree, "d%04d" % (dirs // 2)), tree, dirs * 100)
            else:
                n = int(size)
                make_files(os.path.join(root, "f%d" % n), n)
                self.folders[size] = (os.path.join(root, "f%d" % n), os.path.join(root, "f%d" % n), n)
        self.daemon = Activator(binary, self.work)
        admin = sb.Connection(path=self.daemon.socket, role="admin", name="bench-admin").open(30)
        t = time.monotonic()
        admin.request("ADD-ROOT", root, timeout=300)
        log("ADD-ROOT of %s: %.1f s (%s)" % (root, time.monotonic() - t, binary))
        admin.close()
        self.engine = self.connect_engine()
        self.set_all("synced")
        self.sides = {}
        for name in self.args.sides:
            for module in {fm_module(fm) for fm in self.args.fm}:
                if name in module.SIDES + getattr(module, "EXTRA_SIDES", ()):
                    self.sides[(module, name)] = module.Side(name, self.work, self.args.nextcloud_ext)
        if "nextcloud" in self.args.sides:
            self.runtime = os.path.join(self.work, "runtime")
            os.makedirs(self.runtime, mode=0o700)
            self.standin_log = open(os.path.join(self.work, "standin.log"), "ab")
            self.standin = subprocess.Popen(
                [sys.executable, os.path.join(HERE, "nextcloud_standin.py"), "--socket",
                 os.path.join(self.runtime, "Nextcloud", "socket"), "--daemon-socket", self.daemon.socket,
                 "--root", root], stdin=subprocess.DEVNULL, stdout=self.standin_log, stderr=self.standin_log,
                start_new_session=True)
            sock = os.path.join(self.runtime, "Nextcloud", "socket")
            deadline = time.monotonic() + 30
            while not os.path.exists(sock):
                if time.monotonic() > deadline or self.standin.poll() is not None:
                    raise SystemExit("the Nextcloud stand-in did not start (%s/standin.log)" % self.work)
                time.sleep(0.05)
        else:
            self.runtime = os.path.join(self.work, "runtime")
            os.makedirs(self.runtime, mode=0o700)

    def connect_engine(self):
        engine = sb.Connection(path=self.daemon.socket, role="provider", name="bench-engine").open(30)
        engine.request("CLAIM", self.root, timeout=30)
        return engine

    def sizes(self):
        return self.args.sizes

    def set_all(self, state, path=None):
        self.engine.request("SET", state, path or self.root, recursive=1, timeout=300)

    def teardown(self):
        if self.standin is not None:
            self.standin.terminate()
            self.standin.wait(10)
        try:
            self.engine.close()
        except Exception:
            pass
        self.daemon.stop()
        if not self.args.keep:
            shutil.rmtree(self.work, ignore_errors=True)
        else:
            log("kept %s" % self.work)

    # -- figures --------------------------------------------------------------------------

    def record(self, key, value):
        self.samples.setdefault(key, []).append(value)

    def settle(self, pid, want=None, stable=1.0, timeout=120, give_up=5.0):
        """Grabs the screen until it has not changed for `stable` s while the process used less
        than 5 % of a CPU, with want(frame) true; returns (time of the first frame of that
        stable run, the frame, True). Still and idle for `give_up` s without want(frame): the
        same with False (emblems left wrong: the screenshot is kept as stale-N.png)."""
        deadline = time.monotonic() + timeout
        last, first_t, cpu_at, idle_since = None, None, None, None
        while True:
            now = time.monotonic()
            frame = self.screen.grab()
            cpu = cpu_seconds(pid)
            if frame != last:
                last, first_t, cpu_at, idle_since = frame, now, (now, cpu), None
            elif now - cpu_at[0] >= stable:
                if cpu - cpu_at[1] <= 0.05 * (now - cpu_at[0]):
                    if want is None or want(frame):
                        return first_t, frame, True
                    idle_since = idle_since or cpu_at[0]
                    if now - idle_since >= give_up:
                        self.stale += 1
                        self.screen.save(os.path.join(self.work, "stale-%d.png" % self.stale))
                        log("the screen is still and idle without the expected emblems: stale-%d.png" % self.stale)
                        return first_t, frame, False
                else:
                    idle_since = None
                cpu_at = (now, cpu)
            if now > deadline:
                raise RuntimeError("the screen did not settle within %gs" % timeout)
            time.sleep(0.03)

    def session(self, fm, side, size, view, run):
        folder, flip_path, count = self.folders[size]
        if (fm_module(fm), side) not in self.sides:
            log("%s has no %s side" % (fm, side))
            return
        env = dict(os.environ, SYNCBADGE_SOCKET=self.daemon.socket, XDG_RUNTIME_DIR=self.runtime,
                   SYNCBADGE_MINIMAL_ROOT=self.root)
        s = fm_module(fm).Session(fm, self.sides[(fm_module(fm), side)], view, folder, self.work, env,
                          "%s-%s-%s-%s-%d" % (fm, side, size, view, run))
        key = lambda figure: (fm, side, size, view, figure)
        emblems = side != "none"
        self.set_all("synced", flip_path)       # whatever an earlier session that failed left
        t0 = time.monotonic()
        s.start()
        try:
            pid = s.find_pid()
            # 1. Open: until the screen is still and, for the sides with emblems, shows them.
            t_open, frame, _ = self.settle(pid, want=(lambda f: GREEN in f or BLUE in f) if emblems else (lambda f: f.count(b"\xff\xff\xff") > 1000),
                                        stable=1.5)
            self.record(key("open s"), t_open - t0)
            self.phases.append((key("open"), pid, t0, t_open))
            if run == 0:
                self.screen.save(os.path.join(s.dir, "open.png"))
            # 2. Idle: context switches of every thread while nothing changes (no probe).
            time.sleep(0.5)
            idle_s = 2.0 if self.quick else 5.0
            c0 = context_switches(pid)
            time.sleep(idle_s)
            self.record(key("idle wake-ups/s"), switches_between(c0, context_switches(pid)) / idle_s)
            # 3. Flips: every file of the folder (the whole tree for root100k) to another state.
            for i, state in enumerate(["syncing", "synced"] if self.quick else ["syncing", "synced", "syncing", "synced"]):
                s.probe_start()
                cpu0 = cpu_seconds(pid)
                t_set = time.monotonic()
                s.tell("ALL " + state)
                self.set_all(state, flip_path)
                colour = STATE_COLOUR[state]
                t_done, frame, right = self.settle(pid, want=(lambda f, c=colour: c in f and
                                                       (GREEN if c == BLUE else BLUE) not in f) if emblems else None,
                                            )
                cpu1 = cpu_seconds(pid)
                t_cpu = time.monotonic()
                ticks = s.probe_stop()
                g = gaps_ms(ticks, t_set, t_done)
                self.record(key("flip longest gap ms"), max(g or [float("nan")]))
                self.record(key("flip p99 gap ms"), percentile(g, 99))
                self.record(key("flip CPU s"), cpu1 - cpu0)
                self.record(key("flip to screen s"), t_done - t_set if right else float("nan"))
                self.record(key("flip emblems right"), 1.0 if right else 0.0)
                # Until CPU was read, as `flip CPU s` is (the screen's still second included).
                self.phases.append((key("flip"), pid, t_set, t_cpu))
                if size == "20000" and view == "icon" and i == 0 and run == 0:
                    self.timelines[(fm, side)] = [(b - t_set, (b - a) * 1000) for a, b in zip(ticks, ticks[1:])
                                                  if b >= t_set - 0.2]
            if view != "icon" or size == "root100k":
                return
            if size == "20000":
                # 4. Change to screen: the first file's emblem, SET error then synced, 100 times.
                if emblems:
                    self.change_to_screen(s, pid, key, folder)
                # 5. Trickle: one file every 10 ms.
                self.trickle(s, pid, key, folder, count)
            # 6. Recovery: the daemon killed; socket activation starts it when the extension
            # reconnects. Until the screen is as it was. Then the changes the file manager
            # hears of only from the file system: a file replaced by rename, the folder renamed
            # and back, moved out of the root and back.
            if side == "syncbadge":
                self.recovery(s, pid, key, folder)
                self.renames(s, pid, key, folder)
        finally:
            self.loads.append(loadavg())
            s.stop()

    def change_to_screen(self, s, pid, key, folder):
        box = self.screen.emblem_box(self.screen.grab(), GREEN)
        if box is None:
            log("%s: no emblem found for change-to-screen" % s.dir)
            return
        x, y, w, h = box
        path = os.path.join(folder, "f00000.txt")
        times = []
        n = 20 if self.quick else 100
        misses = 0
        for i in range(n):
            if misses >= 3:      # in all: a stale emblem makes every other change miss
                # Emblems left wrong (the old one beside the new): no use waiting for each.
                times.append(float("nan"))
                continue
            state = "error" if i % 2 == 0 else "synced"
            want, gone = (RED, GREEN) if state == "error" else (GREEN, RED)
            t = time.monotonic()
            s.tell("%s %s" % (state, path))
            self.engine.request("SET", state, path, timeout=30)
            deadline = t + 5
            while True:
                region = self.screen.grab(x, y, w, h)
                if region.count(want) > 20 and gone not in region:
                    times.append((time.monotonic() - t) * 1000)
                    break
                if time.monotonic() > deadline:
                    times.append(float("nan"))
                    misses += 1
                    log("%s: %s never showed alone on f00000.txt" % (s.dir, state))
                    if misses == 1:
                        self.screen.save(os.path.join(s.dir, "change-missed.png"))
                    break
                time.sleep(0.001)
        ok = [v for v in times if v == v]
        self.record(key("change to screen p50 ms"), percentile(ok, 50) if len(ok) == len(times) else float("nan"))
        self.record(key("change to screen p99 ms"), percentile(ok, 99) if len(ok) == len(times) else float("nan"))
        self.record(key("change to screen right"), len(ok) / len(times))

    def trickle(self, s, pid, key, folder, count):
        seconds = 5.0 if self.quick else 30.0
        s.probe_start()
        t0 = time.monotonic()
        i = 0
        replies = []
        while True:
            due = t0 + i * 0.010
            now = time.monotonic()
            if now - t0 >= seconds:
                break
            if due > now:
                time.sleep(due - now)
            state = "syncing" if (i // count) % 2 == 0 else "synced"
            s.tell("%s %s" % (state, os.path.join(folder, "f%05d.txt" % (i % count))))
            replies.append(self.engine.send("SET", state, os.path.join(folder, "f%05d.txt" % (i % count))))
            i += 1
        t1 = time.monotonic()
        for r in replies:
            r.wait(30)
        time.sleep(0.2)
        ticks = s.probe_stop()
        g = gaps_ms(ticks, t0, t1)
        self.record(key("trickle longest gap ms"), max(g or [float("nan")]))
        self.record(key("trickle p99 gap ms"), percentile(g, 99))
        s.tell("ALL synced")
        self.set_all("synced", folder)
        self.settle(pid)

    def recovery(self, s, pid, key, folder):
        """The daemon killed; socket activation starts it again when the extension reconnects.
        f00000.txt is written to while the daemon is down, so the new daemon's rescan makes it
        `pending`: the screen is right only once the extension has the new daemon's states, not
        merely while it still shows the old ones (the GTK extension keeps them for its hold).
        From the kill until the extension has logged its new connection (its `connected to`
        line, which it writes without SYNCBADGE_DEBUG), f00000.txt's emblem is `pending` (the
        56×48 box around it, as change to screen reads), and the screen shows at least 95 % of
        the other emblem pixels it showed before."""
        before = self.settle(pid)[1]
        box = self.screen.emblem_box(before, GREEN)
        if box is None:
            log("%s: no emblems before the recovery" % s.dir)
            return
        x, y, w, h = box
        others = before.count(GREEN) - self.screen.grab(x, y, w, h).count(GREEN)
        connects = s.log().count("syncbadge: connected to ")
        t0 = time.monotonic()
        self.daemon.kill()
        with open(os.path.join(folder, "f00000.txt"), "ab") as f:
            f.write(b"edited while the daemon was down\n")
        deadline = t0 + 30
        least = before.count(GREEN)
        while time.monotonic() < deadline:
            frame = self.screen.grab()
            least = min(least, frame.count(GREEN))
            region = self.screen.grab(x, y, w, h)
            if (s.log().count("syncbadge: connected to ") > connects
                    and region.count(PENDING) > 20 and GREEN not in region
                    and frame.count(GREEN) >= 0.95 * others):
                self.record(key("recovery s"), time.monotonic() - t0)
                log("%s: recovered; the emblem pixels went down to %d%% meanwhile"
                    % (s.dir, 100 * least // max(1, before.count(GREEN))))
                break
            time.sleep(0.01)
        else:
            self.record(key("recovery s"), float("nan"))
            self.screen.save(os.path.join(s.dir, "recovery-failed.png"))
            log("%s: the emblems did not come back within 30 s" % s.dir)
        try:
            self.engine.close()
        except Exception:
            pass
        self.engine = self.connect_engine()

    def renames(self, s, pid, key, folder):
        """After the recovery, every file synced. (1) f00000.txt saved as editors save (a hidden
        new file renamed over it): from the rename until its emblem is the daemon's `pending`
        alone. (2) The folder renamed and back, (3) moved out of the root and back: the file
        manager leaves a folder that goes from under it (Nautilus, Nemo and Caja for its parent;
        Dolphin is told to go up), the bench opens it again once it is back and shown there with
        its `pending` emblem (Session.open_folder: a double-click on its icon), and times from
        then until the screen is still with every emblem the daemon's `pending` (settle(), as the
        flips). Where the folder never shows again in its parent, or the emblems stay wrong, the
        figure is `failed` and a screenshot is kept."""
        if not s.can_open_folder():
            log("%s: no folder-opening for %s: the rename figures are not measured" % (s.dir, s.fm))
            return
        self.set_all("synced", folder)
        self.settle(pid, want=lambda f: GREEN in f and PENDING not in f)
        # (1) Replace by rename, the emblem of f00000.txt only (the region change_to_screen reads).
        box = self.screen.emblem_box(self.screen.grab(), GREEN)
        if box is not None:
            x, y, w, h = box
            path = os.path.join(folder, "f00000.txt")
            tmp = os.path.join(folder, ".goutputstream-f00000.txt")
            with open(tmp, "wb") as f:
                f.write(b"saved by an editor\n")
            t = time.monotonic()
            os.rename(tmp, path)
            while True:
                region = self.screen.grab(x, y, w, h)
                if region.count(PENDING) > 20 and GREEN not in region:
                    self.record(key("replace by rename to screen s"), time.monotonic() - t)
                    break
                if time.monotonic() > t + 10:
                    self.record(key("replace by rename to screen s"), float("nan"))
                    self.screen.save(os.path.join(s.dir, "replace-failed.png"))
                    log("%s: f00000.txt never showed pending after its replacement" % s.dir)
                    break
                time.sleep(0.002)
        # (2), (3) Away and back.
        for figure, elsewhere in (("rename and back: reopened to screen s", folder + "-renamed"),
                                  ("move away and back: reopened to screen s",
                                   os.path.join(self.work, "outside", os.path.basename(folder)))):
            self.set_all("synced", folder)
            shown = self.settle(pid, want=lambda f: GREEN in f and PENDING not in f)[1]
            os.makedirs(os.path.dirname(elsewhere), exist_ok=True)
            os.rename(folder, elsewhere)
            self.settle(pid, want=lambda f: f != shown)     # the file manager saw it go
            s.leave_folder()
            os.rename(elsewhere, folder)
            t_back = time.monotonic()
            at = None
            colours = (PENDING,) + s.pending_tints()
            while time.monotonic() < t_back + 15:
                # Still, so that the click does not land while the folder's name is redrawn.
                _, frame, seen = self.settle(pid, want=lambda f: any(c in f for c in colours))
                found = [p for p in (first_pixel(frame, c, self.screen.width) for c in colours) if p] if seen else []
                at = min(found, key=lambda p: (p[1], p[0])) if found else None
                if at is not None:
                    break
            if at is None:
                self.record(key(figure), float("nan"))
                self.screen.save(os.path.join(s.dir, "away-failed.png"))
                log("%s: %s: the folder never showed pending in its parent" % (s.dir, figure))
                continue
            t_open = time.monotonic()
            cpu0 = cpu_seconds(pid)
            s.open_folder(os.path.basename(folder), at)
            subprocess.run(["xdotool", "mousemove", str(self.screen.width - 1), str(self.screen.height - 1)], check=True)
            t_right, _, right = self.settle(pid, want=lambda f: f.count(PENDING) > 1000 and GREEN not in f)
            self.record(key(figure), t_right - t_open if right else float("nan"))
            # Busy or waiting: the file manager's CPU over the same window.
            self.record(key(figure.replace(" to screen s", ": CPU s")), cpu_seconds(pid) - cpu0)
        self.set_all("synced", folder)

    # -- the run --------------------------------------------------------------------------

    def run(self):
        self.setup()
        try:
            if self.args.perf:
                # Kept before it starts: the finally below stops whatever it started.
                self.perf = perfsplit.Recorder(os.path.join(self.work, "perf.data"))
                self.perf.start()
            for run in range(self.runs):
                for fm in self.args.fm:
                    for size in self.sizes():
                        for view in (["icon"] if size == "root100k" else self.args.views):
                            # The sides in a rotating order, so no side always goes first.
                            sides = list(self.args.sides)
                            k = run % len(sides)
                            for side in sides[k:] + sides[:k]:
                                log("run %d: %s %s %s %s (load %s)" % (run + 1, fm, side, size, view, " ".join(loadavg())))
                                try:
                                    self.session(fm, side, size, view, run)
                                except Exception as ex:
                                    log("FAILED %s %s %s %s: %s" % (fm, side, size, view, ex))
        finally:
            try:
                if self.perf is not None:
                    # Before teardown: perf.data is in the work directory. A perf that does not
                    # stop, or a split that fails, costs the split only: the figures still print.
                    try:
                        if self.perf.stop():
                            self.perf_split = perfsplit.split(self.perf.path, self.phases)
                    except Exception as ex:
                        log("the perf split failed: %r" % (ex,))
            finally:
                self.teardown()
        self.summarise()

    def summarise(self):
        for (fm, side, size, view, figure), values in sorted(self.samples.items()):
            ok = [v for v in values if v == v]
            value = statistics.median(ok) if ok else float("nan")
            spread = (max(ok) - min(ok)) if len(ok) > 1 else 0.0
            self.rows.append(dict(fm=fm, side=side, size=size, view=view, figure=figure, value=value,
                                  spread=spread, n=len(values), failed=len(values) - len(ok)))


def table(rows):
    """The markdown table: one line per (fm, size, view, figure), the three sides, and each
    extension's ratio to the floor; with the `minimal` side, its column and SyncBadge's ratio
    to it too."""
    by = {}
    for r in rows:
        by.setdefault((r["fm"], r["size"], r["view"], r["figure"]), {})[r["side"]] = r
    minimal = any(r["side"] == "minimal" for r in rows)
    out = ["| file manager | folder | view | figure | SyncBadge | Nextcloud | none (floor) | SyncBadge / floor | Nextcloud / floor | SyncBadge / Nextcloud |"
           + (" minimal | minimal / floor | SyncBadge / minimal |" if minimal else ""),
           "|---|---|---|---|---:|---:|---:|---:|---:|---:|" + ("---:|---:|---:|" if minimal else "")]

    def cell(r):
        if r is None:
            return "–"
        v = r["value"]
        if v != v:
            return "failed"
        text = ("%.3g" % v) if abs(v) < 100 else "%.0f" % v
        if r["n"] > 1:
            text += " ±%.2g" % (r["spread"] / 2)
        return text

    def ratio(a, b):
        if a is None or b is None or not (a["value"] == a["value"] and b["value"] == b["value"]) or b["value"] == 0:
            return "–"
        return "%.2f×" % (a["value"] / b["value"])

    for (fm, size, view, figure), sides in sorted(by.items()):
        s, n, f = sides.get("syncbadge"), sides.get("nextcloud"), sides.get("none")
        line = "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            fm, size, view, figure, cell(s), cell(n), cell(f), ratio(s, f), ratio(n, f), ratio(s, n))
        if minimal:
            m = sides.get("minimal")
            line += " %s | %s | %s |" % (cell(m), ratio(m, f), ratio(s, m))
        out.append(line)
    return "\n".join(out)


def plot(timelines, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fms = sorted({fm for fm, _ in timelines})
    fig, axes = plt.subplots(len(fms), 1, figsize=(9, 2.6 * len(fms)), squeeze=False)
    colours = {"syncbadge": "#2e9e44", "nextcloud": "#0082c9", "none": "#888888", "minimal": "#b07aa1"}
    names = {"syncbadge": "SyncBadge", "nextcloud": "Nextcloud", "none": "no extension",
             "minimal": "minimal extension"}
    for ax, fm in zip(axes[:, 0], fms):
        for side in ("nextcloud", "minimal", "syncbadge", "none"):
            points = timelines.get((fm, side))
            if not points:
                continue
            ax.plot([t for t, _ in points], [g for _, g in points], drawstyle="steps-pre", lw=1,
                    color=colours[side], label="%s (longest %.0f ms)" % (names[side], max(g for _, g in points)))
        ax.axhline(16, color="#d32f2f", lw=0.8, ls="--")
        ax.set_yscale("log")
        ax.set_ylabel("heartbeat gap, ms")
        ax.set_title("%s: 20,000 files change state at once (icon view)" % fm.capitalize(), fontsize=10)
        ax.legend(fontsize=8, loc="upper right")
    axes[-1, 0].set_xlabel("seconds since the SET (the dashed line: one frame, 16 ms)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def merge(paths, out, png):
    """Earlier runs' rows and timelines as one run's: the same table, the same plot. A key two
    runs both hold is refused: their medians cannot be merged without their samples' runs."""
    heads, rows, samples, timelines, seen = [], [], [], {}, {}
    for path in paths:
        with open(path) as f:
            run = json.load(f)
        heads.append(run["head"])
        samples += run["samples"]
        for r in run["rows"]:
            k = (r["fm"], r["side"], r["size"], r["view"], r["figure"])
            if k in seen:
                sys.exit("%s and %s both hold %s: merge runs of different file managers or folders"
                         % (seen[k], path, "/".join(map(str, k))))
            seen[k] = path
            rows.append(r)
        for t in run["timelines"]:
            timelines[(t["fm"], t["side"])] = [tuple(p) for p in t["points"]]
    text = table(rows)
    print("\n".join(heads))
    print(text)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "fm-latest.md"), "w") as f:
        f.write("\n".join(heads) + "\n\n" + text + "\n")
    with open(os.path.join(out, "fm-latest.json"), "w") as f:
        # A run's shape, so that a merge can be merged again.
        json.dump({"head": "\n".join(heads), "rows": rows, "samples": samples,
                   "timelines": [dict(fm=fm, side=side, points=p) for (fm, side), p in sorted(timelines.items())]},
                  f, indent=1)
    if timelines:
        png = png or os.path.join(out, "fm-stalls.png")
        plot(timelines, png)
        print("stall timeline: %s" % png)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", default=os.environ.get("QUICK") == "1")
    ap.add_argument("--fm", default="nautilus,nemo,caja,dolphin")
    ap.add_argument("--sides", default=",".join(gtkfm.SIDES))
    ap.add_argument("--sizes", default=None, help="1000,20000,root100k")
    ap.add_argument("--views", default="icon,list")
    ap.add_argument("--runs", type=int, default=0)
    ap.add_argument("--out", default=os.path.join(REPO, "Benchmarks", "results"))
    ap.add_argument("--plot", default=None, help="the stall timeline PNG (default OUT/fm-stalls.png)")
    ap.add_argument("--nextcloud-ext", default=os.environ.get("NEXTCLOUD_EXT", os.path.join(REPO, ".build", "nextcloud-ext")))
    ap.add_argument("--keep", action="store_true", help="keep the work directory (logs, screenshots)")
    ap.add_argument("--perf", action="store_true",
                    help="perf record the run and split each open's and flip's CPU by library (OUT/fm-perf.md)")
    ap.add_argument("--merge", nargs="+", metavar="JSON",
                    help="measure nothing: one table and plot of earlier runs' fm-latest.json (a long matrix run "
                         "one file manager at a time, each with its own --out)")
    args = ap.parse_args()
    if args.merge:
        merge(args.merge, args.out, args.plot)
        return
    if args.perf:
        perfsplit.require()
    args.fm = args.fm.split(",")
    args.sides = args.sides.split(",")
    args.views = args.views.split(",")
    modules = {fm_module(fm) for fm in args.fm}
    unknown = [n for n in args.sides if not any(n in m.SIDES + getattr(m, "EXTRA_SIDES", ()) for m in modules)]
    if unknown:
        ap.error("no such side for %s: %s" % (", ".join(args.fm), ", ".join(unknown)))
    args.sizes = (args.sizes or ("20000,root100k" if args.quick else "1000,20000,root100k")).split(",")
    if args.quick and args.views == ["icon", "list"] and not os.environ.get("BENCH_FM_VIEWS"):
        args.views = ["icon"]
    # SIGTERM (make interrupted, a timeout) ends the run through teardown(), which stops what it started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    bench = Bench(args)
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    load0 = loadavg()
    bench.run()
    os.makedirs(args.out, exist_ok=True)
    head = ("make bench-fm%s, %s, %s, %d CPUs, load average at start %s, per session %s; daemon %s; %d run(s)"
            % (" QUICK=1" if args.quick else "", started, platform.node(), os.cpu_count(), " ".join(load0),
               "/".join(l[0] for l in bench.loads), bench.binary, bench.runs))
    text = table(bench.rows)
    print(head)
    print(text)
    with open(os.path.join(args.out, "fm-latest.md"), "w") as f:
        f.write(head + "\n\n" + text + "\n")
    if bench.perf_split is not None:
        split = perfsplit.table(bench.perf_split)
        print("\nWhere the file manager's CPU went (perf, by library):\n" + split)
        with open(os.path.join(args.out, "fm-perf.md"), "w") as f:
            f.write(head + "\n\n" + split + "\n")
        with open(os.path.join(args.out, "fm-perf.json"), "w") as f:
            # The windows too (pid, monotonic start and end), to read the kept perf.data again.
            json.dump({"phases": [dict(key=list(k), **v) for k, v in sorted(bench.perf_split.items())],
                       "windows": [dict(key=list(k), pid=pid, t0=t0, t1=t1) for k, pid, t0, t1 in bench.phases]},
                      f, indent=1)
    with open(os.path.join(args.out, "fm-latest.json"), "w") as f:
        json.dump({"head": head, "rows": bench.rows, "samples": [dict(zip(("fm", "side", "size", "view", "figure"), k), values=v)
                                                                   for k, v in sorted(bench.samples.items())],
                   "timelines": [dict(fm=fm, side=side, points=p) for (fm, side), p in sorted(bench.timelines.items())]},
                  f, indent=1)
    if bench.timelines:
        png = args.plot or os.path.join(args.out, "fm-stalls.png")
        plot(bench.timelines, png)
        print("stall timeline: %s" % png)


if __name__ == "__main__":
    main()

"""The rclone adapter's figures for `make bench` (bench.py's `rclone` and `rclone-queue`).

`rclone`: Debian's rclone (1.60.1) mounting a local directory over FUSE (`--vfs-cache-mode writes
--vfs-write-back 1s`, no bandwidth limit), syncbadged and syncbadge-rclone from the run's
binaries, N files of 1,000 bytes written through the mount one after the other. The adapter's CPU
(user + system, /proc/PID/stat) from the first write until every file's `synced` was pushed,
against rclone's own CPU over the same span; the adapter's RSS then, against rclone's; the time
from rclone finishing each upload (core/transferred's `completed_at`, wall clock: it keeps the
last 100 transfers) to the daemon's push of `synced` to a viewer; and the adapter's CPU and the
rc calls rclone logged in the 5 s after, when nothing is left to upload.

`rclone-queue`: the adapter's rclone 1.68 path (`vfs/queue`), which Debian cannot run: the rc is
Tests/RcloneAdapterTests/Fixtures/rc-standin.py replaying the JSON rclone documents for 1.68,
beside a real 1.60 mount whose cache metadata the adapter reads. Per file: the stand-in lists it
uploading (the adapter pushes `syncing`), the real rclone uploads it (its cache metadata clean),
then the stand-in's queue empties and core/transferred lists it done; the time from that switch
to the `synced` push. The rclone side of this figure is the stand-in, not rclone 1.68.
"""

import datetime
import json
import os
import shutil
import subprocess
import threading
import time
import urllib.request

from common import BenchError, Daemon, Figure, fmt_bytes, fmt_time, median, now, rss_bytes, settle_rss, wire

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STANDIN = os.path.join(REPO, "Tests", "RcloneAdapterTests", "Fixtures", "rc-standin.py")


def _cpu_ticks(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


def _wall_ns(stamp):
    """rclone's RFC 3339 time with nanoseconds, as Unix nanoseconds."""
    base, frac = stamp.rstrip("Z").split(".")
    t = datetime.datetime.strptime(base, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc).timestamp()
    return int(t) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])


def _rc(addr, call, timeout=15):
    req = urllib.request.Request(f"http://{addr}/{call}", data=b"{}", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def _free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class _Mount:
    """A real `rclone mount` of a local directory in DIR, unmounted by stop()."""

    def __init__(self, ctx, d, debug_log):
        if not shutil.which("rclone") or not shutil.which("fusermount3"):
            raise BenchError("rclone or fuse3 is not installed (apt-get install rclone fuse3)")
        if not os.path.exists("/dev/fuse"):
            raise BenchError("/dev/fuse does not exist here: rclone cannot mount")
        self.ctx = ctx
        self.cloud, self.mnt, self.cache = (os.path.join(d, x) for x in ("cloud", "mnt", "cache"))
        for x in (self.cloud, self.mnt, self.cache):
            os.makedirs(x)
        self.log = os.path.join(d, "rclone.log")
        self.addr = f"127.0.0.1:{_free_port()}"
        self.proc = ctx.spawn(["rclone", "mount", self.cloud, self.mnt, "--vfs-cache-mode", "writes",
                               "--cache-dir", self.cache, "--rc", "--rc-addr", self.addr, "--rc-no-auth",
                               "--vfs-write-back", "1s", "--config", "/dev/null",
                               "--log-level", "DEBUG" if debug_log else "INFO", "--log-file", self.log],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = now() + 20
        while not os.path.ismount(self.mnt):
            if self.proc.poll() is not None or now() > deadline:
                raise BenchError(f"rclone did not mount {self.mnt} (is /dev/fuse usable?); see {self.log}")
            time.sleep(0.05)

    def stop(self):
        self.ctx.stop(self.proc, timeout=10)
        if os.path.ismount(self.mnt):
            subprocess.run(["fusermount3", "-u", "-z", self.mnt], stderr=subprocess.DEVNULL, timeout=10)

    def rc_calls(self):
        with open(self.log, errors="replace") as f:
            return f.read().count(': rc: "')


class _Synced:
    """A viewer's pushes read on a thread of its own: the wall-clock time (ns) each file's first
    `synced` arrived, and the monotonic time of every push by (name, state)."""

    def __init__(self, d, mnt):
        self.conn = d.conn("viewer", "bench-rclone")
        final, _ = self.conn.request("OBSERVE", mnt)
        if not final.ok:
            raise BenchError(f"OBSERVE {mnt}: {final}")
        self.prefix = f"* ITEM {wire(mnt)}/"
        self.wall = {}
        self.mono = {}
        self.lock = threading.Lock()
        self.stopping = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        offset = time.time_ns() - int(now() * 1e9)
        while not self.stopping:
            try:
                if not self.conn.reader.fill(0.2):
                    continue
            except BenchError:
                return
            while self.conn.reader.lines:
                line, t = self.conn.reader.lines.pop(0)
                if not line.startswith(self.prefix):
                    continue
                name, _, rest = line[len(self.prefix):].partition(" ")
                state = rest.split(" ", 1)[0]
                with self.lock:
                    self.mono.setdefault((name, state), t)
                    if state == "synced":
                        self.wall.setdefault(name, offset + int(t * 1e9))

    def wait(self, what, ok, timeout):
        deadline = now() + timeout
        while True:
            with self.lock:
                if ok(self):
                    return
            if now() > deadline:
                raise BenchError(f"{what}: not within {timeout} s")
            time.sleep(0.02)

    def stop(self):
        self.stopping = True
        self.thread.join(2)
        self.conn.close()


def _start_adapter(ctx, d, addr, mnt):
    adapter = os.path.join(ctx.sbbin, "syncbadge-rclone")
    if not os.access(adapter, os.X_OK):
        raise BenchError(f"no {adapter} (make release builds it)")
    proc = d.adapter([adapter, "--rc-addr", addr, "--log-level", "warning", mnt])
    admin = d.conn()
    try:
        d.wait_status(admin, mnt, lambda item: item.arg(1) == "synced", proc, 30, "the mount was never claimed and synced")
    finally:
        admin.close()
    return proc


def _stop(ctx, viewer, adapter, d, standin, m):
    """The end of a figure, whatever happened (each None when it failed before starting it): the
    viewer, the adapter, the daemon, the stand-in rc, then rclone, which unmounts."""
    if viewer:
        viewer.stop()
    if adapter:
        ctx.stop(adapter)
    if d:
        d.stop()
    if standin:
        ctx.stop(standin)
    if m:
        m.stop()


def fig_rclone(ctx, only):
    n = 200 if ctx.quick else 1000
    d = proc = m = viewer = None
    try:
        m = _Mount(ctx, ctx.tmpdir("rclone"), debug_log=True)
        d = Daemon(ctx, "rcloned")
        proc = _start_adapter(ctx, d, m.addr, m.mnt)
        viewer = _Synced(d, m.mnt)
        names = ["f%05d.txt" % i for i in range(n)]
        a0, r0 = _cpu_ticks(proc.pid), _cpu_ticks(m.proc.pid)
        t0 = now()
        for name in names:
            with open(os.path.join(m.mnt, name), "w") as f:
                f.write("x" * 1000)
        viewer.wait(f"{n} files synced", lambda v: all(x in v.wall for x in names), 600)
        t1 = now()
        a1, r1 = _cpu_ticks(proc.pid), _cpu_ticks(m.proc.pid)
        rss_adapter, rss_rclone = settle_rss(proc.pid), rss_bytes(m.proc.pid)
        done = _rc(m.addr, "core/transferred")["transferred"]
        lat = [(viewer.wall[t["name"]] - _wall_ns(t["completed_at"])) / 1e9 for t in done
               if t["name"] in viewer.wall and not t["error"] and t["size"] == 1000]
        if not lat:
            raise BenchError("core/transferred named none of the files")
        calls = m.rc_calls()
        i0 = _cpu_ticks(proc.pid)
        time.sleep(5)
        idle_ticks, idle_calls = _cpu_ticks(proc.pid) - i0, m.rc_calls() - calls
    except (OSError, ValueError, KeyError, subprocess.SubprocessError) as e:
        raise BenchError(f"rclone set-up or run: {e!r}")
    finally:
        _stop(ctx, viewer, proc, d, None, m)
    hz = os.sysconf("SC_CLK_TCK")
    cpu_a, cpu_r = (a1 - a0) / hz * 1000 / n, (r1 - r0) / hz * 1000 / n
    lm, lx = median(lat), max(lat)
    return [
        Figure(f"rclone 1.60: adapter CPU per 1,000 files uploaded ({n:,} files of 1,000 B)", fmt_time(cpu_a),
               f"rclone itself {fmt_time(cpu_r)}", cpu_a / cpu_r if cpu_r else None, "reference", None,
               note=f"{n:,} files written and synced in {t1 - t0:.1f} s; {calls} rc calls for them"),
        Figure("rclone 1.60: adapter RSS after the uploads", fmt_bytes(rss_adapter), f"rclone {fmt_bytes(rss_rclone)}",
               rss_adapter / rss_rclone, "reference", None),
        Figure(f"rclone 1.60: upload finished (core/transferred) → synced pushed, median (last {len(lat)} files)",
               fmt_time(lm), f"max {fmt_time(lx)}", None, "≤ 1 s (max)", lx <= 1.0,
               note=f"per file from {min(lat) * 1e3:.0f} to {lx * 1e3:.0f} ms; busy poll every 250 ms"),
        Figure("rclone 1.60: adapter idle 5 s after the last synced", f"{idle_ticks / hz:.2f} s CPU, {idle_calls} rc calls",
               "—", None, "0 calls", idle_calls == 0),
    ]


def fig_rclone_queue(ctx, only):
    n = 5 if ctx.quick else 20
    d = proc = m = viewer = standin = None
    try:
        base = ctx.tmpdir("rcq")
        m = _Mount(ctx, base, debug_log=False)
        disk = _rc(m.addr, "vfs/stats")["diskCache"]
        data_root, meta_root = disk["path"], disk["pathMeta"]
        names = ["q%02d.txt" % i for i in range(n)]

        def stats(queued, in_progress):
            return {"fs": "bench:", "diskCache": {"path": data_root, "pathMeta": meta_root, "uploadsQueued": queued,
                                                   "uploadsInProgress": in_progress, "erroredFiles": 0}}
        states = {"idle": {"vfs/stats": stats(0, 0), "vfs/queue": {"queue": []}, "core/stats": {},
                           "core/transferred": {"transferred": []}}}
        for i, name in enumerate(names):
            states[f"u{i}"] = {
                "vfs/stats": stats(0, 1),
                "vfs/queue": {"queue": [{"name": name, "id": 100 + i, "size": 1000, "expiry": -1, "tries": 0,
                                         "delay": 5.0, "uploading": True}]},
                "core/stats": {"transferring": [{"name": name, "size": 1000, "bytes": 500, "percentage": 50}]},
                "core/transferred": {"transferred": []}}
            states[f"d{i}"] = {
                "vfs/stats": stats(0, 0), "vfs/queue": {"queue": []}, "core/stats": {},
                "core/transferred": {"transferred": [{"name": name, "size": 1000, "bytes": 1000, "error": "",
                                                      "completed_at": "2026-11-27T19:34:02.42362597Z"}]}}
        script, state_file = os.path.join(base, "standin.json"), os.path.join(base, "standin.state")
        port_file, call_log = os.path.join(base, "standin.port"), os.path.join(base, "standin.log")
        with open(script, "w") as f:
            json.dump({"states": states}, f)

        def switch(state):
            with open(state_file + ".tmp", "w") as f:
                f.write(state)
            os.rename(state_file + ".tmp", state_file)
        switch("idle")
        standin = ctx.spawn(["/usr/bin/python3", STANDIN, script, state_file, port_file, call_log],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = now() + 10
        while not os.path.exists(port_file):
            if standin.poll() is not None or now() > deadline:
                raise BenchError("the stand-in rc did not start")
            time.sleep(0.02)
        addr = "127.0.0.1:" + open(port_file).read().strip()
        d = Daemon(ctx, "rcqd")
        proc = _start_adapter(ctx, d, addr, m.mnt)
        with open(os.path.join(d.dir, "adapter.log")) as f:
            if "vfs/queue" not in f.read() and not any('"vfs/queue"' in line for line in open(call_log)):
                raise BenchError("the adapter never asked vfs/queue")
        viewer = _Synced(d, m.mnt)
        lat = []
        for i, name in enumerate(names):
            switch(f"u{i}")
            with open(os.path.join(m.mnt, name), "w") as f:
                f.write("y" * 1000)
            viewer.wait(f"{name} syncing", lambda v: (name, "syncing") in v.mono, 30)
            meta = os.path.join(meta_root, name)
            deadline = now() + 30
            while '"Dirty": false' not in (open(meta).read() if os.path.exists(meta) else ""):
                if now() > deadline:
                    raise BenchError(f"rclone never uploaded {name}; see {m.log}")
                time.sleep(0.05)
            t0 = now()
            switch(f"d{i}")
            viewer.wait(f"{name} synced", lambda v: (name, "synced") in v.mono, 30)
            lat.append(viewer.mono[(name, "synced")] - t0)
    except (OSError, ValueError, KeyError, subprocess.SubprocessError) as e:
        raise BenchError(f"rclone-queue set-up or run: {e!r}")
    finally:
        _stop(ctx, viewer, proc, d, standin, m)
    lm, lx = median(lat), max(lat)
    return [
        Figure(f"rclone 1.68 path, stand-in rc: vfs/queue emptied → synced pushed, median ({n} files)",
               fmt_time(lm), f"max {fmt_time(lx)}", None, "≤ 200 ms (max)", lx <= 0.2,
               note=f"per file from {min(lat) * 1e3:.0f} to {lx * 1e3:.0f} ms; the rc is rc-standin.py "
                    "replaying rclone 1.68's documented JSON (Debian has no 1.68), the mount a real rclone 1.60"),
    ]

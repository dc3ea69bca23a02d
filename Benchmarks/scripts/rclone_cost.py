#!/usr/bin/python3
"""The rclone adapter's cost, by hand (docs/PERFORMANCE.md, "syncbadge-rclone"): a real
`rclone mount` of a local directory, syncbadged and syncbadge-rclone from BIN; N small files
written through the mount. Says the adapter's CPU time per 1,000 files uploaded, its RSS, the
time from rclone finishing each upload (core/transferred's completed_at) to the daemon's push of
`synced`, and the adapter's CPU and rclone's rc calls during a quiet period afterwards.

usage: rclone_cost.py BIN [N]
"""
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../Clients/python"))
from syncbadge import Connection  # noqa: E402

bin_dir, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1000
tmp = tempfile.mkdtemp(prefix="rclone-cost-")
os.chmod(tmp, 0o700)
cloud, mnt, cache, run = (os.path.join(tmp, d) for d in ("cloud", "mnt", "cache", "run"))
for d in (cloud, mnt, cache, run):
    os.makedirs(d, mode=0o700)
sock = os.path.join(run, "daemon.sock")
port = 25000 + os.getpid() % 10000
procs = []


def start(args, log):
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, log), "w"))
    procs.append(p)
    return p


def ticks(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


def rss(pid):
    out = {}
    for line in open("/proc/%d/status" % pid):
        if line.startswith(("VmRSS", "VmHWM")):
            out[line.split(":")[0]] = int(line.split()[1])
    return out


def ns(s):
    base, frac = s.rstrip("Z").split(".")
    t = datetime.datetime.strptime(base, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc).timestamp()
    return int(t) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])


try:
    start([bin_dir + "/syncbadged", "--socket", sock, "--state-dir", tmp + "/state"], "daemon.log")
    start(["rclone", "mount", cloud, mnt, "--vfs-cache-mode", "writes", "--cache-dir", cache, "--rc",
           "--rc-addr", "127.0.0.1:%d" % port, "--rc-no-auth", "--vfs-write-back", "1s", "--config", "/dev/null",
           "--log-level", "DEBUG", "--log-file", tmp + "/rclone.log"], "rclone.out")
    while not (os.path.exists(sock) and os.path.ismount(mnt)):
        time.sleep(0.05)
    adapter = start([bin_dir + "/syncbadge-rclone", "--socket", sock, "--rc-addr", "127.0.0.1:%d" % port, mnt], "adapter.log")
    synced_at = {}
    lock = threading.Lock()

    def on_push(m):
        if m.kind == "ITEM" and len(m.fields) > 1 and m.fields[1] == b"synced":
            with lock:
                synced_at.setdefault(os.path.basename(m.fields[0].decode()), time.time_ns())

    c = Connection(sock, name="cost", on_push=on_push, threaded=True).open()
    while True:
        item = c.request("STATUS", mnt.encode(), timeout=10).items if os.path.ismount(mnt) else []
        if item and item[0].state == "synced":
            break
        time.sleep(0.05)
    c.request("OBSERVE", mnt.encode(), timeout=10)
    t0, rss0 = ticks(adapter.pid), rss(adapter.pid)
    names = ["f%05d.txt" % i for i in range(n)]
    for name in names:
        with open(os.path.join(mnt, name), "w") as f:
            f.write("x" * 1000)
    deadline = time.time() + 600
    while sum(1 for k in list(synced_at) if k in names) < n and time.time() < deadline:
        time.sleep(0.1)
    t1, rss1 = ticks(adapter.pid), rss(adapter.pid)
    hz = os.sysconf("SC_CLK_TCK")
    done = json.loads(subprocess.run(["rclone", "rc", "--url", "http://127.0.0.1:%d" % port, "core/transferred"],
                                     capture_output=True, text=True).stdout)["transferred"]
    lat = [(synced_at[t["name"]] - ns(t["completed_at"])) / 1e6 for t in done
           if t["name"] in synced_at and not t["error"] and t["size"] == 1000]
    calls_before = open(tmp + "/rclone.log").read().count(": rc: \"")
    t2 = ticks(adapter.pid)
    time.sleep(5)
    calls_after = open(tmp + "/rclone.log").read().count(": rc: \"")
    t3 = ticks(adapter.pid)
    print("files synced: %d of %d" % (sum(1 for k in synced_at if k in names), n))
    print("adapter CPU for them: %.2f s (%.2f s per 1,000 files)" % ((t1 - t0) / hz, (t1 - t0) / hz * 1000 / n))
    print("adapter RSS: %d KiB before, %d KiB after (peak %d KiB)" % (rss0["VmRSS"], rss1["VmRSS"], rss1["VmHWM"]))
    if lat:
        print("rclone finished -> synced pushed, last %d files: median %.0f ms, max %.0f ms" % (len(lat), statistics.median(lat), max(lat)))
    print("rc calls until then: %d; quiet 5 s after: adapter CPU %.2f s, rc calls %d" % (calls_before, (t3 - t2) / hz, calls_after - calls_before))
finally:
    for p in reversed(procs):
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
    subprocess.run(["fusermount3", "-u", "-z", mnt], stderr=subprocess.DEVNULL)

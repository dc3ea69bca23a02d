#!/usr/bin/python3
"""syncbadge-tray at scale and at idle (`make bench-tray`; docs/PERFORMANCE.md "syncbadge-tray").

A root of TOP*(1+SUB)+1 directories of FILES empty files each (Benchmarks/scripts/mkfiles.c;
10 × 99 × 1000 is 1,001,000 files), registered with a syncbadged of its own, then PROBLEMS files
set `conflict` by an engine in one of two layouts:

- spread: one problem in each of PROBLEMS directories (the tray must list each of them: the
  walk's worst case, since the contract has no listing filtered by state);
- clustered: every problem in as few directories as hold them.

For each, syncbadge-tray is started and followed until it logs "followed: ..." (its first walk is
done: every problem found): its CPU time (user+system, /proc/PID/stat) and RSS (VmRSS, VmHWM) at
that moment, against a baseline tray started on a daemon with no root (Python, Gio, the bus).
Then, IDLE_AFTER seconds later, it is left alone for IDLE seconds: the context switches of all its threads
(/proc/PID/task/*/status, voluntary and not) and the CPU it used meanwhile are its wake-ups.

Run under a session bus of its own: dbus-run-session -- /usr/bin/python3 tray_bench.py ...
SYNCBADGED: the daemon (default: the checkout's .build/debug/syncbadged, as syncbadge.testing).
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "Clients", "python"))

from syncbadge import Provider, testing  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
IDLE_AFTER = 2.0            # seconds between the end of the walk and the idle window


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def status(pid):
    return status_of("/proc/%d/status" % pid)


def switches(pid):
    """Context switches summed over every thread (each is a wake-up of one)."""
    total = 0
    for path in glob.glob("/proc/%d/task/*/status" % pid):
        try:
            s = status_of(path)
        except OSError:
            continue
        total += int(s["voluntary_ctxt_switches"]) + int(s["nonvoluntary_ctxt_switches"])
    return total


def status_of(path):
    out = {}
    with open(path) as f:
        for line in f:
            key, _, value = line.partition(":")
            out[key] = value.strip()
    return out


class Tray(object):
    def __init__(self, socket, work):
        env = dict(os.environ, SYNCBADGE_SOCKET=socket, HOME=work)
        self.proc = subprocess.Popen(["/usr/bin/python3", os.path.join(REPO, "Clients", "tray", "syncbadge-tray")],
                                     env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        self.log = testing.DaemonLog(self.proc.stderr)

    def followed(self, timeout):
        started = time.monotonic()
        line = self.log.wait_for(r"followed: ", timeout)
        if line is None:
            raise SystemExit("the tray did not finish its walk within %gs: %s" % (timeout, self.log.tail(5)))
        return line, time.monotonic() - started

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


def measure(label, socket, work, idle, timeout):
    tray = Tray(socket, work)
    try:
        line, wall = tray.followed(timeout)
        pid = tray.proc.pid
        cpu = cpu_seconds(pid)
        st = status(pid)
        rss, hwm = int(st["VmRSS"].split()[0]) / 1024, int(st["VmHWM"].split()[0]) / 1024
        result = dict(label=label, line=line.split("followed: ", 1)[1], wall=wall, cpu=cpu, rss=rss, hwm=hwm)
        if idle:
            # The walk's last answers still go out as D-Bus signals just after the log line:
            # the idle window starts once that is over.
            time.sleep(IDLE_AFTER)
            s0, c0 = switches(pid), cpu_seconds(pid)
            time.sleep(idle)          # the measurement itself: an idle minute, nothing to wait for
            result.update(idle=idle, wakeups=switches(pid) - s0, idle_cpu=cpu_seconds(pid) - c0,
                          threads=len(glob.glob("/proc/%d/task/*" % pid)))
        return result
    finally:
        tray.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--sub", type=int, default=99)
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--problems", type=int, default=1000)
    ap.add_argument("--idle", type=float, default=60.0, help="seconds left idle after the walk (0: none)")
    ap.add_argument("--layouts", default="spread,clustered")
    ap.add_argument("--workdir", help="keep the tree here (reused when it is already there)")
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()
    if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        raise SystemExit("run under dbus-run-session")

    work = args.workdir or tempfile.mkdtemp(prefix="syncbadge-tray-bench.")
    os.makedirs(work, exist_ok=True)
    os.chmod(work, 0o700)
    mkfiles = os.path.join(work, "mkfiles")
    subprocess.run(["cc", "-O2", "-o", mkfiles, os.path.join(HERE, "mkfiles.c")], check=True)
    root = os.path.join(work, "Sync")
    dirs = [root] + [os.path.join(root, "d%04d" % i, *(("s%04d" % j,) if j >= 0 else ()))
                     for i in range(args.top) for j in range(-1, args.sub)]
    files = len(dirs) * args.files
    t = time.monotonic()
    subprocess.run([mkfiles, "tree", root, str(args.top), str(args.sub), str(args.files)], check=True)
    print("tree: %d directories, %d files, made in %.1f s" % (len(dirs), files, time.monotonic() - t), flush=True)

    # A daemon of this run's own: a reused tree is registered afresh (a stored one would be
    # rescanning, and ADD-ROOT busy, until the rescan is done).
    shutil.rmtree(os.path.join(work, "daemon"), ignore_errors=True)
    daemon = testing.Daemon(os.path.join(work, "daemon")).start(timeout=120)
    results = []
    try:
        admin = daemon.connect("admin", "tray-bench")
        # The baseline: the tray on a daemon with no root.
        results.append(measure("no root (baseline)", daemon.socket, work, 0, args.timeout))
        t = time.monotonic()
        admin.request("ADD-ROOT", root, timeout=3600)
        print("ADD-ROOT: %.1f s (%s)" % (time.monotonic() - t, daemon.binary), flush=True)
        engine = Provider(daemon.connect("provider", "tray-bench-engine"))
        for layout in args.layouts.split(","):
            if layout == "spread":
                chosen = [os.path.join(d, "file%02d.txt" % 0) for d in dirs[:args.problems]]
            elif layout == "clustered":
                per = args.files
                chosen = [os.path.join(d, "file%02d.txt" % i) for d in dirs for i in range(per)][:args.problems]
            else:
                raise SystemExit("unknown layout %s" % layout)
            replies = [engine.set("conflict", p, message="changed on both sides") for p in chosen]
            for r in replies:
                r.result(60)
            observed = len(set(os.path.dirname(p) for p in chosen))
            r = measure("%s: %d problems in %d directories" % (layout, len(chosen), observed), daemon.socket, work,
                        args.idle, args.timeout)
            results.append(r)
            for r in [engine.set("synced", p) for p in chosen]:
                r.result(60)
    finally:
        daemon.stop()
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)

    print()
    print("| %d files | tray's log | CPU to the end of the walk | RSS (peak) | idle %s s: wake-ups, CPU |"
          % (files, "%g" % args.idle))
    print("|---|---|---|---|---|")
    for r in results:
        idle = "%d, %.2f s (%d threads)" % (r["wakeups"], r["idle_cpu"], r["threads"]) if "wakeups" in r else "–"
        print("| %s | %s | %.2f s (wall %.2f s) | %.1f MB (%.1f MB) | %s |"
              % (r["label"], r["line"], r["cpu"], r["wall"], r["rss"], r["hwm"], idle))


if __name__ == "__main__":
    main()

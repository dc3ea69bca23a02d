#!/usr/bin/env python3
"""The SyncBadge benchmarks (`make bench`, through Benchmarks/run.sh, which sets up the tools).

Every figure is measured in this one run, on this machine, against a baseline measured the
same way and interleaved with it (rounds alternate between the two, so drift from other load on
the machine hits both), and is reported as a ratio with its target. See Benchmarks/README.md.

    bench.py --work DIR --tools DIR --bin DIR [--quick] [--only NAME[,NAME...]] --out FILE
"""

import argparse
import http.client
import json
import os
import platform
import re
import resource
import selectors
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (BenchError, Conn, Ctx, Daemon, Figure, InotifyWait, Watchman, count_wakeups,  # noqa: E402
                    fmt_bytes, fmt_time, median, now, percentile, rss_bytes, settle_rss, thread_cpu, cpu_between, wire)
from syncbadge import Item, codec, testing  # noqa: E402  (common.py put Clients/python on the path)
from rclone_bench import fig_rclone, fig_rclone_queue  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def log(msg):
    print(f"  … {msg}", flush=True)


def make_tree(ctx, path, top, sub, files):
    """A tree of 1 + top*(1+sub) directories with `files` empty files in each (C: fast).
    Returns (directories, files)."""
    r = subprocess.run([ctx.tool("mkfiles"), "tree", path, str(top), str(sub), str(files)],
                       timeout=900, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise BenchError("mkfiles tree failed")
    dirs = 1 + top * (1 + sub)
    return dirs, dirs * files


def ensure_watches(ctx, needed):
    """True if `needed` more inotify watches fit under fs.inotify.max_user_watches, raising the
    limit when we are root (restored at exit). False (skip) otherwise."""
    with open("/proc/sys/fs/inotify/max_user_watches") as f:
        limit = int(f.read())
    want = testing.inotify_watches_in_use() + needed + 10000
    if limit >= want:
        return True
    if os.geteuid() == 0:
        ctx.set_sysctl("fs.inotify.max_user_watches", want)
        return True
    return False


def ensure_queue(ctx, events):
    """The kernel's inotify queue must hold a burst of `events` or every watcher overflows.
    Raises fs.inotify.max_queued_events when root (restored at exit); else leaves a note."""
    with open("/proc/sys/fs/inotify/max_queued_events") as f:
        limit = int(f.read())
    want = 4 * events   # create + open + close_write... per file, for the slowest reader
    if limit >= want:
        return
    if os.geteuid() == 0:
        ctx.set_sysctl("fs.inotify.max_queued_events", want)
    else:
        ctx.notes.append(f"fs.inotify.max_queued_events={limit} (not root): bursts may overflow "
                         "the kernel queue, which the daemon answers with a rescan")


# =============================================================================================
# 1 and 2. Registering a tree: time, and memory per entry.


def sb_register(ctx, tree):
    """A fresh daemon; ADD-ROOT until OK. Returns (seconds, rss delta after settling)."""
    d = Daemon(ctx, "reg")
    try:
        c = d.conn()
        before = settle_rss(d.pid)
        t0 = now()
        d.add_root(c, tree, timeout=300)
        t = now() - t0
        after = d.wait_idle(c)
        c.close()
        return t, after - before, after
    finally:
        d.stop()


def inw_register(ctx, tree):
    """inotifywait -m -r until it prints 'Watches established.' (it only watches: no index)."""
    w = InotifyWait(ctx, ["-r", tree], timeout=300)
    try:
        return w.t_ready - w.t_start, rss_bytes(w.proc.pid)
    finally:
        w.stop()


def wm_register(ctx, tree):
    """A fresh watchman server; watch-project, then a query, which waits for the initial crawl
    to finish (watch-project alone returns before the tree is indexed)."""
    wm = Watchman(ctx)
    try:
        c = wm.conn()
        before = settle_rss(wm.pid)
        t0 = now()
        r = c.command(["watch-project", tree], timeout=300)
        root = r["watch"]
        c.command(["query", root, {"expression": ["name", "no-such-file"], "fields": ["name"]}],
                  timeout=300)
        t = now() - t0
        after = settle_rss(wm.pid)
        c.close()
        return t, after - before
    finally:
        wm.stop()


def fig_register(ctx, only):
    top, sub, files = (20, 49, 10) if ctx.quick else (100, 99, 10)
    reps = 2 if ctx.quick else 5
    tree = os.path.join(ctx.tmpdir("tree"), "root")
    dirs, nfiles = make_tree(ctx, tree, top, sub, files)
    entries = dirs + nfiles
    log(f"register: tree of {dirs} directories, {nfiles} files; {reps} rounds")
    if not ensure_watches(ctx, 2 * dirs):
        raise BenchError("fs.inotify.max_user_watches too low and not root")
    sb, inw, wm, sbmem, wmmem = [], [], [], [], []
    # One unmeasured pass of each: warm caches (dentries, inodes, the binaries' pages).
    sb_register(ctx, tree), inw_register(ctx, tree), wm_register(ctx, tree)
    runners = [("sb", sb_register), ("inw", inw_register), ("wm", wm_register)]
    for rep in range(reps):
        for name, fn in runners[rep % 3:] + runners[:rep % 3]:   # rotate the order each round
            r = fn(ctx, tree)
            if name == "sb":
                sb.append(r[0]); sbmem.append(r[1] / entries)
            elif name == "inw":
                inw.append(r[0])
            else:
                wm.append(r[0]); wmmem.append(r[1] / entries)
    size = f"{dirs:,} dirs × {files} files"
    out = []
    if "register" in only:
        s, b = median(sb), median(inw)
        out.append(Figure(f"register {size} (median of {reps})", fmt_time(s),
                          f"inotifywait -r {fmt_time(b)}", s / b, "≤ 0.5×", s / b <= 0.5))
        b = median(wm)
        out.append(Figure("register, vs watchman watch-project+query", fmt_time(s),
                          f"watchman {fmt_time(b)}", s / b, "reference", None))
    if "memory" in only:
        s, b = median(sbmem), median(wmmem)
        out.append(Figure(f"memory per entry ({entries:,} entries)", f"{s:.0f} B",
                          f"watchman {b:.0f} B", s / b, "≤ 0.3×", s / b <= 0.3))
    return out


# =============================================================================================
# 3. Write -> push latency to an observer.


def write_one(path):
    """The write whose latency is measured: open, append a byte, close (a real save)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"x")
    os.close(fd)
    return now()


def in_turns(n, block, names, turn, readers):
    """Runs `turn(name, lo, hi)` for each block of `n` items, every name in turn, the first name
    moving on by one each block, so that no tool always goes first. What else a turn caused (a
    close_write, the directory's counts) is read and dropped between turns, outside the measured
    waits."""
    for b, lo in enumerate(range(0, n, block)):
        k = b % len(names)
        for name in names[k:] + names[:k]:
            turn(name, lo, min(n, lo + block))
            time.sleep(0.02)
            for reader in readers:
                while reader.fill(0):
                    pass
                reader.lines.clear()


def fig_push_latency(ctx, only):
    """With run.sh --base, a daemon of the other build takes its turn in the same rotation: two
    builds compared in one run, on the same writes, rather than across runs (whose medians
    differ by more than a change of code does)."""
    n = 200 if ctx.quick else 1000
    block = 50
    base = ctx.tmpdir("lat")
    dirs = {}
    for name in ("sb", "inw", "wm") + (("base",) if ctx.base else ()):
        d = os.path.join(base, name, "obs")
        os.makedirs(d)
        for i in range(n):
            open(os.path.join(d, f"f{i}"), "w").close()
        dirs[name] = d
    # watchman: settle 1 ms (its default waits 20 ms for the tree to quiet down).
    with open(os.path.join(base, "wm", ".watchmanconfig"), "w") as f:
        json.dump({"settle": 1}, f)

    # syncbadged: a provider reports everything synced, so each write flips a file to
    # `pending`: what a viewer sees changes, which is what gets pushed (a gen alone is not).
    daemons = {}
    wm = Watchman(ctx, "latw")
    inw = None

    def synced_daemon(name, bindir=None):
        """A daemon whose provider reports `name`'s tree synced, and an observer of its files."""
        d = daemons[name] = Daemon(ctx, f"lat{name}", bindir=bindir)
        d.add_root(d.conn(), os.path.join(base, name))
        final, _ = d.conn("provider", "bench-engine").request(
            "SET", "synced", os.path.join(base, name), recursive=1)
        if not final.ok:
            raise BenchError(f"SET synced: {final}")
        obs = d.conn("viewer", "bench-observer")
        obs.request("OBSERVE", dirs[name])
        return obs

    def pushed(name, obs):
        """Times a write in `name`'s tree until `obs` is told the file is pending."""
        def one(i):
            path = os.path.join(dirs[name], f"f{i}")
            want = f"* ITEM {wire(path)} pending "
            t0 = write_one(path)
            deadline = t0 + 10
            while True:
                line, t = obs.reader.readline(deadline)
                if line.startswith(want):
                    return t - t0
        return one

    try:
        observers = {"sb": synced_daemon("sb")}
        if ctx.base:
            observers["base"] = synced_daemon("base", ctx.base)
        inw = InotifyWait(ctx, ["-e", "modify,close_write", "--format", "%w%f", dirs["inw"]])
        wc = wm.conn()
        root = wc.command(["watch-project", os.path.join(base, "wm")])["watch"]
        wc.command(["subscribe", root, "lat", {"expression": ["type", "f"], "fields": ["name"]}])
        wc.next_unilateral(now() + 30)      # the initial, fresh-instance list

        def inw_one(i):
            path = os.path.join(dirs["inw"], f"f{i}")
            t0 = write_one(path)
            deadline = t0 + 10
            while True:
                line, t = inw.out.readline(deadline)
                if line == path:
                    return t - t0

        def wm_one(i):
            name = f"obs/f{i}"   # watchman names files relative to the watched root
            t0 = write_one(os.path.join(base, "wm", name))
            deadline = t0 + 10
            while True:
                v, t = wc.next_unilateral(deadline)
                if name in v.get("files", ()):
                    return t - t0

        fns = {name: pushed(name, obs) for name, obs in observers.items()}
        fns.update(inw=inw_one, wm=wm_one)
        lat = {name: [] for name in fns}
        log(f"push latency: {n} writes per tool, interleaved in blocks of {block}")

        def turn(name, lo, hi):
            lat[name] += [fns[name](i) for i in range(lo, hi)]
        in_turns(n, block, list(fns), turn, [obs.reader for obs in observers.values()] + [inw.out])
    finally:
        if inw:
            inw.stop()
        wm.stop()
        for d in daemons.values():
            d.stop()
    sm, sp = median(lat["sb"]), percentile(lat["sb"], 99)
    im, ip = median(lat["inw"]), percentile(lat["inw"], 99)
    wmm, wp = median(lat["wm"]), percentile(lat["wm"], 99)
    figures = [
        Figure(f"write→push median ({n} writes)", fmt_time(sm), f"inotifywait -m {fmt_time(im)}",
               sm / im, "≤ 3×", sm / im <= 3),
        Figure("write→push p99", fmt_time(sp), f"inotifywait -m {fmt_time(ip)}", sp / ip, "≤ 0.5 ms",
               sp <= 0.5e-3),
        Figure("write→push median, vs watchman", fmt_time(sm), f"watchman (settle 1 ms) {fmt_time(wmm)}",
               sm / wmm, "reference", None),
        Figure("write→push p99, vs watchman", fmt_time(sp), f"watchman {fmt_time(wp)}",
               sp / wp, "reference", None),
    ]
    if ctx.base:
        bm, bp = median(lat["base"]), percentile(lat["base"], 99)
        figures += [
            Figure("write→push median, vs --base", fmt_time(sm), f"--base build {fmt_time(bm)}",
                   sm / bm, "reference", None),
            Figure("write→push p99, vs --base", fmt_time(sp), f"--base build {fmt_time(bp)}",
                   sp / bp, "reference", None),
        ]
    return figures


def fig_move_push(ctx, only):
    """Renames, timed like write→push: from `rename` returning until the observer is told. A
    move out of every root is the one case the watcher holds: a move-from that meets an empty
    queue waits up to `MovePairing.arrivalGrace` (50 ms) for its move-to before it counts as a
    departure, since the kernel may queue the two halves of one rename apart. A rename within
    the root is paired as soon as the move-to is read. With --base, the other build takes its
    turn in the same rotation."""
    n = 40 if ctx.quick else 200
    block = 20
    base = ctx.tmpdir("move")
    outside = os.path.join(base, "outside")
    os.makedirs(outside)
    dirs = {}
    for name in ("sb", "inw") + (("base",) if ctx.base else ()):
        d = os.path.join(base, name, "obs")
        os.makedirs(d)
        for i in range(n):
            for prefix in ("out", "ren"):
                open(os.path.join(d, f"{prefix}{i}"), "w").close()
        dirs[name] = d
    daemons = {}
    inw = None

    def observed(name, bindir=None):
        d = daemons[name] = Daemon(ctx, f"move{name}", bindir=bindir)
        d.add_root(d.conn(), os.path.join(base, name))
        obs = d.conn("viewer", "bench-observer")
        obs.request("OBSERVE", dirs[name])
        return obs

    def timed(reader, move, want):
        """`want` is a whole line, or its start up to the space after the path (an ITEM)."""
        t0 = move()
        deadline = t0 + 10
        while True:
            line, t = reader.readline(deadline)
            if line == want or (want.endswith(" ") and line.startswith(want)):
                return t - t0

    def rename(src, dst):
        def go():
            os.rename(src, dst)
            return now()
        return go

    def moves(reader, name, gone, arrived):
        """The two timed renames in `name`'s directory, told on `reader` by the lines gone(path)
        and arrived(path)."""
        d = dirs[name]
        return (lambda i: timed(reader, rename(os.path.join(d, f"out{i}"), os.path.join(outside, f"{name}{i}")),
                                gone(os.path.join(d, f"out{i}"))),
                lambda i: timed(reader, rename(os.path.join(d, f"ren{i}"), os.path.join(d, f"new{i}")),
                                arrived(os.path.join(d, f"new{i}"))))

    try:
        observers = {"sb": observed("sb")}
        if ctx.base:
            observers["base"] = observed("base", ctx.base)
        inw = InotifyWait(ctx, ["-e", "moved_from,moved_to", "--format", "%e %w%f", dirs["inw"]])
        fns = {name: moves(obs.reader, name, lambda p: f"* GONE {wire(p)}", lambda p: f"* ITEM {wire(p)} pending ")
               for name, obs in observers.items()}
        fns["inw"] = moves(inw.out, "inw", lambda p: f"MOVED_FROM {p}", lambda p: f"MOVED_TO {p}")
        lat = {(name, kind): [] for name in fns for kind in (0, 1)}
        log(f"move push: {n} moves out and {n} renames per tool, interleaved in blocks of {block}")

        def turn(name, lo, hi):
            for kind in (0, 1):
                lat[(name, kind)] += [fns[name][kind](i) for i in range(lo, hi)]
        in_turns(n, block, list(fns), turn, [obs.reader for obs in observers.values()] + [inw.out])
    finally:
        if inw:
            inw.stop()
        for dm in daemons.values():
            dm.stop()
    figures = []
    for kind, what, baseline in ((0, "move out of the root → GONE", "MOVED_FROM"),
                                 (1, "rename in the root → ITEM", "MOVED_TO")):
        sm, sp = median(lat[("sb", kind)]), percentile(lat[("sb", kind)], 99)
        im = median(lat[("inw", kind)])
        figures.append(Figure(f"{what} median ({n})", fmt_time(sm), f"inotifywait -m {baseline} {fmt_time(im)}",
                              sm / im, "reference", None, note=f"p99 {fmt_time(sp)}"))
        if ctx.base:
            bm, bp = median(lat[("base", kind)]), percentile(lat[("base", kind)], 99)
            figures.append(Figure(f"{what} median, vs --base", fmt_time(sm), f"--base build {fmt_time(bm)}",
                                  sm / bm, "reference", None, note=f"p99 {fmt_time(sp)} against {fmt_time(bp)}"))
    return figures


# =============================================================================================
# 4 and 5. STATUS round trips against the C echo server.


def loadgen(ctx, sock, mode, request, k, total, window, timeout=120, cpu=None):
    """Runs loadgen.c: `request` is [VERB, FIELD...], which it encodes. `cpu`: pinned there
    (taskset -c)."""
    pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
    r = subprocess.run(pin + [ctx.tool("loadgen"), sock, mode, str(k), str(total), str(window), str(timeout)] + request,
                       capture_output=True, text=True, timeout=timeout + 10, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise BenchError(f"loadgen {mode}: {r.stderr.strip()}")
    vals = dict(kv.split("=") for kv in r.stdout.split())
    if int(vals["errors"]):
        raise BenchError(f"loadgen {mode}: {vals['errors']} ERR answers")
    return {k: float(v) for k, v in vals.items()}


def pin_all(pid, cpus):
    """Every thread of a process we started onto `cpus` (taskset -a -p); the threads it starts
    later inherit it from theirs."""
    r = subprocess.run(["taskset", "-a", "-p", "-c", ",".join(map(str, sorted(cpus))), str(pid)],
                       capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise BenchError(f"taskset -a -p {pid}: {r.stderr.strip()}")


def placements():
    """Where the STATUS figures run, as (name, server CPUs, client CPU, label): the scheduler's
    choice, then pinned (issue 17: unpinned, the echo server's own round trip moves between 8 and
    64 µs with the cores the two processes land on). The server (the daemon, every thread, or the
    echo server) is on the first CPU we may use; the client on that CPU too (same-core) or on the
    next (cross-core). Cross-core is left out on a single CPU."""
    cpus = sorted(os.sched_getaffinity(0))
    out = [("unpinned", cpus, None, "unpinned")]
    out.append(("same-core", [cpus[0]], cpus[0], f"same-core: server and client on CPU {cpus[0]}"))
    if len(cpus) >= 2:
        out.append(("cross-core", [cpus[0]], cpus[1],
                    f"cross-core: server on CPU {cpus[0]}, client on CPU {cpus[1]}"))
    return out


def fig_status(ctx, only):
    base = ctx.tmpdir("st")
    root = os.path.join(base, "root")
    make_tree(ctx, root, 10, 10, 10)
    target = os.path.join(root, "d0003", "s0004", "file05.txt")
    request = ["STATUS", target]
    d = Daemon(ctx, "std")
    # With run.sh --base, the other build's daemon serves the same root and takes its turn in
    # every round beside this one: pipelined STATUS moves by less between two builds than
    # between two runs (PERFORMANCE.md, "Session 12").
    bd = Daemon(ctx, "stbase", bindir=ctx.base) if ctx.base else None
    echo_sock = os.path.join(base, "echo.sock")
    echo = ctx.spawn([ctx.tool("echo"), echo_sock], stdout=subprocess.PIPE)
    places = placements()
    if len(places) < 3:
        ctx.notes.append("one CPU: the cross-core STATUS figures are left out")
    out = []

    def measure(k, window, totals, value):
        """Rounds of loadgen against both servers, in every placement: the placements rotate
        from round to round, and within a placement the two servers alternate which goes
        first. Returns {placement: (daemon values, echo values)}."""
        got = {p[0]: ([], [], []) for p in places}
        for r in range(rounds):
            for name, server_cpus, client_cpu, _ in places[r % len(places):] + places[:r % len(places)]:
                pin_all(d.pid, server_cpus)
                pin_all(echo.pid, server_cpus)
                pair = [(0, d.socket, "daemon", totals[0]), (1, echo_sock, "echo", totals[1])]
                if bd is not None and len(totals) > 2:
                    pin_all(bd.pid, server_cpus)
                    pair.insert(1, (2, bd.socket, "daemon", totals[2]))
                for i, sock, mode, total in (pair if r % 2 == 0 else pair[::-1]):
                    v = loadgen(ctx, sock, mode, request, k, total, window, cpu=client_cpu)
                    got[name][i].append(value(v))
        return got

    try:
        for server in (d, bd) if bd is not None else (d,):
            admin = server.conn()
            server.add_root(admin, root)
            admin.close()
        if echo.stdout.readline().strip() != b"ready":
            raise BenchError("echo server did not start")
        rounds = 3
        if "status-rtt" in only:
            total = 3000 if ctx.quick else 20000
            log(f"STATUS round trips: {rounds} rounds of {total} per server and placement "
                f"({', '.join(p[0] for p in places)})")
            got = measure(1, 1, (total, total), lambda v: v["rtt_median_us"] * 1e-6)
            for name, _, _, label in places:
                s, b = median(got[name][0]), median(got[name][1])
                pinned = name != "unpinned"
                out.append(Figure(f"STATUS round trip, sequential (median), {label}", fmt_time(s),
                                  f"C echo {fmt_time(b)}", s / b, "≤ 1.5×" if pinned else "reference",
                                  s / b <= 1.5 if pinned else None))
        if "pipelined" in only:
            sbt, ect = (50000, 500000) if ctx.quick else (300000, 3000000)
            log(f"pipelined STATUS: 100 per write, 8 writes in flight; {rounds} rounds per "
                f"server and placement")
            got = measure(100, 8, (sbt, ect, sbt), lambda v: v["rps"])
            for name, _, _, label in places:
                s, b = median(got[name][0]), median(got[name][1])
                pinned = name != "unpinned"
                out.append(Figure(f"pipelined STATUS, 100 per write (req/s), {label}", f"{s:,.0f}/s",
                                  f"C echo {b:,.0f}/s", s / b,
                                  "≥ 1,000,000/s and ≥ 0.25×" if pinned else "reference",
                                  (s >= 1e6 and s / b >= 0.25) if pinned else None))
                if got[name][2]:
                    bs = median(got[name][2])
                    log(f"pipelined STATUS, {label}: this build {', '.join(f'{v:,.0f}' for v in got[name][0])}/s; "
                        f"--base {', '.join(f'{v:,.0f}' for v in got[name][2])}/s")
                    out.append(Figure(f"pipelined STATUS, vs --base, {label}", f"{s:,.0f}/s",
                                      f"--base build {bs:,.0f}/s", s / bs, "reference", None))
    finally:
        ctx.stop(echo)
        d.stop()
        if bd is not None:
            bd.stop()
    return out


# =============================================================================================
# 6. Wake-ups while idle.


def fig_idle(ctx, only):
    secs = 3 if ctx.quick else 10
    base = ctx.tmpdir("idle")
    for name in ("sb", "wm"):
        make_tree(ctx, os.path.join(base, name), 3, 3, 5)
    d = Daemon(ctx, "idled")
    wm = Watchman(ctx, "idlew")
    conns = []
    try:
        d.add_root(d.conn(), os.path.join(base, "sb"))
        for i in range(3):   # three observers, as a prompt, a file browser and `watch` would
            c = d.conn("viewer", f"idle{i}")
            c.request("OBSERVE", os.path.join(base, "sb", f"d{i:04d}"))
            conns.append(c)
        root = None
        for i in range(3):   # and three watchman subscriptions for the reference figure
            c = wm.conn()
            root = c.command(["watch-project", os.path.join(base, "wm")])["watch"]
            c.command(["subscribe", root, f"s{i}", {"expression": ["type", "f"], "fields": ["name"]}])
            conns.append(c)
        log(f"idle: {secs} s with 3 observers each")
        time.sleep(1.0)   # let start-up work finish
        counts = count_wakeups([d.pid, wm.pid], secs)
    finally:
        for c in conns:
            c.close()
        wm.stop()
        d.stop()
    (sn, sborn, sgone), (wn, _, _) = counts[d.pid], counts[wm.pid]
    s, w = sn / secs, wn / secs
    note = (f"daemon threads started/ended while idle: {sborn}/{sgone}" if sborn or sgone else None)
    return [Figure(f"wake-ups/s idle, 3 observers ({secs} s)", f"{s:.1f}/s ({sn} in {secs} s)",
                   f"watchman {w:.1f}/s", (s / w) if w else None, "0", sn == 0, note=note)]


# =============================================================================================
# 7. `syncbadge status` one-shot vs /bin/true.


def fig_cli(ctx, only):
    base = ctx.tmpdir("cli")
    root = os.path.join(base, "root")
    make_tree(ctx, root, 5, 5, 5)
    d = Daemon(ctx, "clid")
    runs = 30 if ctx.quick else 150
    rounds = 2 if ctx.quick else 3
    sbm, truem = [], []
    try:
        d.add_root(d.conn(), root)
        env = dict(os.environ, SYNCBADGE_SOCKET=d.socket)
        # The command as a user or a prompt types it. With no option it takes the CLI's fast
        # path (no ArgumentParser); the daemon is up, so nothing is spawned.
        cmd = f"{os.path.join(ctx.sbbin, 'syncbadge')} status"
        # A sanity run: it must succeed, or hyperfine would be timing an error path.
        r = subprocess.run(shlex.split(cmd), cwd=root, env=env, capture_output=True, timeout=10)
        if r.returncode != 0:
            raise BenchError(f"syncbadge status failed: {r.stderr.decode().strip()}")
        log(f"syncbadge status: hyperfine, {rounds} rounds of {runs} runs each")
        for rnd in range(rounds):
            js = os.path.join(base, f"h{rnd}.json")
            cmds = [cmd, "/bin/true"] if rnd % 2 == 0 else ["/bin/true", cmd]
            subprocess.run(["hyperfine", "-N", "--warmup", "10", "--runs", str(runs), "--style", "none",
                            "--export-json", js] + cmds, cwd=root, env=env, check=True, timeout=300,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
            with open(js) as f:
                res = json.load(f)["results"]
            for x in res:
                (truem if x["command"] == "/bin/true" else sbm).append(x["mean"])
    finally:
        d.stop()
    s, b = median(sbm), median(truem)
    diff = s - b
    return [Figure(f"`syncbadge status` one-shot (hyperfine mean)", fmt_time(s),
                   f"/bin/true {fmt_time(b)}", s / b, "≤ +1 ms", diff <= 1e-3,
                   note=f"difference {fmt_time(diff)}")]


# =============================================================================================
# 8. The prompt hooks.

ZSH_LOOP = r"""
zmodload zsh/datetime
setopt prompt_subst
[[ $HOOK == 1 ]] && source $SCRIPT
PROMPT='%~ ${SYNCBADGE_PROMPT:+$SYNCBADGE_PROMPT }%# '
cd $DIR1
[[ $HOOK == 1 ]] && _syncbadge_precmd    # connect and the first STATUS: not measured
integer i n=$N
float t0=$EPOCHREALTIME
for (( i = 0; i < n; i++ )); do
  if [[ $CD == 1 ]]; then if (( i & 1 )); then cd $DIR1; else cd $DIR2; fi; fi
  [[ $HOOK == 1 ]] && _syncbadge_precmd
  print -P -v out -- "$PROMPT"
done
float t1=$EPOCHREALTIME
print -r -- "$out" >&2
print $(( (t1 - t0) / n ))
"""

BASH_LOOP = r"""
[[ $HOOK == 1 ]] && source "$SCRIPT"
PS1='\w ${SYNCBADGE_PROMPT:+$SYNCBADGE_PROMPT }\$ '
cd "$DIR1"
[[ $HOOK == 1 ]] && _syncbadge_precmd    # the bridge's start and the first STATUS: not measured
n=$N
t0=$EPOCHREALTIME
for (( i = 0; i < n; i++ )); do
  if [[ $CD == 1 ]]; then if (( i & 1 )); then cd "$DIR1"; else cd "$DIR2"; fi; fi
  [[ $HOOK == 1 ]] && _syncbadge_precmd
  out=${PS1@P}
done
t1=$EPOCHREALTIME
printf '%s\n' "$out" >&2
echo $(( ${t1/[.,]/} - ${t0/[.,]/} )) | awk -v n=$n '{ printf "%.9f\n", $1 / 1e6 / n }'
"""


def fig_prompt(ctx, only):
    base = ctx.tmpdir("prompt")
    root = os.path.join(base, "root")
    make_tree(ctx, root, 3, 3, 5)
    dir1, dir2 = root, os.path.join(root, "d0001")
    d = Daemon(ctx, "promptd")
    n = 300 if ctx.quick else 2000
    rounds = 2 if ctx.quick else 3
    # Limits on the hook's cost per prompt (with it minus without it), (same directory, a cd).
    shells = {
        "zsh": (["zsh", "-f", "-c", ZSH_LOOP], os.path.join(REPO, "Examples/prompt/syncbadge.zsh"),
                (1e-3, 0.3e-3)),
        "bash": (["bash", "--norc", "--noprofile", "-c", BASH_LOOP],
                 os.path.join(REPO, "Examples/prompt/syncbadge.bash"), (1e-3, 1e-3)),
    }
    res = {}
    try:
        d.add_root(d.conn(), root)
        log(f"prompt hooks: {rounds} rounds of {n} prompts per shell and variant")
        for rnd in range(rounds):
            for sh, (argv, script, _) in shells.items():
                for cd in (0, 1):
                    order = (0, 1) if rnd % 2 == 0 else (1, 0)
                    for hook in order:
                        env = dict(os.environ, SYNCBADGE_SOCKET=d.socket, HOOK=str(hook), CD=str(cd),
                                   N=str(n), SCRIPT=script, DIR1=dir1, DIR2=dir2, TERM="xterm",
                                   PATH=ctx.sbbin + os.pathsep + os.environ["PATH"])
                        r = subprocess.run(argv, env=env, capture_output=True, text=True,
                                           timeout=300, stdin=subprocess.DEVNULL)
                        if r.returncode != 0:
                            raise BenchError(f"{sh} loop failed: {r.stderr.strip()[-300:]}")
                        if hook and "?" not in r.stderr:
                            # The hook must actually show the badges, or we time a failure.
                            raise BenchError(f"{sh}: the prompt shows no badge: {r.stderr!r}")
                        res.setdefault((sh, cd, hook), []).append(float(r.stdout.strip()))
    finally:
        d.stop()
    out = []
    for sh, (_, _, limits) in shells.items():
        for cd, what in ((0, "same directory"), (1, "a cd before every prompt")):
            w, wo = median(res[(sh, cd, 1)]), median(res[(sh, cd, 0)])
            diff, limit = w - wo, limits[cd]
            out.append(Figure(f"prompt hook, {sh}, {what} (per prompt)", fmt_time(w),
                              f"no hook {fmt_time(wo)}", w / wo,
                              f"≤ +{limit * 1e3:g} ms", diff <= limit, note=f"cost {fmt_time(diff)}"))
    ctx.notes.append(
        "prompt: each shell runs, in one non-interactive process (`zsh -f -c`, `bash --norc -c`), "
        "a loop of N prompts: the hook (`_syncbadge_precmd`) then the prompt's expansion "
        "(`print -P -v`, `${PS1@P}`), against the same loop with neither the hook nor the "
        "script loaded. Not measured: the line editor, drawing, zle -F pushes, and (bash) the "
        "bridge's start. zsh: 'same directory' reads what was pushed and never waits; 'a cd before "
        "every prompt' adds a round trip (UNOBSERVE/OBSERVE/STATUS). bash: one STATUS round trip "
        "per prompt either way (bash reads a pipe a byte per system call, so an OBSERVE listing "
        "cost more than the round trip). The baseline does the cd too.")
    return out


# =============================================================================================
# 9. A burst of creates.


def fig_burst(ctx, only):
    n = 5000 if ctx.quick else 20000
    reps = 2 if ctx.quick else 3
    ensure_queue(ctx, n)
    base = ctx.shmdir("burst")   # tmpfs: the creates themselves must be cheap (see shmdir)
    sbroot = os.path.join(base, "sb")
    os.makedirs(sbroot)
    d = Daemon(ctx, "burstd")
    sb, inw = [], []
    resets = 0
    try:
        admin = d.conn()
        d.add_root(admin, sbroot)
        obs = d.conn("viewer", "burst-observer")

        def sb_one(rep):
            nonlocal resets
            bd = os.path.join(sbroot, f"b{rep}")
            os.mkdir(bd)
            # Wait until the daemon has the new directory, then observe it.
            deadline = now() + 10
            while True:
                final, _ = obs.request("STATUS", bd)
                if final.ok:
                    break
                if now() > deadline:
                    raise BenchError(f"{bd} never appeared")
                time.sleep(0.005)
            obs.request("OBSERVE", bd)
            seen = set()
            prefix, me = f"* ITEM {wire(bd)}/", f"* ITEM {wire(bd)} "
            t0 = now()
            mk = subprocess.Popen([ctx.tool("mkfiles"), "flat", bd, str(n)], stdin=subprocess.DEVNULL)
            deadline = t0 + 120
            done = False
            polling = False
            while not done:
                if polling:
                    # After a * RESET the pushes were dropped: STATUS tells the counts.
                    final, data = obs.request("STATUS", bd)
                    item = Item.from_message(data[0]) if data else None
                    done = bool(item and item.counts) and item.counts.get("pending", 0) >= n
                    t = now()
                    if not done:
                        time.sleep(0.002)
                    if now() > deadline:
                        raise BenchError("burst: daemon never counted every file")
                    continue
                line, t = obs.reader.readline(deadline)
                if line.startswith(prefix):
                    seen.add(line.split(" ", 3)[2])
                    done = len(seen) >= n
                elif line.startswith(me):
                    m = re.search(r"counts=\S*pending:(\d+)", line)
                    done = bool(m) and int(m.group(1)) >= n
                elif line.startswith("* RESET"):
                    resets += 1
                    polling = True
            elapsed = t - t0
            mk.wait(60)
            obs.request("UNOBSERVE", bd)
            # Drain the rest of the pushes before the next round.
            time.sleep(0.2)
            while obs.reader.fill(0.05):
                pass
            obs.reader.lines.clear()
            return elapsed

        def inw_one(rep):
            bd = os.path.join(base, f"inw{rep}")
            os.mkdir(bd)
            w = InotifyWait(ctx, ["-e", "create", "--format", "%f", bd])
            try:
                t0 = now()
                mk = subprocess.Popen([ctx.tool("mkfiles"), "flat", bd, str(n)], stdin=subprocess.DEVNULL)
                deadline = t0 + 120
                got = 0
                while got < n:
                    line, t = w.out.readline(deadline)
                    if "OVERFLOW" in line:
                        raise BenchError("inotifywait: queue overflow")
                    got += 1
                mk.wait(60)
                return t - t0
            finally:
                w.stop()

        log(f"burst: {n} creates, {reps} rounds")
        for rep in range(reps):
            pair = [(sb, sb_one), (inw, inw_one)]
            for acc, fn in (pair if rep % 2 == 0 else pair[::-1]):
                acc.append(fn(rep))
    finally:
        d.stop()
    s, b = median(sb), median(inw)
    note = f"{resets} * RESET during the bursts (then STATUS polling)" if resets else None
    where = "tmpfs" if base.startswith("/dev/shm") else "disk"
    return [Figure(f"burst of {n:,} creates ({where}) until all pending", fmt_time(s),
                   f"inotifywait -m {fmt_time(b)}", s / b, "≤ 1.2×", s / b <= 1.2, note=note)]


def settle_cpu(pid, step=0.1, timeout=10):
    """thread_cpu(pid) once a `step` passes with no thread of it on a CPU (so that what a
    burst queued for the store's thread counts too)."""
    deadline = now() + timeout
    last = thread_cpu(pid)
    while True:
        time.sleep(step)
        cur = thread_cpu(pid)
        if cur == last:
            return cur
        if now() > deadline:
            raise BenchError(f"pid {pid} still busy {timeout} s after a burst")
        last = cur


def mkfiles(ctx, *args, timeout=120):
    """Runs mkfiles to the end; BenchError when it fails."""
    r = subprocess.run([ctx.tool("mkfiles"), *map(str, args)], timeout=timeout, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise BenchError(f"mkfiles {' '.join(map(str, args))} failed ({r.returncode})")


def fig_write_burst(ctx, only):
    """CPU, not time: appends to files no provider reports change no state, so nothing is pushed
    to time them by. A sentinel file created in an observed directory after the burst tells when
    the daemon has read it all (events are applied in order); its CPU then settles. With --base,
    the other build's daemon runs its own burst in each round too, on a tree of its own."""
    n = 5000 if ctx.quick else 20000
    reps = 2 if ctx.quick else 4
    ensure_queue(ctx, n)
    base = ctx.shmdir("wburst")
    builds = [("sb", None)] + ([("base", ctx.base)] if ctx.base else [])
    runs = {}
    try:
        for name, bindir in builds:
            tree = os.path.join(base, name)
            os.makedirs(os.path.join(tree, "sent"))
            mkfiles(ctx, "flat", tree, n)
            d = Daemon(ctx, f"wb{name}", bindir=bindir)
            d.add_root(d.conn(), tree)
            obs = d.conn("viewer", "write-burst")
            obs.request("OBSERVE", os.path.join(tree, "sent"))
            runs[name] = (d, tree, obs, [])
        inw_tree = os.path.join(base, "inw")
        os.makedirs(inw_tree)
        mkfiles(ctx, "flat", inw_tree, n)

        def sb_one(name, rep):
            d, tree, obs, acc = runs[name]
            before = settle_cpu(d.pid)
            mkfiles(ctx, "append", tree, n)
            sentinel = os.path.join(tree, "sent", f"s{rep}")
            open(sentinel, "w").close()
            want = f"* ITEM {wire(sentinel)} "
            deadline = now() + 60
            while not obs.reader.readline(deadline)[0].startswith(want):
                pass
            after = settle_cpu(d.pid)
            acc.append((cpu_between(before, after), cpu_between(before, after, "NIO-ELT")))

        inw_cpu = []

        def inw_one(rep):
            w = InotifyWait(ctx, ["-e", "modify,close_write,create", "--format", "%f", inw_tree])
            try:
                before = thread_cpu(w.proc.pid)
                # Read while it writes, as the daemon reads: a full pipe would stall inotifywait.
                mk = subprocess.Popen([ctx.tool("mkfiles"), "append", inw_tree, str(n)], stdin=subprocess.DEVNULL)
                deadline = now() + 60
                try:
                    while mk.poll() is None:
                        if now() > deadline:
                            raise BenchError("mkfiles append did not end in time")
                        w.out.fill(0.01)
                        if any("OVERFLOW" in line for line, _ in w.out.lines):
                            raise BenchError("inotifywait: queue overflow")
                        w.out.lines.clear()
                finally:
                    if mk.poll() is None:
                        mk.kill()
                    mk.wait()
                if mk.returncode != 0:
                    raise BenchError(f"mkfiles append failed ({mk.returncode})")
                # Then the sentinel, once every append is made.
                open(os.path.join(inw_tree, f"s{rep}"), "w").close()
                while True:
                    line = w.out.readline(deadline)[0]
                    if "OVERFLOW" in line:
                        raise BenchError("inotifywait: queue overflow")
                    if line == f"s{rep}":
                        break
                after = settle_cpu(w.proc.pid)
                inw_cpu.append(cpu_between(before, after))
            finally:
                w.stop()

        log(f"write-burst: {n} appends, {reps} rounds")
        for rep in range(reps):
            order = [lambda r, b=b: sb_one(b, r) for b, _ in builds] + [inw_one]
            for fn in (order if rep % 2 == 0 else order[::-1]):
                fn(rep)
    finally:
        for d, _, _, _ in runs.values():
            d.stop()

    def per_write(xs):
        return median(xs) / 1e9 / n

    def ratio(a, b):
        return a / b if b else None

    total = per_write([t for t, _ in runs["sb"][3]])
    loop = per_write([lp for _, lp in runs["sb"][3]])
    inw = per_write(inw_cpu)
    figures = [
        Figure(f"burst of {n:,} writes, no provider: CPU per write", fmt_time(total),
               f"inotifywait -m {fmt_time(inw)}", ratio(total, inw), "reference", None),
        Figure("burst of writes: the event loop's CPU per write, share of all threads'", fmt_time(loop),
               f"all threads {fmt_time(total)}", ratio(loop, total), "reference", None),
    ]
    if ctx.base:
        btotal = per_write([t for t, _ in runs["base"][3]])
        bloop = per_write([lp for _, lp in runs["base"][3]])
        figures += [
            Figure("burst of writes: CPU per write, vs --base", fmt_time(total),
                   f"--base build {fmt_time(btotal)}", ratio(total, btotal), "reference", None),
            Figure("burst of writes: the event loop's, vs --base", fmt_time(loop),
                   f"--base build {fmt_time(bloop)}", ratio(loop, bloop), "reference", None),
        ]
    return figures


# =============================================================================================
# 10. A million files.


def million_tree(ctx):
    """The tree of 1,000,010 files in 100,001 directories (quick: a tenth of it), made once per
    run and shared by `million` and `startup`. Returns (path, directories, files)."""
    if "million" not in ctx.shared:
        top, sub = (10, 999) if ctx.quick else (100, 999)
        tree = os.path.join(ctx.tmpdir("million"), "root")
        log("million: generating the tree" + (" (quick: a tenth of it)" if ctx.quick else ""))
        t = now()
        dirs, files = make_tree(ctx, tree, top, sub, 10)
        log(f"million: {dirs:,} directories, {files:,} files in {now() - t:.1f} s")
        ctx.shared["million"] = (tree, dirs, files)
    return ctx.shared["million"]


def fig_million(ctx, only):
    tree, dirs, files = million_tree(ctx)
    if not ensure_watches(ctx, dirs):
        return [Figure("1M files: registration", "skipped", "—", None, "≤ 3 s", None,
                       note="fs.inotify.max_user_watches too low and not root")]
    reps = 1 if ctx.quick else 2
    sb, inw, rss = [], [], []
    # The first registration (unmeasured) warms the dentry and inode caches.
    sb_register(ctx, tree)
    for rep in range(reps):
        pair = ["sb", "inw"] if rep % 2 == 0 else ["inw", "sb"]
        for which in pair:
            if which == "sb":
                t, delta, after = sb_register(ctx, tree)
                sb.append(t); rss.append(after)
            else:
                inw.append(inw_register(ctx, tree)[0])
    s, b, m = median(sb), median(inw), median(rss)
    label = f"{files:,} files in {dirs:,} dirs"
    q = ctx.quick
    return [
        Figure(f"register {label}, warm", fmt_time(s), f"inotifywait -r {fmt_time(b)}", s / b,
               "≤ 3 s", None if q else s <= 3.0, note="quick run: a tenth of the size" if q else None),
        Figure(f"RSS after registering {label}", fmt_bytes(m), "—", None, "≤ 150 MB",
               None if q else m <= 150e6),
    ]


# =============================================================================================
# 11. A thousand observers while events flow.


def fig_many(ctx, only):
    total = 1000
    sample = 10
    per_block = 50 if ctx.quick else 100
    blocks = 2 if ctx.quick else 4
    base = ctx.tmpdir("many")
    root = os.path.join(base, "root")
    obsdir = os.path.join(root, "obs")
    os.makedirs(obsdir)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < total + 200:
        raise BenchError(f"ulimit -n is {soft}: 1,000 clients need more (run.sh raises it)")
    d = Daemon(ctx, "manyd")
    lat = {True: [], False: []}
    resets = 0
    conns = []
    try:
        d.add_root(d.conn(), root)
        for i in range(sample):
            c = d.conn("viewer", f"sample{i}")
            c.request("OBSERVE", obsdir)
            conns.append(c)
        sel = selectors.DefaultSelector()
        for c in conns:
            sel.register(c.fileno(), selectors.EVENT_READ, c)
        seq = 0
        log(f"1,000 observers: {blocks} blocks of {per_block} creates, alternating "
            f"{total} / {sample} observers")
        for blk in range(blocks):
            crowd = blk % 2 == 0
            others = None
            if crowd:   # the other 990, held by a C process that reads everything
                others = ctx.spawn([ctx.tool("observers"), d.socket, str(total - sample), obsdir],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                line = others.stdout.readline()
                if line.strip() != b"ready":
                    raise BenchError("observers did not get ready")
            # Let connecting (or the last block's 990 disconnects) finish before measuring,
            # and make a few unmeasured writes: the first after a change of crowd is not typical.
            time.sleep(0.5)
            try:
                for k in range(per_block + 3):
                    measured = k >= 3
                    seq += 1
                    path = os.path.join(obsdir, f"n{seq}")
                    want = f"* ITEM {wire(path)} "
                    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
                    os.close(fd)
                    t0 = now()
                    pending = set(conns)
                    deadline = t0 + 10
                    while pending:
                        left = deadline - now()
                        if left <= 0:
                            raise BenchError("1,000 observers: a push never came")
                        for key, _ in sel.select(left):
                            c = key.data
                            c.reader.fill(0)
                            for line, t in c.reader.lines:
                                if line.startswith("* RESET"):
                                    resets += 1
                                if c in pending and line.startswith(want):
                                    if measured:
                                        lat[crowd].append(t - t0)
                                    pending.discard(c)
                            c.reader.lines.clear()
            finally:
                if others:
                    others.stdin.close()
                    out = others.stdout.read().decode()
                    ctx.stop(others)
                    m = re.search(r"resets=(\d+)", out)
                    resets += int(m.group(1)) if m else 0
    finally:
        for c in conns:
            c.close()
        d.stop()
    w, wo = percentile(lat[True], 99), percentile(lat[False], 99)
    note = f"{resets} * RESET seen" if resets else None
    return [Figure(f"push p99 with 1,000 observers ({len(lat[True])} samples)", fmt_time(w),
                   f"{sample} observers {fmt_time(wo)}", w / wo, "≤ 5 ms", w <= 5e-3, note=note),
            Figure("push median with 1,000 observers", fmt_time(median(lat[True])),
                   f"{sample} observers {fmt_time(median(lat[False]))}",
                   median(lat[True]) / median(lat[False]), "reference", None)]


# =============================================================================================
# 12. LIST of a directory of 10,000 entries.


def hyperfine_median(cmd, runs, js, cwd=None):
    """hyperfine -N (no shell: the process alone; its output to /dev/null): the median, s."""
    r = subprocess.run(["hyperfine", "-N", "--warmup", "3", "--runs", str(runs), "--style", "none",
                        "--export-json", js, cmd], cwd=cwd, timeout=300, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise BenchError(f"hyperfine {cmd}: {r.stderr.strip()[-300:]}")
    with open(js) as f:
        return json.load(f)["results"][0]["median"]


def fig_list(ctx, only):
    """What a file manager does, against what a terminal user does: a file manager keeps its
    connection, so LIST is timed on a connection that said HELLO beforehand (loadgen.c: one LIST,
    read until its `OK`, repeat; the median); `ls -lU` is a whole process each time (hyperfine
    -N, output to /dev/null, the median)."""
    n = 10000
    rounds = 3 if ctx.quick else 5
    lists = 20 if ctx.quick else 100     # LISTs per round
    runs = 10 if ctx.quick else 30       # ls per round
    base = ctx.tmpdir("list")
    root = os.path.join(base, "root")
    big = os.path.join(root, "big")
    os.makedirs(big)
    r = subprocess.run([ctx.tool("mkfiles"), "flat", big, str(n)], timeout=300, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise BenchError("mkfiles flat failed")
    ls_cmd = f"ls -lU {shlex.quote(big)}"
    # Both must give the whole directory, or we would time something else.
    r = subprocess.run(["ls", "-lU", big], capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    lines = r.stdout.count(b"\n")
    if r.returncode != 0 or lines != n + 1:   # + the "total" line
        raise BenchError(f"ls -lU: exit {r.returncode}, {lines} lines for {n} files")
    d = Daemon(ctx, "listd")
    sb, ls = [], []
    try:
        admin = d.conn()
        d.add_root(admin, root)
        admin.close()
        c = d.conn("viewer", "list-check")
        final, data = c.request("LIST", big)   # unmeasured: checks the answer, warms up
        c.close()
        items = sum(1 for m in data if m.kind == "ITEM")
        if not final.ok or final.opt("count") != str(n) or items != n:
            raise BenchError(f"LIST {big}: {final}, {items} ITEM lines for {n} files")
        log(f"LIST of {n:,} entries: {rounds} rounds of {lists} LISTs and {runs} ls -lU")
        for rnd in range(rounds):
            for which in (("sb", "ls") if rnd % 2 == 0 else ("ls", "sb")):
                if which == "sb":
                    v = loadgen(ctx, d.socket, "daemon", ["LIST", big], 1, lists, 1)
                    sb.append(v["rtt_median_us"] * 1e-6)
                else:
                    ls.append(hyperfine_median(ls_cmd, runs, os.path.join(base, f"h{rnd}.json")))
    finally:
        d.stop()
    s, b = median(sb), median(ls)
    ctx.notes.append("list-10k: LIST on a connection that said HELLO before (a file manager keeps its "
                     "connection), read until OK count=10000; `ls -lU` timed as a whole process "
                     "(a terminal user starts it), output to /dev/null")
    return [Figure(f"LIST of {n:,} entries, whole answer (median)", fmt_time(s),
                   f"ls -lU {fmt_time(b)}", s / b, "≤ 0.5×", s / b <= 0.5)]


# =============================================================================================
# 13. Start-up with a million entries stored.


def wait_stored(d, tree):
    """Until every change the daemon made to its tree so far is in its store: a provider's SET
    is answered once a group commit holding it has ended, and a commit takes every change the
    tree has at its start, so the OK of a SET made now is a barrier. (It sets one file `unknown`,
    which it is already.)"""
    p = d.conn("provider", "bench-store")
    try:
        final, _ = p.request("SET", "unknown", os.path.join(tree, "file00.txt"), timeout=300)
        if not final.ok:
            raise BenchError(f"SET (the store barrier): {final}")
    finally:
        p.close()


def stored_entries(d):
    """Entries in a stopped daemon's store (read-only)."""
    import sqlite3
    db = sqlite3.connect(f"file:{os.path.join(d.state_dir, 'state.sqlite')}?mode=ro", uri=True, timeout=10)
    try:
        return db.execute("SELECT count(*) FROM entry").fetchone()[0]
    finally:
        db.close()


def stop_stored(d, tree, want):
    """Stops a daemon with SIGTERM once its store holds everything, and checks it does."""
    wait_stored(d, tree)
    rc = d.stop(timeout=120)
    if rc == -signal.SIGKILL:
        raise BenchError("syncbadged did not stop within 120 s of SIGTERM (killed)")
    n = stored_entries(d)
    if n < want:
        raise BenchError(f"only {n:,} of {want:,} entries stored after SIGTERM")
    return n


def sb_restart(ctx, ddir, tree, want):
    """Starts the daemon on the state of `ddir` (its roots and entries stored) and times, from
    the spawn, (1) the first `ITEM` of `STATUS <tree>` that is not `outside` (connecting with
    retries: the socket may not be there yet, and a daemon that has not loaded its roots yet
    answers `outside`), (2) the end of the rescan: `ROOTS` lists the root without `scanning=1`
    (polled every 10 ms). Stops it again once its store is written. Returns (answer, rescan,
    HELLO answered, answers before the ITEM)."""
    d = Daemon(ctx, dir=ddir, wait=False)
    c, early = None, 0
    try:
        t0 = d.t_spawn
        deadline = t0 + 120
        while c is None:
            if d.proc.poll() is not None:
                raise BenchError(d.exited())
            try:
                c = Conn(d.socket, "viewer", "startup")
            except OSError:   # no socket yet, or not listening yet
                if now() > deadline:
                    raise BenchError("restart: no connection within 120 s")
                time.sleep(0.002)
        hello = now() - t0
        while True:
            final, data = c.request("STATUS", tree, timeout=max(1.0, deadline - now()))
            t = now()
            if final.ok and data and data[0].kind == "ITEM" and data[0].arg(1) != "outside":
                break
            early += 1
            if now() > deadline:
                raise BenchError(f"restart: STATUS {tree}: {final} {data[:1]}")
            time.sleep(0.002)
        answer = t - t0
        while True:
            _, data = c.request("ROOTS", timeout=max(1.0, deadline + 300 - now()))
            t = now()
            mine = [m for m in data if m.kind == "ROOT" and m.arg(0) == tree]
            if mine and mine[0].opt("scanning") != "1":
                break
            if now() > deadline + 300:
                raise BenchError("restart: still scanning after 420 s")
            time.sleep(0.01)
        rescan = t - t0
        stop_stored(d, tree, want)
        return answer, rescan, hello, early
    finally:
        if c:
            c.close()
        d.stop()   # no-op when stopped already


def fig_startup(ctx, only):
    tree, dirs, files = million_tree(ctx)
    label = f"{files:,} files in {dirs:,} dirs"
    q = ctx.quick
    if not ensure_watches(ctx, dirs):
        return [Figure(f"start with {label} stored, until STATUS", "skipped", "—", None, "≤ 1 s", None,
                       note="fs.inotify.max_user_watches too low and not root")]
    reps = 1 if q else 3
    # Registered once (not measured; it also warms the caches), stored, stopped.
    log(f"startup: registering {label} on a state directory of its own")
    d = Daemon(ctx, "startd")
    ddir = d.dir
    try:
        c = d.conn()
        d.add_root(c, tree, timeout=600)
        d.wait_idle(c, timeout=300)
        c.close()
        stored = stop_stored(d, tree, dirs + files - 1)   # the root itself may have no row
    finally:
        d.stop()
    log(f"startup: {stored:,} entries stored; {reps} restarts, interleaved with inotifywait -r")
    answer, rescan, inw, hello, early = [], [], [], [], []
    for rep in range(reps):
        for which in (("sb", "inw") if rep % 2 == 0 else ("inw", "sb")):
            if which == "sb":
                a, r, h, e = sb_restart(ctx, ddir, tree, dirs + files - 1)
                answer.append(a); rescan.append(r); hello.append(h); early.append(e)
            else:
                inw.append(inw_register(ctx, tree)[0])
    s, r, b = median(answer), median(rescan), median(inw)
    qnote = "quick run: a tenth of the size" if q else None
    notes = [f"{stored:,} entries stored; HELLO answered {fmt_time(median(hello))} after the spawn"]
    if any(early):
        notes.append(f"STATUS answered outside or ERR {max(early)} times at most before the first ITEM")
    return [
        Figure(f"start with {stored:,} entries stored, until STATUS <root> answers", fmt_time(s),
               f"inotifywait -r {fmt_time(b)}", s / b, "≤ 1 s", None if q else s <= 1.0,
               note="; ".join(notes + ([qnote] if qnote else []))),
        Figure(f"start-up rescan of {label} (until ROOTS: no scanning=1)", fmt_time(r),
               f"inotifywait -r {fmt_time(b)}", r / b, "≤ 1×", None if q else r / b <= 1.0, note=qnote),
    ]


# =============================================================================================
# 14. Syncthing: the adapter's `synced` against Syncthing's own word that the peer has the file.

ST_KEY = "syncbadge-bench-key-0123456789"
# What a REST call to Syncthing may raise (URLError and HTTPError are OSErrors; a bad answer's
# JSON a ValueError; a connection cut mid-answer an HTTPException).
ST_ERRORS = (OSError, ValueError, http.client.HTTPException)
# Loopback only: never through an http_proxy of the environment.
_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_st_ports = set()


def _free_port():
    """A loopback port nobody listens on, never one handed out before in this run (the kernel
    may give a just released port to the next bind)."""
    while True:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        if port not in _st_ports:
            _st_ports.add(port)
            return port


class Syncthing:
    """One real Syncthing on loopback, set up as the adapter's tests set it up
    (Tests/EndToEndTests/Support/SyncthingHarness.swift): a generated home whose config.xml is
    edited before the first start (GUI and listen address on 127.0.0.1, a fixed API key, no
    discovery, relays, NAT, usage or crash reports, upgrades; progress every second)."""

    def __init__(self, ctx, name):
        self.ctx = ctx
        self.base = ctx.tmpdir(f"st{name}")
        self.home = os.path.join(self.base, "home")
        self.folder = os.path.join(self.base, "folder")
        os.makedirs(self.folder)
        self.gui_port, self.listen_port = _free_port(), _free_port()
        # --skip-port-probing: the default ports in config.xml even when a Syncthing of the
        # user's holds them, so that the edits below find what they replace.
        subprocess.run(["syncthing", "generate", f"--home={self.home}", "--no-default-folder", "--skip-port-probing"],
                       env=dict(os.environ, HOME=self.base), stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True, timeout=60)
        config = os.path.join(self.home, "config.xml")
        with open(config) as f:
            xml = f.read()
        gui = "<address>127.0.0.1:8384</address>"
        if gui not in xml:
            raise BenchError(f"no {gui} in the generated {config}")
        xml = xml.replace(gui, f"<address>127.0.0.1:{self.gui_port}</address>")
        settings = {"apikey": ST_KEY, "listenAddress": f"tcp://127.0.0.1:{self.listen_port}",
                    "globalAnnounceEnabled": "false", "localAnnounceEnabled": "false", "relaysEnabled": "false",
                    "natEnabled": "false", "crashReportingEnabled": "false", "urAccepted": "-1",
                    "autoUpgradeIntervalH": "0", "progressUpdateIntervalS": "1", "startBrowser": "false"}
        for k, v in settings.items():
            xml = re.sub(f"<{k}>[^<]*</{k}>", f"<{k}>{v}</{k}>", xml)
        with open(config, "w") as f:
            f.write(xml)
        device = re.search(r'<device id="([^"]+)"', xml)
        if device is None:
            raise BenchError(f"no device id in {config}")
        self.device_id = device.group(1)
        self.proc = None
        self.child = None

    def start(self):
        log = open(os.path.join(self.base, "syncthing.log"), "w")
        self.proc = self.ctx.spawn(["syncthing", "serve", f"--home={self.home}", "--no-browser", "--no-restart",
                                    "--no-upgrade"], env=dict(os.environ, HOME=self.base, STNODEFAULTFOLDER="1"),
                                   stdout=log, stderr=subprocess.STDOUT)
        log.close()

    def wait_serving(self, timeout=60):
        """Until its REST API answers (no event says so: asked every 50 ms). 1.19 forks a
        monitor, which is what we started: its child, the real Syncthing, is recorded too, so
        that run.sh's clean-up stops it if we cannot."""
        deadline = now() + timeout
        while True:
            try:
                self.rest("GET", "/rest/system/status", timeout=5)
                break
            except ST_ERRORS:
                if self.proc.poll() is not None or now() > deadline:
                    raise BenchError(f"syncthing in {self.base} did not start")
                time.sleep(0.05)
        children = self._children()
        if children:
            self.child = children[0]
            self.ctx._record("pids", str(self.child))

    def _children(self):
        pid = self.proc.pid
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                return [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            return []

    def rest(self, method, path, body=None, timeout=30):
        """A REST call, the key in a header (never on a command line)."""
        req = urllib.request.Request(f"http://127.0.0.1:{self.gui_port}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"X-API-Key": ST_KEY, "Content-Type": "application/json"})
        with _LOCAL.open(req, timeout=timeout) as r:
            data = r.read()
        return json.loads(data) if data else None

    def share(self, folder_id, peer, dials):
        """The peer and the shared folder in one PUT /rest/config (separate calls race: the
        devices connect before the folder exists). Only the side configured last dials."""
        config = self.rest("GET", "/rest/config")
        device = dict(config["defaults"]["device"], deviceID=peer.device_id, name=os.path.basename(peer.base),
                      addresses=[f"tcp://127.0.0.1:{peer.listen_port}"] if dials else ["dynamic"])
        folder = dict(config["defaults"]["folder"], id=folder_id, label=folder_id, path=self.folder,
                      fsWatcherDelayS=1, pullerPauseS=2,
                      devices=[{"deviceID": d, "introducedBy": "", "encryptionPassword": ""}
                               for d in (self.device_id, peer.device_id)])
        config["devices"] = config.get("devices", []) + [device]
        config["folders"] = config.get("folders", []) + [folder]
        config["options"]["reconnectionIntervalS"] = 1
        self.rest("PUT", "/rest/config", config)

    def stop(self):
        """SIGTERM to the monitor's child stops both in well under a second; one to the
        monitor takes about 9 s. So the child first, and the monitor only if it stays."""
        if self.proc is None:
            return
        children = self._children()
        for child in children:
            try:
                os.kill(child, signal.SIGTERM)
            except OSError:
                pass
        if children:
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        self.ctx.stop(self.proc, timeout=10)
        self.proc = None


class SyncthingEvents:
    """A long-poll on one event type of a Syncthing, in a thread: each event with the time it
    arrived here (the adapter's own long-poll sees it no earlier)."""

    def __init__(self, st, events):
        self.st, self.events = st, events
        self.seen = []                     # (arrival time, type, data)
        self.cond = threading.Condition()
        self.stopped = False
        got = st.rest("GET", f"/rest/events?events={events}&since=0&timeout=0") or []
        self.since = max((e["id"] for e in got), default=0)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopped:
            try:
                got = self.st.rest("GET", f"/rest/events?events={self.events}&since={self.since}&timeout=2",
                                   timeout=30) or []
            except ST_ERRORS:
                if self.stopped:
                    return
                time.sleep(0.1)
                continue
            t = now()
            with self.cond:
                for e in got:
                    self.since = max(self.since, e["id"])
                    self.seen.append((t, e.get("type"), e.get("data") or {}))
                self.cond.notify_all()

    def wait(self, what, match, deadline, after):
        """The arrival time of the first event that arrived at or after `after` and `match`es
        (type, data); waits for it until `deadline`."""
        with self.cond:
            while True:
                for t, kind, data in self.seen:
                    if t >= after and match(kind, data):
                        return t
                left = deadline - now()
                if left <= 0:
                    raise BenchError(f"no {self.events} event for {what} in time")
                self.cond.wait(left)

    def stop(self):
        self.stopped = True
        self.thread.join(5)


def stop_adapter_figure(ctx, conns, proc, d):
    """The end of an adapter's figure, whatever happened: its connections, the adapter (`proc`),
    then the daemon (each None when the figure failed before starting it)."""
    for c in conns:
        c.close()
    if proc:
        ctx.stop(proc)
    if d:
        d.stop()


def fig_syncthing(ctx, only):
    adapter = os.path.join(ctx.sbbin, "syncbadge-syncthing")
    if not os.access(adapter, os.X_OK):
        raise BenchError(f"no {adapter} (make release builds it)")
    if not shutil.which("syncthing"):
        raise BenchError("syncthing is not installed (apt-get install syncthing)")
    n = 5 if ctx.quick else 20
    sts, d, proc, events, conns = [], None, None, None, []
    try:
        a = Syncthing(ctx, "a")
        sts.append(a)
        b = Syncthing(ctx, "b")
        sts.append(b)
        a.start()
        b.start()
        a.wait_serving()
        b.wait_serving()
        a.share("bench", b, dials=False)
        b.share("bench", a, dials=True)
        d = Daemon(ctx, "std")
        proc = d.adapter([adapter, "--syncthing-home", a.home, "--log-level", "warning"])
        # The adapter adds and claims A's folder and reconciles it: its root turns synced.
        admin = d.conn()
        conns.append(admin)
        d.wait_status(admin, a.folder, lambda item: item.arg(1) == "synced", proc, 60, "A's folder never synced")
        obs = d.conn("viewer", "bench-observer")
        conns.append(obs)
        final, _ = obs.request("OBSERVE", a.folder)
        if not final.ok:
            raise BenchError(f"OBSERVE: {final}")
        events = SyncthingEvents(a, "FolderCompletion,RemoteIndexUpdated")
        log(f"Syncthing: {n} new files on A, each until A's badge says synced and until A reports B complete")
        sb, st, extra, own = [], [], [], []
        total = 0
        for i in range(n):
            path = os.path.join(a.folder, f"f{i}")
            size = 1000 + i
            total += size   # the folder's global size once B has this file (sizes grow: unique)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, bytes(size))
            os.close(fd)
            t0 = now()
            want = f"* ITEM {wire(path)} synced "
            deadline = t0 + 60
            while True:
                line, t = obs.reader.readline(deadline)
                if line.startswith(want):
                    t_sb = t
                    break
            t_st = events.wait(f"f{i} complete", lambda k, e: k == "FolderCompletion" and e.get("device") == b.device_id
                               and e.get("folder") == "bench" and e.get("completion") == 100
                               and e.get("globalBytes", 0) >= total, t0 + 60, after=t0)
            # The news itself: B's index update after the write (B has the file), as it reached
            # this long-poll; the adapter's own long-poll may hear it a little before or after.
            t_news = events.wait(f"f{i} at B", lambda k, e: k == "RemoteIndexUpdated" and e.get("device") == b.device_id
                                 and e.get("folder") == "bench", t0 + 60, after=t0)
            sb.append(t_sb - t0)
            st.append(t_st - t0)
            extra.append(t_sb - t_st)
            own.append(t_sb - t_news)
    except (OSError, ValueError, KeyError, subprocess.SubprocessError, http.client.HTTPException) as e:
        raise BenchError(f"Syncthing set-up or run: {e!r}")
    finally:
        if events:
            events.stop()
        stop_adapter_figure(ctx, conns, proc, d)
        for st_ in sts:
            st_.stop()
    sm, stm, em, om = median(sb), median(st), median(extra), median(own)
    # FolderCompletion for a peer comes from Syncthing's summary timer (every 2 s), so the first
    # row is met by a wide margin whatever the adapter does; the second row holds the adapter
    # to the same 50 ms from the event it acts on.
    return [
        Figure(f"Syncthing: write on A → A's badge synced, median ({n} new files)", fmt_time(sm),
               f"FolderCompletion 100 for B {fmt_time(stm)}", sm / stm, "adapter ≤ +50 ms", em <= 0.05,
               note=f"badge minus FolderCompletion per file: median {em * 1e3:+.1f} ms, max {max(extra) * 1e3:+.1f} ms"),
        Figure("Syncthing: B's RemoteIndexUpdated at A → A's badge synced, median", f"{om * 1e3:+.1f} ms",
               "(the event the adapter acts on)", None, "≤ +50 ms", om <= 0.05,
               note=f"per file from {min(own) * 1e3:+.1f} to {max(own) * 1e3:+.1f} ms"),
    ]


def fig_git(ctx, only):
    """syncbadge-git on a generated working tree of 100,000 files in 10,000 directories, its
    remote a bare repository on the same disk: after `git commit` of K edited files, the time
    until every one of them shows `pending` "not pushed"; after `git push`, until every one
    shows `synced`. Baseline: `git status` alone on the same tree, timed in the same rounds."""
    adapter = os.path.join(ctx.sbbin, "syncbadge-git")
    if not os.access(adapter, os.X_OK):
        raise BenchError(f"no {adapter} (make release builds it)")
    if not shutil.which("git"):
        raise BenchError("git is not installed (apt-get install git)")
    # 1 + 99 × 101 = 10,000 directories of 10 files (quick: a tenth, and no MET/MISSED).
    top, sub, per_dir = (9, 100, 10) if ctx.quick else (99, 100, 10)
    rounds, k = (3, 10) if ctx.quick else (7, 100)
    base = ctx.tmpdir("git")
    home = os.path.join(base, "home")
    os.makedirs(home)
    with open(os.path.join(home, ".gitconfig"), "w") as f:
        f.write("[user]\n\tname = bench\n\temail = bench@example.invalid\n[init]\n\tdefaultBranch = main\n")
    env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"), GIT_CONFIG_NOSYSTEM="1", LANG="C")
    repo = os.path.join(base, "repo")
    remote = os.path.join(base, "remote.git")

    def git(*args, cwd=repo):
        r = subprocess.run(["git", "-C", cwd, *args], env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=900)
        if r.returncode != 0:
            raise BenchError(f"git {' '.join(args)}: {r.stderr.decode(errors='replace').strip()}")
        return r.stdout

    dirs, nfiles = make_tree(ctx, repo, top, sub, per_dir)
    log(f"git: a working tree of {nfiles:,} files in {dirs:,} directories, committed and pushed to a bare remote")
    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "the tree")
    git("init", "-q", "--bare", remote, cwd=base)
    git("remote", "add", "origin", remote)
    git("push", "-q", "-u", "origin", "main")
    # The files edited each round: spread over the tree, one per directory.
    subdirs = [os.path.join(repo, f"d{i:04d}", f"s{j:04d}") for i in range(top) for j in range(sub)]
    step = max(1, len(subdirs) // k)
    targets = [os.path.join(d, "file03.txt") for d in subdirs[::step][:k]]
    d, proc, conns = None, None, []
    commit_t, push_t, status_t = [], [], []
    try:
        d = Daemon(ctx, "gitd")
        t0 = now()
        proc = d.adapter([adapter, "--log-level", "warning", repo], env=env)
        # The adapter adds the root (the daemon indexes it), lists it, and reconciles it with git.
        admin = d.conn()
        conns.append(admin)
        d.wait_status(admin, repo, lambda item: item.arg(1) == "synced" and "unknown:" not in (item.opt("counts") or ""),
                      proc, 900, "the working tree never turned synced")
        first = now() - t0
        obs = d.conn("viewer", "bench-git")
        conns.append(obs)
        for dd in sorted({os.path.dirname(t) for t in targets}):
            final, _ = obs.request("OBSERVE", dd, list="0")
            if not final.ok:
                raise BenchError(f"OBSERVE {dd}: {final}")
        want = {wire(t): t for t in targets}

        def wait_all(what, match, deadline):
            """Until every target's latest `* ITEM` matches; the receive time of the last."""
            left, last = set(want), None
            while left:
                line, t = obs.reader.readline(deadline)
                if not line.startswith("* ITEM "):
                    continue
                m = codec.parse_message(line.encode())
                key = wire(m.fields[0])
                if key not in want:
                    continue
                if match(m.arg(1), m.opt("message") or ""):
                    left.discard(key)
                    last = t
                else:
                    left.add(key)
            return last

        log(f"git: {rounds} rounds of {k} files edited, committed, pushed; git status timed beside them")
        for r in range(rounds):
            for t in targets:
                with open(t, "a") as f:
                    f.write(f"round {r}\n")
            wait_all("modified", lambda st, msg: st == "pending" and msg == "modified", now() + 60)
            git("commit", "-q", "-a", "-m", f"round {r}")
            tc = now()
            commit_t.append(wait_all("not pushed", lambda st, msg: st == "pending" and msg.startswith("not pushed"), tc + 60) - tc)
            git("push", "-q")
            tp = now()
            push_t.append(wait_all("synced", lambda st, msg: st == "synced", tp + 60) - tp)
            ts = now()
            git("status", "--porcelain")
            status_t.append(now() - ts)
    except (OSError, ValueError, subprocess.SubprocessError, codec.ProtocolError) as e:
        raise BenchError(f"git set-up or run: {e!r}")
    finally:
        stop_adapter_figure(ctx, conns, proc, d)
    cm, pm, sm = median(commit_t), median(push_t), median(status_t)
    size = f"{nfiles:,} files, {dirs:,} dirs"
    return [
        Figure(f"git: commit → {k} badges 'not pushed', median ({size})", fmt_time(cm), f"git status {fmt_time(sm)}",
               cm / sm, "≤ 2× git status", None if ctx.quick else cm <= 2 * sm,
               note=f"per round from {fmt_time(min(commit_t))} to {fmt_time(max(commit_t))}; the first reconciliation "
                    f"(ADD-ROOT, listing, git status) took {fmt_time(first)}"),
        Figure(f"git: push → {k} badges synced, median ({size})", fmt_time(pm), f"git status {fmt_time(sm)}",
               pm / sm, "≤ 2× git status", None if ctx.quick else pm <= 2 * sm,
               note=f"per round from {fmt_time(min(push_t))} to {fmt_time(max(push_t))}"),
    ]


# =============================================================================================

FIGURES = [
    # (names it answers to, function)
    (("register", "memory"), fig_register),
    (("push-latency",), fig_push_latency),
    (("move-push",), fig_move_push),
    (("status-rtt", "pipelined"), fig_status),
    (("idle",), fig_idle),
    (("cli-status",), fig_cli),
    (("prompt",), fig_prompt),
    (("burst",), fig_burst),
    (("write-burst",), fig_write_burst),
    (("million",), fig_million),
    (("many-observers",), fig_many),
    (("list-10k",), fig_list),
    (("startup",), fig_startup),
    (("syncthing",), fig_syncthing),
    (("git",), fig_git),
    (("rclone",), fig_rclone),
    (("rclone-queue",), fig_rclone_queue),
]
ALL_NAMES = [n for names, _ in FIGURES for n in names]


def machine():
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem = int(f.readline().split()[1]) // 1024
    return f"nproc {os.cpu_count()}, {cpu}, {mem:,} MiB RAM, kernel {platform.release()}"


def table(rows):
    head = ["figure", "syncbadge", "baseline", "ratio", "target", "result"]
    cells = [head] + [r.cells() for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    text = "\n".join("  ".join(c[i].ljust(widths[i]) for i in range(len(head))) for c in cells[:1])
    text += "\n" + "  ".join("-" * w for w in widths) + "\n"
    text += "\n".join("  ".join(c[i].ljust(widths[i]) for i in range(len(head))) for c in cells[1:])
    md = "| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n"
    md += "\n".join("| " + " | ".join(c.replace("|", "\\|") for c in r.cells()) + " |" for r in rows)
    return text, md


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--tools", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--command", default="")
    ap.add_argument("--base", default=None)
    a = ap.parse_args()
    only = set(filter(None, a.only.split(","))) or set(ALL_NAMES)
    unknown = only - set(ALL_NAMES)
    if unknown:
        print(f"unknown figure {', '.join(sorted(unknown))}; names: {', '.join(ALL_NAMES)}")
        return 64

    # Ctrl-C and SIGTERM (run.sh's trap sends it) end us through the same clean-up. SIGINT is
    # set explicitly: run.sh starts us in the background, where bash makes us ignore it.
    def on_signal(sig, frame):
        # Once: a second signal must not interrupt the clean-up itself.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    ctx = Ctx(a.work, a.tools, a.bin, a.quick, base=a.base)
    header = [f"SyncBadge benchmarks, {time.strftime('%Y-%m-%d %H:%M:%S %z')}",
              f"machine: {machine()}",
              f"command: {a.command or ' '.join(map(shlex.quote, sys.argv))}",
              f"binaries: {a.bin}" + (" (quick run: smaller sizes)" if a.quick else "")
              + (f"; --base {a.base}" if a.base else "")]
    for h in header:
        print(h)
    rows, failures = [], []
    t_start = now()
    try:
        for names, fn in FIGURES:
            wanted = only.intersection(names)
            if not wanted:
                continue
            t = now()
            print(f"[{'/'.join(names)}]", flush=True)
            try:
                got = fn(ctx, wanted)
            except BenchError as e:
                failures.append(f"{'/'.join(names)}: {e}")
                print(f"  !! {e}", flush=True)
                ctx.cleanup()
                continue
            for r in got:
                rows.append(r)
                print(f"  = {r.name}: {r.value} vs {r.baseline}" + (f" ({r.note})" if r.note else ""),
                      flush=True)
            print(f"  ({now() - t:.1f} s)", flush=True)
    except KeyboardInterrupt:
        print("\ninterrupted: cleaning up")
        ctx.cleanup()
        return 130
    finally:
        ctx.cleanup()
    text, md = table(rows)
    notes = [f"{r.name}: {r.note}" for r in rows if r.note] + ctx.notes
    print()
    print(text)
    for n in notes:
        print(f"note: {n}")
    for f in failures:
        print(f"FAILED: {f}")
    print(f"total {now() - t_start:.0f} s; written to {a.out}")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        f.write(f"# {header[0]}\n\n")
        for h in header[1:]:
            f.write(f"- {h}\n")
        f.write("\n" + md + "\n\n")
        for n in notes:
            f.write(f"- note: {n}\n")
        for fl in failures:
            f.write(f"- FAILED: {fl}\n")
        f.write(f"\nTotal {now() - t_start:.0f} s.\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

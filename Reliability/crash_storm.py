"""crash-storm: kill -9 during a storm of file events while an engine reports `synced`.

What an acknowledged SET promises (PROTOCOL.md, "The state rules"): it survives kill -9,
and a file written before the SET makes the SET stale. So after any crash and restart:

- a file shown `synced` has exactly the content some engine SET was about (the last acked
  one, or one still in flight at the kill: its outcome is unknown, either is fine);
- a file whose last acked SET was for its current content (same inode, size, mtime, ctime
  and hash, so nobody wrote it since) is still `synced`;
- the store opens cleanly (the daemon starts and answers, SQLite's integrity_check is ok,
  nothing was moved aside as corrupt).
"""

import os
import random
import signal
import subprocess
import threading

from harness import (CaseFail, Closed, Daemon, Timeout, case, check, file_hash, identity, now,
                     sqlite_integrity, wait_root_ready)

NDIRS = 10
NAMES = 1500          # the writer's namespace: f00000..f01499
PRECREATED = 1000     # the rest appear during the storm
RATE = 5000           # writer operations per second (each is open+truncate+write+close)
BATCH = 32            # the engine pipelines this many STATUS, then this many SET


def path_of(root, i):
    return os.path.join(root, f"d{i % NDIRS:02d}", f"f{i:05d}")


def stored_identity(db, root, path):
    """The identity digest the store recorded for `path` (sqlite3 CLI), for failure reports."""
    import shutil
    if not shutil.which("sqlite3"):
        return "?"
    rel = os.path.relpath(path, root).encode().hex()
    r = subprocess.run(["sqlite3", "-readonly", db,
                        f"select gen, identity, state from entry where path = X'{rel}'"],
                       capture_output=True, text=True, timeout=30)
    return r.stdout.strip() or r.stderr.strip()


def one_round(ctx, it, kill_after, wseed, rng):
    root = ctx.mkdir(f"root{it}")
    for d in range(NDIRS):
        os.mkdir(os.path.join(root, f"d{d:02d}"))
    for i in range(PRECREATED):
        with open(path_of(root, i), "w") as f:
            f.write(f"{i}:0:initial")

    daemon = Daemon(ctx, name=f"round{it}").start()
    admin = daemon.admin(root)
    engine = daemon.engine(root)

    acked = {}       # path -> (hash, identity) of the last SET answered OK (not stale)
    history = {}     # path -> [(gen, identity, outcome)] of every SET, for failure reports
    inflight = {}    # path -> [(hash, identity, tag)] sent, not yet answered
    errors = []
    sets = stale = 0

    writer = subprocess.Popen([ctx.helpers["storm"], "write", root, str(NDIRS), str(NAMES), str(RATE), str(wseed)],
                              stdout=subprocess.PIPE, text=True)
    ctx.defer(lambda: writer.poll() is None and writer.kill())
    killed_at = {}

    def kill():
        killed_at["t"] = now()
        os.kill(daemon.pid, signal.SIGKILL)
    start = now()
    timer = threading.Timer(kill_after, kill)
    timer.start()

    # The engine: read each file's gen, then its content, then report it synced with that
    # gen. Pipelined, so kill points fall inside group commits too.
    try:
        while True:
            check(now() - start < kill_after + 20, "engine still connected 20 s after the kill")
            paths = [path_of(root, i) for i in rng.sample(range(NAMES), BATCH)]
            tags = [engine.send("STATUS", p) for p in paths]
            reads = []
            for p, tag in zip(paths, tags):
                a = engine.answer(tag)
                if not a.ok:
                    check(a.code == "not-found", f"STATUS {p}: {a!r}")
                    continue
                item = a.data[0]
                try:
                    st1 = os.stat(p)
                    h = file_hash(p)
                    st2 = os.stat(p)
                except FileNotFoundError:
                    continue
                if identity(st1) != identity(st2):
                    continue          # written while we read: content ambiguous, skip
                reads.append((p, h, identity(st1), item.opts["gen"]))
            sent = []
            for p, h, ident, gen in reads:
                tag = engine.send("SET", "synced", p, f"gen={gen}")
                inflight.setdefault(p, []).append((h, ident, tag))
                sent.append((p, tag))
            for p, tag in sent:
                a = engine.answer(tag)
                entry = next(e for e in inflight[p] if e[2] == tag)
                inflight[p].remove(entry)
                sets += 1
                history.setdefault(p, []).append((a.final.opts.get("gen"), entry[1], "stale" if a.final.opts.get("stale") else a.final.kind))
                if not a.ok:
                    errors.append(f"SET synced {p}: {a!r}")
                elif a.final.opts.get("stale") == "1":
                    stale += 1
                else:
                    acked[p] = entry[:2]
    except (Closed, OSError):
        pass              # the daemon died under us: what is in flight stays unknown
    except CaseFail as e:
        if "closed" not in str(e) and "no answer" not in str(e):
            raise
        if "no answer" in str(e) and daemon.alive():
            raise
    timer.join()
    check("t" in killed_at, "kill timer did not fire")
    check(daemon.wait_exit(10) is not None, "daemon did not die after SIGKILL")
    writer.send_signal(signal.SIGTERM)
    out, _ = writer.communicate(timeout=20)
    wstats = dict(kv.split("=") for kv in out.split())
    wrate = float(wstats["ops"]) / max(float(wstats["secs"]), 1e-3)
    check(not errors, f"round {it}: unexpected SET answers: {errors[:3]}")

    # Restart on the same state dir and look at every file.
    daemon.start()
    viewer = daemon.client("viewer")
    wait_root_ready(viewer, root, timeout=60)
    integrity = sqlite_integrity(daemon.db)
    check(integrity in (None, "ok"), f"round {it}: integrity_check after restart: {integrity}")
    aside = [n for n in os.listdir(daemon.state_dir)
             if n.startswith("state.sqlite") and n not in ("state.sqlite", "state.sqlite-wal", "state.sqlite-shm", "state.sqlite-journal")]
    check(not aside, f"round {it}: the store was moved aside after the crash: {aside}")

    wrong, lost, synced, kept = [], [], 0, 0
    paths = [path_of(root, i) for i in range(NAMES) if os.path.exists(path_of(root, i))]
    for k in range(0, len(paths), 200):
        chunk = paths[k:k + 200]
        tags = [viewer.send("STATUS", p) for p in chunk]
        for p, tag in zip(chunk, tags):
            a = viewer.answer(tag)
            check(a.ok and a.data, f"round {it}: STATUS {p} after restart: {a!r}")
            state = a.data[0].state
            cur_ident, cur_hash = identity(os.stat(p)), file_hash(p)
            allowed = {h for h, _, _ in inflight.get(p, [])}
            if p in acked:
                allowed.add(acked[p][0])
            if state == "synced":
                synced += 1
                if cur_hash not in allowed:
                    wrong.append(f"{p} synced gen={a.data[0].opts.get('gen')} but its content is not what any SET was "
                                 f"for: now (ino,size,mtime,ctime)={cur_ident}, stored {stored_identity(daemon.db, root, p)}, "
                                 f"engine's last SETs (gen, identity read, outcome): {history.get(p, [])[-2:]}, "
                                 f"in flight: {[(e[1]) for e in inflight.get(p, [])]}")
            if p in acked and acked[p] == (cur_hash, cur_ident):
                kept += 1
            if p in acked and acked[p] == (cur_hash, cur_ident) and state != "synced":
                lost.append(f"{p} is {state} but its acked SET was for the current content")
    check(not wrong, f"round {it} (kill at {kill_after:.2f}s, writer seed {wseed}): {len(wrong)} files synced with "
                     f"content no SET acknowledged, e.g. {wrong[:3]}")
    check(not lost, f"round {it} (kill at {kill_after:.2f}s, writer seed {wseed}): {len(lost)} acknowledged SETs lost, "
                    f"e.g. {lost[:3]}")
    daemon.stop()
    return {"acked": len(acked), "sets": sets, "stale": stale, "inflight": sum(len(v) for v in inflight.values()),
            "synced": synced, "kept": kept, "wrate": wrate}


@case("crash-storm", "kill -9 mid-storm while an engine sets files synced; restart; no wrong or lost synced state")
def run(ctx):
    rounds = 3 if ctx.quick else 20
    rng = random.Random(ctx.seed)
    results, failures = [], []
    for it in range(rounds):
        kill_after = rng.uniform(0.3, 3.0)
        try:
            results.append(one_round(ctx, it, kill_after, rng.randrange(1, 1 << 30), rng))
        except CaseFail as e:
            # Keep going: how many rounds fail says as much as the first failure does.
            failures.append(str(e))
            for d in ctx.daemons:
                if d.alive():
                    d.stop()
    if failures:
        raise CaseFail(f"{len(failures)} of {rounds} rounds failed (seed {ctx.seed}): " + " ||| ".join(failures[:3]))
    rates = [r["wrate"] for r in results]
    return (f"{rounds} kills (seed {ctx.seed}); writer {min(rates):.0f}-{max(rates):.0f} writes/s; "
            f"{sum(r['sets'] for r in results)} SETs answered ({sum(r['stale'] for r in results)} stale), "
            f"{sum(r['inflight'] for r in results)} in flight at the kills; "
            f"{sum(r['synced'] for r in results)} synced files checked against acked content, "
            f"{sum(r['kept'] for r in results)} acked-and-unchanged files checked still synced"
            + ("" if sqlite_integrity("/dev/null") is not None else "; sqlite3 CLI missing, no integrity_check"))

"""soak: a long run of churn through the protocol; nothing may grow without bound.

A writer churns files and directories (create, modify, delete, rename, re-create), a
provider keeps setting every pending path (tombstones included) `synced`, and observers
connect, OBSERVE, read, UNOBSERVE (or just hang up) and go, all at once. Events counted:
the writer's file operations + the provider's SETs + the observers' requests.

Checks: after warm-up (20 % of the events), RSS grows by less than 5 % (every sample in
the last 40 % of the run against the warm-up sample); once the churn is deleted, its
tombstones are reported synced and every observer is gone, STATS (items, watches, clients)
and the daemon's open fds are back at their baseline. This is the protocol half of the
soak; the 10-million-event run of the state tree alone belongs to an in-process harness.
Set SYNCBADGE_SOAK_EVENTS to change the event count.
"""

import os
import random
import shutil
import subprocess
import threading

from harness import CaseFail, Client, Closed, Daemon, RssSampler, Timeout, case, check, mb, now

WRITER_RATE = 2000      # file operations per second: below what overflows the kernel queue


def sync_all_pending(provider, root, timeout):
    """CHANGES, then SET synced (with each gen) for every pending path, until none is left."""
    deadline = now() + timeout
    total = 0
    while True:
        items = provider.ok("CHANGES", root, timeout=60).data
        if not items:
            return total
        if now() > deadline:
            raise CaseFail(f"{len(items)} paths still pending {timeout} s after the churn stopped, e.g. {items[:3]}")
        tags = [provider.send("SET", "synced", l.path, f"gen={l.opts.get('gen')}") for l in items]
        for t in tags:
            provider.answer(t, timeout=60)
        total += len(tags)


@case("soak", "long churn (files, dirs, SETs, observers): RSS flat after warm-up, fds and STATS back to baseline")
def run(ctx):
    target = int(os.environ.get("SYNCBADGE_SOAK_EVENTS") or (30000 if ctx.quick else 300000))
    rng = random.Random(ctx.seed)
    root = ctx.mkdir("root")
    churn = os.path.join(root, "churn")
    os.mkdir(churn)
    os.mkdir(os.path.join(root, "base"))
    for i in range(50):
        with open(os.path.join(root, "base", f"b{i:02d}"), "w") as f:
            f.write("x")
    daemon = Daemon(ctx).start()
    admin = daemon.admin(root)
    provider = daemon.engine(root)
    provider.ok("SET", "synced", root, "recursive=1")
    base = daemon.stats(admin)
    base_fds = daemon.fd_count()

    counts = {"sets": 0, "observer_ops": 0}
    errors = []
    stop = threading.Event()
    lock = threading.Lock()

    def provider_loop():
        # A sync engine that keeps up: everything pending (tombstones too) becomes synced.
        p = daemon.client("provider", "soak-engine")
        while not stop.is_set():
            try:
                items = p.ok("CHANGES", root, timeout=60).data[:200]
                tags = [p.send("SET", "synced", l.path, f"gen={l.opts.get('gen')}") for l in items]
                for t in tags:
                    a = p.answer(t, timeout=60)
                    if not a.ok and a.code != "not-found":
                        errors.append(f"SET: {a!r}")
                with lock:
                    counts["sets"] += len(tags)
                if not tags:
                    stop.wait(0.01)
            except Exception as e:
                errors.append(f"provider: {e}")
                return
        p.close()

    def observer_loop(seed):
        r = random.Random(seed)
        while not stop.is_set():
            try:
                c = Client(daemon.socket, timeout=30, name="soak-observer")
                c.hello()
                d = r.choice([root, churn, os.path.join(root, "base"), os.path.join(churn, f"d{r.randrange(20):02d}")])
                a = c.request("OBSERVE", d, timeout=30)
                ops = 2
                c.drain_pushes(0.05)           # take some pushes, then go
                if a.ok and r.random() < 0.5:
                    c.request("UNOBSERVE", d, timeout=30)
                    ops += 1
                if r.random() < 0.5:
                    c.request("BYE", timeout=30)
                    ops += 1
                c.close()                       # otherwise: just hang up, observation and all
                with lock:
                    counts["observer_ops"] += ops
            except Exception as e:
                errors.append(f"observer: {e}")
                return

    # The writer runs until the event target is reached (then SIGTERM), so file churn,
    # SETs and observers overlap for the whole run.
    writer = subprocess.Popen([ctx.helpers["storm"], "churn", churn, str(10 ** 12), str(WRITER_RATE),
                               str(rng.randrange(1, 1 << 30))], stdout=subprocess.PIPE, text=True)
    ctx.defer(lambda: writer.poll() is None and writer.kill())
    threads = [threading.Thread(target=provider_loop, daemon=True)]
    threads += [threading.Thread(target=observer_loop, args=(rng.random(),), daemon=True) for _ in range(3)]
    for t in threads:
        t.start()
    rss = RssSampler(daemon, interval=0.5)
    ctx.defer(rss.stop)
    t0 = now()
    progress = []            # (time, events so far)

    def events_so_far():
        # The writer's ops are not reported live; estimate them from its pace (it prints
        # the exact count when it stops).
        with lock:
            return int((now() - t0) * WRITER_RATE) + counts["sets"] + counts["observer_ops"]
    deadline = t0 + max(600, target / 500)
    while True:
        n = events_so_far()
        progress.append((now(), n))
        if n >= target:
            break
        check(writer.poll() is None, "the churn writer stopped early")
        check(not errors, f"soak client failed: {errors[:3]}")
        check(now() < deadline, f"only {n} of {target} events after {now() - t0:.0f}s")
        check(daemon.alive(), "daemon died during the soak")
        # The admin and the claiming provider read what they are sent, as real clients do
        # (every client gets `* ROOT`); one that never reads is flood-slow-reader's case.
        admin.drain_pushes(0.01)
        provider.drain_pushes(0.01)
        stop.wait(0.5)              # a progress sampling period, not a wait for a result
    stop.set()
    writer.terminate()
    for t in threads:
        t.join(60)
    out, _ = writer.communicate(timeout=30)
    rss.stop()
    elapsed = now() - t0
    check(not errors, f"soak client failed: {errors[:3]}")

    # RSS: warm-up sample at 20 % of the events, compared with every sample in the last 40 %.
    def time_at(fraction):
        return next(t for t, n in progress if n >= fraction * target)
    t_warm, t_late = time_at(0.2), time_at(0.6)
    warm = min((b for t, b in rss.samples if t >= t_warm), default=0)
    late = [b for t, b in rss.samples if t >= t_late]
    check(warm and late, "not enough RSS samples")
    growth = max(late) / warm - 1

    # Back to baseline: delete the churn, let the provider report the tombstones synced.
    for name in os.listdir(churn):
        p = os.path.join(churn, name)
        shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.unlink(p)
    sub = daemon.client("provider", "barrier")
    sub.ok("SUBSCRIBE-CHANGES", root)
    marker = os.path.join(root, "marker")
    with open(marker, "w") as f:
        f.write("x")
    os.unlink(marker)
    # Changes are delivered in order: once the marker's deletion arrives, so has the churn's.
    sub.wait_push(lambda l: l.kind == "CHANGED" and l.path == marker and l.opts.get("what") == "delete", 60,
                  "CHANGED for the marker's deletion")
    synced_at_end = sync_all_pending(provider, root, 120)
    sub.close()

    deadline = now() + 15
    while True:
        stats = daemon.stats(admin)
        fds = daemon.fd_count()
        back = (stats["items"] == base["items"] and stats["watches"] == base["watches"]
                and int(stats["clients"]) <= int(base["clients"]) and fds <= base_fds)
        if back or now() > deadline:
            break
        try:
            admin.wait_push(lambda l: True, 0.25)
        except CaseFail:
            pass
    detail = (f"{target} events in {elapsed:.0f}s (writer: {out.strip()}, {counts['sets']} SETs, "
              f"{counts['observer_ops']} observer requests); RSS warm-up {mb(warm)}, later max {mb(max(late))} "
              f"({growth * 100:+.1f}%); items {base['items']}->{stats['items']}, watches {base['watches']}->"
              f"{stats['watches']}, clients {base['clients']}->{stats['clients']}, fds {base_fds}->{fds}"
              + ("; STATS has no observation count, so leaked observations show only as RSS/fds"
                 if not any("observ" in k for k in stats) else ""))
    check(back, "not back to baseline: " + detail)
    check(growth < 0.05, "RSS grew after warm-up: " + detail)
    return detail

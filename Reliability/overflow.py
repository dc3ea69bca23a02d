"""overflow: the kernel's inotify queue overflows; the daemon must rescan, send `* RESET`
to every observer of the root, and lose nothing (PROTOCOL.md: "If the kernel queue
overflows, the daemon rescans the affected roots and sends * RESET for every observed
directory; nothing changed is lost")."""

import os
import signal
import subprocess

from harness import CaseFail, Daemon, case, check, now, require_root, set_sysctl

QUEUE = "/proc/sys/fs/inotify/max_queued_events"
N = 5000


@case("overflow", "max_queued_events=64 and 5,000 new files: RESET to observers, rescan, every file pending")
def run(ctx):
    require_root()
    root = ctx.mkdir("root")
    burst = os.path.join(root, "burst")
    os.mkdir(burst)
    with open(os.path.join(root, "kept.txt"), "w") as f:
        f.write("unchanged")
    # The queue size is copied into an inotify instance when it is created, so lower it
    # before the daemon starts, and restore it as soon as the daemon has its instance.
    restore = set_sysctl(ctx, QUEUE, 64)
    daemon = Daemon(ctx).start()
    admin = daemon.admin(root)
    restore()
    # A synced file that nothing touches must stay synced through the rescan.
    provider = daemon.client("provider", "engine")
    provider.ok("SET", "synced", os.path.join(root, "kept.txt"))
    obs = daemon.client("viewer", "observer")
    obs.ok("OBSERVE", root)
    obs.ok("OBSERVE", burst)

    # Stop the daemon while the files are created, so its 64-event queue must overflow
    # (a watcher that keeps up would otherwise never see one).
    t0 = now()
    os.kill(daemon.proc.pid, signal.SIGSTOP)
    try:
        subprocess.run([ctx.helpers["storm"], "create", burst, str(N)], check=True, capture_output=True)
    finally:
        os.kill(daemon.proc.pid, signal.SIGCONT)
    t_written = now() - t0

    # Both observed directories must get a RESET (order between them is not specified).
    waiting = {root, burst}
    while waiting:
        line = obs.wait_push(lambda l: l.kind == "RESET", 30, f"* RESET for {sorted(waiting)}")
        waiting.discard(line.path)
    t_reset = now() - t0

    # After the rescan every new file is pending: LIST (what the RESET asks us to do) until
    # all 5,000 are there, pushes telling us when to look again.
    deadline = now() + 60
    while True:
        a = obs.ok("LIST", burst, timeout=30)
        states = {}
        for l in a.data:
            states[l.state] = states.get(l.state, 0) + 1
        if len(a.data) == N and states.get("pending") == N:
            break
        if now() > deadline:
            raise CaseFail(f"60 s after the burst LIST {burst} shows {len(a.data)} entries, states {states}; want {N} pending")
        try:
            obs.wait_push(lambda l: True, 1.0)
        except CaseFail:
            pass
    t_all = now() - t0
    kept = obs.status(os.path.join(root, "kept.txt"))
    check(kept.state == "synced", f"an untouched synced file changed through the rescan: {kept!r}")
    rescan = daemon.log.grep(r"rescan")
    check(rescan, "the daemon log never mentions a rescan")
    check(daemon.alive(), "daemon died")
    return (f"{N} files in {t_written:.2f}s; RESET for both observed dirs after {t_reset:.2f}s; all {N} pending "
            f"after {t_all:.2f}s; log: {rescan[0].split(': ', 1)[-1][:100]!r}")

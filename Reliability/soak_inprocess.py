"""soak-10m: ten million synthetic events through the daemon's state tree and protocol.

`syncbadge-soak` runs the real daemon in its own process and feeds synthetic file events
straight into its engine (no inotify, so millions go by in a minute or two) while real
clients observe, come and go, and a provider syncs everything pending over the socket. It
checks that RSS grows less than 5 % after warm-up and that fds, clients, observations,
items and tombstones are back at their baseline once the churn is deleted and synced.
SYNCBADGE_SOAK_EVENTS changes the event count (--quick: one million).
"""

import os
import subprocess

from harness import REPO, CaseFail, case, check


@case("soak-10m", "10M synthetic events in-process (state tree + protocol): RSS flat after warm-up, nothing leaks")
def run(ctx):
    exe = os.path.join(ctx.bin, "syncbadge-soak")
    check(os.access(exe, os.X_OK), f"{exe} missing: build the syncbadge-soak product")
    events = int(os.environ.get("SYNCBADGE_SOAK_EVENTS") or (1_000_000 if ctx.quick else 10_000_000))
    r = subprocess.run([exe, "--events", str(events), "--seed", str(ctx.seed),
                        "--badges", os.path.join(REPO, "Badges")],
                       capture_output=True, text=True, timeout=1800, env={**os.environ, "TMPDIR": ctx.tmp})
    lines = r.stdout.strip().splitlines()
    summary = next((l for l in lines if " events in " in l), "")
    if r.returncode != 0:
        failed = [l for l in lines if l.startswith("FAIL")] or [r.stderr.strip()[-500:]]
        raise CaseFail("; ".join(failed) + (f" ({summary})" if summary else ""))
    end = next((l for l in lines if l.startswith("after the churn")), "")
    return f"{summary}; {end}"

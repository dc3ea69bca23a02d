"""watch-limit: fewer inotify watches available than the root has directories.

What we want (PROTOCOL.md `degraded=watch-limit`, and the anchors' "silent failure when
inotify watches run out"): ADD-ROOT still succeeds; ROOTS says `degraded=watch-limit`; the
log says how to raise the limit; ENOSPC from inotify_add_watch is never reported as a full
disk; a change in a directory that has no watch still becomes `pending` (a periodic rescan
with backoff); once the limit is raised the root recovers by itself.

Every part is checked even when an earlier one fails, and the failure lists each part that
failed, so one run tells the daemon's author everything.
"""

import os

from harness import (CaseFail, Daemon, case, check, now, read_sysctl,
                     require_root, set_sysctl)
from syncbadge import testing  # (harness put Clients/python on the path)

WATCHES = "/proc/sys/fs/inotify/max_user_watches"
SPARE = 15              # watches left for the root: fewer than its 61 directories


def make_tree(root):
    dirs = [root]
    for a in range(20):
        top = os.path.join(root, f"a{a:02d}")
        os.mkdir(top)
        dirs.append(top)
        for b in range(2):
            sub = os.path.join(top, f"b{b}")
            os.mkdir(sub)
            dirs.append(sub)
            with open(os.path.join(sub, "file.txt"), "w") as f:
                f.write("x")
    return dirs


@case("watch-limit", "max_user_watches below the tree's directory count: degraded, fallback rescan, recovery")
def run(ctx):
    require_root()
    root = ctx.mkdir("root")
    dirs = make_tree(root)
    daemon = Daemon(ctx).start()
    admin = daemon.client("admin")
    admin.keep_all = True
    # The limit counts every watch of this user in every process: leave exactly SPARE free.
    in_use = testing.inotify_watches_in_use(os.getuid())
    limit = in_use + SPARE
    original = read_sysctl(WATCHES)
    restore = set_sysctl(ctx, WATCHES, limit)
    problems = []

    a = admin.request("ADD-ROOT", root, timeout=60)
    if not a.ok:
        restore()
        raise CaseFail(f"ADD-ROOT with {SPARE} watches free for {len(dirs)} directories answered {a!r}")
    roots = admin.ok("ROOTS")
    line = next(l for l in roots.data if l.path == root)
    if line.opts.get("degraded") != "watch-limit":
        problems.append(f"ROOTS shows {line!r}, no degraded=watch-limit")
    hint = daemon.log.grep(r"max_user_watches|sysctl")
    if not hint:
        problems.append("the log never says how to raise the limit (no max_user_watches / sysctl): "
                        + " | ".join(daemon.log.grep(r"watch|limit|space")[:3]))

    watched = {ino for _, ino in daemon.inotify_watch_inodes()}
    unwatched = [d for d in dirs if os.stat(d).st_ino not in watched]
    check(unwatched, f"every directory got a watch although only {SPARE} were free (in use before: {in_use})")
    target = unwatched[-1]

    # A change in a directory without a watch: the fallback rescan must find it.
    obs = daemon.client("viewer", "observer")
    obs.keep_all = True
    obs.ok("OBSERVE", target)
    new = os.path.join(target, "new.txt")
    t0 = now()
    with open(new, "w") as f:
        f.write("changed while unwatched")
    fallback = None
    try:
        obs.wait_push(lambda l: l.kind == "ITEM" and l.path == new and l.state == "pending", 60,
                      f"pending push for {new}")
        fallback = now() - t0
    except CaseFail:
        st = obs.request("STATUS", new)
        problems.append(f"a file created in unwatched {os.path.relpath(target, root)} was not seen within 60 s "
                        f"(STATUS: {st!r})")

    # Raise the limit again: the root must recover without being re-added.
    restore()
    t1 = now()
    recovered = None
    deadline = t1 + 90
    while now() < deadline:
        line = next(l for l in admin.ok("ROOTS").data if l.path == root)
        if "degraded" not in line.opts:
            recovered = now() - t1
            break
        try:
            admin.wait_push(lambda l: l.kind == "ROOT" and l.path == root and "degraded" not in l.opts,
                            min(5, deadline - now()), "recovered ROOT")
        except CaseFail:
            pass
    if recovered is None:
        problems.append(f"90 s after max_user_watches went back to {original}, ROOTS still shows {line!r}")
    else:
        # Once recovered, a change in the formerly unwatched directory must be prompt.
        new2 = os.path.join(target, "after-recovery.txt")
        t2 = now()
        with open(new2, "w") as f:
            f.write("x")
        try:
            obs.wait_push(lambda l: l.kind == "ITEM" and l.path == new2 and l.state == "pending", 3,
                          f"pending push for {new2}")
        except CaseFail:
            problems.append(f"after recovery a new file in {os.path.relpath(target, root)} was not pushed within 3 s")

    disk_full = [l for c in (admin, obs) for l in c.all_lines if b"No space left" in l]
    if disk_full:
        problems.append(f"an answer reports ENOSPC as a full disk: {disk_full[0][:200]!r}")
    log_full = daemon.log.grep(r"No space left")
    check(daemon.alive(), "daemon died")
    detail = (f"{len(dirs)} dirs, {SPARE} watches free ({in_use} in use by uid {os.getuid()}), "
              f"{len(unwatched)} left unwatched; fallback saw the change after "
              + (f"{fallback:.1f}s" if fallback is not None else "never (60 s)")
              + "; recovered after " + (f"{recovered:.1f}s" if recovered is not None else "never (90 s)")
              + (f"; the log says 'No space left' ({len(log_full)} lines)" if log_full else ""))
    if problems:
        raise CaseFail(detail + ". Failed parts: " + " || ".join(problems))
    return detail

"""vanished-root: a root disappears from under the daemon (rm -rf, or its mount goes).

Wanted: the root turns `error` with a message (STATUS of the root says why), other roots keep
working, and when the directory comes back at the same path it is watched again without
being re-added. Variant as root: the root is a bind mount that is unmounted (the path stays,
its contents vanish) and mounted again.

As in watch-limit, every part is tried and each failing part is listed.
"""

import os
import shutil
import subprocess

from harness import CaseFail, Daemon, case, check, mount, now, wait_root


def expect_new_file_seen(obs, directory, name, timeout):
    """Creates directory/name and waits for its pending ITEM push; returns seconds or None."""
    path = os.path.join(directory, name)
    t0 = now()
    with open(path, "w") as f:
        f.write("x")
    try:
        obs.wait_push(lambda l: l.kind == "ITEM" and l.path == path and l.state == "pending", timeout,
                      f"pending push for {path}")
        return now() - t0
    except CaseFail:
        return None


def observe_when_possible(client, directory, timeout):
    """OBSERVE `directory` as soon as the daemon knows it again (it must, once re-watched)."""
    def attempt():
        a = client.request("OBSERVE", directory)
        return a.ok, a
    return client.until(attempt, timeout)


@case("vanished-root", "rm -rf a root (and unmount one): error with message, others work, re-watched when back")
def run(ctx):
    a_root = ctx.mkdir("alpha")
    b_root = ctx.mkdir("beta")
    for r in (a_root, b_root):
        os.mkdir(os.path.join(r, "sub"))
        with open(os.path.join(r, "sub", "f.txt"), "w") as f:
            f.write("x")
    daemon = Daemon(ctx).start()
    admin = daemon.admin(a_root, b_root)
    obs = daemon.client("viewer", "observer")
    obs.ok("OBSERVE", b_root)
    problems = []

    shutil.rmtree(a_root)
    ok, line = wait_root(admin, a_root, lambda l: l.state == "error", 15, step=2)
    if not ok:
        problems.append(f"15 s after rm -rf, ROOTS shows {line!r} (want state error)")
    st = admin.request("STATUS", a_root)
    if not (st.ok and st.data and st.data[0].state == "error" and st.data[0].opts.get("message")):
        problems.append(f"STATUS of the vanished root: {st!r} (want state error with message=)")

    # The other root keeps working.
    if expect_new_file_seen(obs, b_root, "still-alive.txt", 5) is None:
        problems.append("after the other root vanished, a new file in the surviving root was not pushed within 5 s")

    # The directory comes back: it must be watched again without ADD-ROOT.
    os.mkdir(a_root)
    ok, line = wait_root(admin, a_root, lambda l: l.state != "error" and l.opts.get("watches", "0") != "0", 30, step=2)
    if not ok:
        problems.append(f"30 s after the directory was re-created, ROOTS shows {line!r}")
    seen, ans = observe_when_possible(obs, a_root, 10)
    if not seen:
        problems.append(f"OBSERVE of the re-created root: {ans!r}")
    elif expect_new_file_seen(obs, a_root, "back.txt", 10) is None:
        st = obs.request("STATUS", os.path.join(a_root, "back.txt"))
        problems.append(f"a file created in the re-created root was not pushed within 10 s (STATUS: {st!r})")

    detail = "rm -rf / re-create: " + ("ok" if not problems else f"{len(problems)} part(s) failed")
    detail += "; " + mount_variant(ctx, daemon, admin, obs, problems)
    check(daemon.alive(), "daemon died")
    if problems:
        raise CaseFail(detail + ". Failed parts: " + " || ".join(problems))
    return detail


def mount_variant(ctx, daemon, admin, obs, problems):
    if os.geteuid() != 0:
        return "mount variants skipped (not root)"
    out = []
    for kind in ("tmpfs", "bind"):
        out.append(one_mount_variant(ctx, kind, admin, obs, problems))
    return "; ".join(out)


def one_mount_variant(ctx, kind, admin, obs, problems):
    """kind 'tmpfs': a file system of its own (umount sends IN_UNMOUNT); kind 'bind': a bind
    mount of another directory (umount sends nothing: the watched inode lives on, reachable
    at the source path, so only mountinfo can tell the daemon)."""
    target = ctx.mkdir(f"mounted-{kind}")
    if kind == "bind":
        src = ctx.mkdir("bind-source")
        args = ["--bind", src]
    else:
        args = ["-t", "tmpfs", "-o", "size=4m", "tmpfs"]
    try:
        mount(ctx, args, target)
    except Exception as e:
        return f"{kind} variant skipped ({e})"
    with open(os.path.join(target, "on-mount.txt"), "w") as f:
        f.write("x")
    admin.ok("ADD-ROOT", target, timeout=60)
    before = len(problems)
    r = subprocess.run(["umount", target], capture_output=True, text=True)
    check(r.returncode == 0, f"umount failed: {r.stderr}")
    # The path still exists but what was watched is gone: the daemon must not go on
    # showing the mount's files as if nothing happened.
    vanished = os.path.join(target, "on-mount.txt")

    def noticed(line):
        if line.state == "error":
            return True
        st = admin.request("STATUS", vanished)
        return st.ok and st.data and st.data[0].opts.get("kind") == "gone"
    ok, line = wait_root(admin, target, noticed, 15, step=2)
    if not ok:
        st = admin.request("STATUS", vanished)
        problems.append(f"{kind}: 15 s after umount, the root is {line!r} and its vanished file {st!r} "
                        "(want root error, or the file a tombstone)")
    # The bare mount point is not the user's data: the root stays in error (no tombstones a
    # sync engine would turn into remote deletions) until something is mounted there again.
    if line is None or line.state != "error":
        problems.append(f"{kind}: after umount the root is {line!r}, want state error until it is mounted again")
    mount(ctx, args, target)
    seen, ans = observe_when_possible(obs, target, 15)
    if not seen or expect_new_file_seen(obs, target, "after-remount.txt", 15) is None:
        problems.append(f"{kind}: after mounting again, a file created in the root was not pushed within 15 s"
                        + ("" if seen else f" (OBSERVE: {ans!r})"))
    subprocess.run(["umount", target], capture_output=True)
    admin.request("REMOVE-ROOT", target)
    return f"{kind} mount / umount / mount: " + ("ok" if len(problems) == before else f"{len(problems) - before} part(s) failed")

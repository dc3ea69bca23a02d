"""security: who may connect, where the socket may live, links, paths, and no exec.

PROTOCOL.md ("Transport", "Framing", "The state rules") promises: a peer with another uid
gets `* BYE forbidden` and is closed; a socket directory owned by someone else or with any
group/other bit is refused at start; links are badged as themselves and never followed;
every path field must be absolute and normalised (`ERR bad-path`). Nothing in the protocol
runs a command, so the daemon must never execve.
"""

import os
import re
import shutil
import subprocess

from harness import REPO, CaseFail, CaseSkip, Client, Daemon, Line, case, check, now, require_root

OTHER_UID = 65534          # nobody: exists on every Debian system


@case("sec-other-uid", "a peer with another uid gets * BYE forbidden and is closed")
def other_uid(ctx):
    require_root()
    py = shutil.which("python3", path="/usr/bin:/bin")
    if not py or not shutil.which("setpriv"):
        raise CaseSkip("needs /usr/bin/python3 and setpriv")
    daemon = Daemon(ctx).start()
    # The daemon's socket dir is 0700 and the socket 0600: the file system alone keeps
    # other users out. To test the daemon's own SO_PEERCRED check we have to let the other
    # user reach the socket: open the path to it (search on the dirs, write on the socket).
    os.chmod(ctx.tmp, 0o711)
    os.chmod(os.path.dirname(daemon.socket), 0o711)
    os.chmod(daemon.socket, 0o666)
    # The package's Connection, as the other user: HELLO and ROOTS, then every line that comes
    # (raw, so that nothing the daemon says is filtered), until the daemon closes.
    client = ("import sys\n"
              "sys.path.insert(0, sys.argv[2])\n"
              "import syncbadge as sb\n"
              "c = sb.Connection(sys.argv[1], role='admin')\n"
              "c.connect(10); print('connected', flush=True)\n"
              "c.send('ROOTS')\n"
              "while True:\n"
              "    try:\n"
              "        lines, at = c.read_lines(10)\n"
              "    except sb.Disconnected:\n"
              "        break\n"
              "    if at is None:\n"
              "        sys.exit('still open after 10 s')\n"
              "    for line in lines:\n"
              "        print(line.decode(errors='replace'))\n"
              "print('EOF')\n")
    r = subprocess.run(["setpriv", f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups",
                        py, "-c", client, daemon.socket, os.path.join(REPO, "Clients", "python")],
                       capture_output=True, text=True, timeout=30)
    out = r.stdout.splitlines()
    check(out and out[0] == "connected", f"the other user could not even connect (so nothing was tested): {r.stdout} {r.stderr}")
    answers = out[1:-1]
    check(out[-1] == "EOF", f"the daemon did not close the other user's connection: {r.stdout!r} {r.stderr[-300:]}")
    check(answers == ["* BYE forbidden"], f"the other user's HELLO + ROOTS got {answers}, want exactly ['* BYE forbidden']")
    # The owner still gets in.
    daemon.client("admin").ok("ROOTS")
    return f"uid {OTHER_UID}: connected, got '* BYE forbidden', closed; owner unaffected"


@case("sec-socket-dir", "socket dir open to others (0777, 0750) or owned by another user: the daemon refuses to start")
def socket_dir(ctx):
    results = []
    variants = [("mode 0777", 0o777, None), ("mode 0750", 0o750, None)]
    if os.geteuid() == 0:
        variants.append(("owned by nobody", 0o700, OTHER_UID))
    for label, mode, owner in variants:
        d = ctx.mkdir(f"sock-{mode:o}-{owner}", mode)
        if owner is not None:
            os.chown(d, owner, owner)
        daemon = Daemon(ctx, sock_path=os.path.join(d, "d.sock"), name=f"refused-{len(results)}")
        daemon.spawn()
        rc = daemon.wait_exit(20)
        if rc is None:
            daemon.proc.kill()
            raise CaseFail(f"socket dir {label}: the daemon is still running after 20 s (it should refuse to start)")
        daemon.log.thread.join(5)
        msg = daemon.log.text()
        check(rc != 0, f"socket dir {label}: exit status 0")
        check(not os.path.exists(daemon.socket), f"socket dir {label}: it bound the socket anyway")
        check(d in msg or os.path.basename(d) in msg, f"socket dir {label}: the message does not name the directory: {msg[-300:]!r}")
        results.append(f"{label}: exit {rc}")
        last = [l for l in msg.splitlines() if l.strip()][-1]
    # Mode and owner are restored to sane values so cleanup can remove them.
    return "; ".join(results) + f"; e.g. {last.split(': ', 1)[-1][:120]!r}"


@case("sec-symlinks", "links inside roots are entries of kind link, never followed in or out")
def symlinks(ctx):
    root = ctx.mkdir("root")
    outside = ctx.mkdir("outside")
    with open(os.path.join(outside, "secret.txt"), "w") as f:
        f.write("x")
    os.mkdir(os.path.join(root, "dir"))
    os.symlink(outside, os.path.join(root, "out"))          # to a directory outside the root
    os.symlink("..", os.path.join(root, "dir", "up"))        # to the root itself (a loop)
    os.symlink(os.path.join(outside, "secret.txt"), os.path.join(root, "file-link"))
    door = ctx.mkdir("door")
    os.symlink(root, os.path.join(door, "into-root"))        # from outside into the root
    daemon = Daemon(ctx).start()
    admin = daemon.admin(root)
    v = daemon.client()

    listing = {os.path.basename(l.path): l for l in v.ok("LIST", root).data}
    for name in ("out", "file-link"):
        check(name in listing and listing[name].opts.get("kind") == "link",
              f"LIST {root}: {name} is {listing.get(name)!r}, want kind=link")
    up = {os.path.basename(l.path): l for l in v.ok("LIST", os.path.join(root, "dir")).data}
    check(up.get("up") is not None and up["up"].opts.get("kind") == "link", f"dir/up is {up.get('up')!r}")
    for target in (os.path.join(root, "out"), os.path.join(root, "dir", "up")):
        a = v.request("LIST", target)
        check(a.code == "not-a-directory", f"LIST {target} (a link) answered {a!r}")
        a = v.request("OBSERVE", target)
        check(a.code == "not-a-directory", f"OBSERVE {target} (a link) answered {a!r}")
    a = v.request("STATUS", os.path.join(root, "out", "secret.txt"))
    check(a.code == "not-found", f"STATUS through the link answered {a!r}, want ERR not-found")
    stats = daemon.stats(v)
    check(int(stats["items"]) <= 6, f"STATS items={stats['items']}: something beneath a link was indexed")
    st = v.status(os.path.join(door, "into-root", "dir"))
    check(getattr(st, "state", None) == "outside", f"a path through a link into the root: {st!r}, want outside")
    a = admin.request("ADD-ROOT", os.path.join(door, "into-root"))
    check(a.code in ("not-a-directory", "busy"), f"ADD-ROOT of a link answered {a!r}")

    # A change in the link's target must not be reported for the link: create a file out
    # there, then one in the root as a barrier; nothing about 'out' may come before it.
    v.ok("OBSERVE", root)
    with open(os.path.join(outside, "new-outside.txt"), "w") as f:
        f.write("x")
    os.utime(os.path.join(outside, "secret.txt"))
    marker = os.path.join(root, "marker.txt")
    with open(marker, "w") as f:
        f.write("x")
    seen = []
    v.wait_push(lambda l: seen.append(l) or l.path == marker, 10, "marker push")
    leaked = [l for l in seen if l.path and ("/out" in l.path or "file-link" in l.path)]
    check(not leaked, f"a change outside the root was pushed for a link: {leaked}")
    return "links listed as kind=link, LIST/OBSERVE through them not-a-directory, nothing beneath indexed, no pushes from targets, outside link into root is 'outside'"


BAD_PATHS = ["relative/path", "{root}/../etc", "{root}/./a.txt", "{root}//a.txt", "{root}/", "{root}/dir/.."]


@case("sec-bad-paths", "relative and non-normalised paths get ERR bad-path from every path-taking verb")
def bad_paths(ctx):
    root = ctx.mkdir("root")
    os.mkdir(os.path.join(root, "dir"))
    with open(os.path.join(root, "a.txt"), "w") as f:
        f.write("x")
    daemon = Daemon(ctx).start()
    admin = daemon.admin(root)
    prov = daemon.engine(root)
    verbs = [
        (admin, "ADD-ROOT", lambda p: [p]), (admin, "REMOVE-ROOT", lambda p: [p]),
        (admin, "STATUS", lambda p: [p]), (admin, "STATUS", lambda p: [root, p]),
        (admin, "LIST", lambda p: [p]), (admin, "OBSERVE", lambda p: [p]), (admin, "UNOBSERVE", lambda p: [p]),
        (admin, "MENU", lambda p: ["items", p]), (admin, "MENU", lambda p: ["container", f"target={p}", root + "/a.txt"]),
        (admin, "ACTION", lambda p: ["syncbadge.details", p]),
        (admin, "ACTION", lambda p: ["syncbadge.details", f"target={p}", root + "/a.txt"]),
        (prov, "CLAIM", lambda p: [p]), (prov, "SET", lambda p: ["synced", p]),
        (prov, "CHANGES", lambda p: [p]), (prov, "SUBSCRIBE-CHANGES", lambda p: [p]),
    ]
    wrong = []
    n = 0
    for client, verb, fields in verbs:
        for template in BAD_PATHS:
            bad = template.format(root=root)
            a = client.request(verb, *fields(bad))
            n += 1
            if a.code != "bad-path":
                wrong.append(f"{verb} {' '.join(fields(bad))} -> {a!r}")
    # The daemon is still fine and the root unchanged.
    check(daemon.alive(), "daemon died")
    check(any(l.path == root for l in admin.ok("ROOTS").data), "the root went away")
    check(not wrong, f"{len(wrong)} of {n} requests not answered ERR bad-path, e.g. {wrong[:4]}")
    return f"{n} requests ({len(verbs)} verb forms x {len(BAD_PATHS)} paths) all ERR bad-path"


@case("sec-no-exec", "no protocol verb makes the daemon execve (under strace -f)")
def no_exec(ctx):
    if not shutil.which("strace"):
        raise CaseSkip("strace is not installed (apt-get install strace)")
    trace = os.path.join(ctx.tmp, "strace.out")
    daemon = Daemon(ctx, prefix=["strace", "-f", "-qq", "-e", "trace=execve,execveat", "-o", trace])
    daemon.start(timeout=60)
    root = ctx.mkdir("root")
    os.mkdir(os.path.join(root, "dir"))
    for name in ("a.txt", "dir/b.txt"):
        with open(os.path.join(root, name), "w") as f:
            f.write("x")
    a_txt = os.path.join(root, "a.txt")
    admin = daemon.client("admin")
    prov = daemon.client("provider", "engine")
    view = daemon.client("viewer")
    admin.ok("ADD-ROOT", root, timeout=60)
    prov.ok("CLAIM", root)
    prov.ok("SUBSCRIBE-CHANGES", root)
    image = os.path.join(ctx.tmp, "badge.svg")
    with open(image, "w") as f:
        f.write("<svg xmlns='http://www.w3.org/2000/svg'/>")
    # Shell metacharacters everywhere a string goes, in case anything ends up in a shell.
    evil = "$(touch /tmp/pwned-syncbadge);`id`|sh"
    prov.ok("DEFINE-BADGE", "evil.badge", f"label={evil}", f"glyph={evil}", f"ascii={evil}", "color=31", f"image={image}")
    prov.ok("DEFINE-MENU", "items", "sync.now", f"title={evil}")
    prov.ok("DEFINE-MENU", "container", "sync.folder", "title=Folder")
    prov.ok("DEFINE-TOOLBAR", f"name={evil}", f"tooltip={evil}", f"image={image}")
    for verb, fields in [
        ("PING", []), ("ROOTS", []), ("BADGES", []), ("STATS", []), ("TOOLBAR", []),
        ("STATUS", [root, a_txt, "/"]), ("LIST", [root]), ("OBSERVE", [root]), ("UNOBSERVE", [root]),
        ("MENU", ["items", a_txt]), ("MENU", ["container", f"target={root}", a_txt]), ("MENU", ["sidebar", root]),
        ("MENU", ["toolbar", root]), ("ACTION", ["sync.now", a_txt]), ("ACTION", ["syncbadge.details", a_txt]),
        ("ACTION", ["syncbadge.ignore", a_txt]), ("ACTION", ["syncbadge.unignore", a_txt]),
    ]:
        a = view.request(verb, *fields)
        check(a.ok, f"{verb} {fields} -> {a!r}")
    for verb, fields in [("SET", ["syncing", a_txt, "progress=50", f"message={evil}", "badge=evil.badge"]),
                         ("SET", ["synced", root, "recursive=1"]), ("CHANGES", [root])]:
        a = prov.request(verb, *fields)
        check(a.ok, f"{verb} {fields} -> {a!r}")
    admin.ok("REMOVE-ROOT", root)
    admin.ok("ADD-ROOT", root, timeout=60)
    view.ok("BYE")
    rc = daemon.stop()
    with open(trace) as f:
        calls = [l.strip() for l in f if "execve" in l]
    check(os.path.exists("/tmp/pwned-syncbadge") is False, "a shell ran our string: /tmp/pwned-syncbadge exists")
    check(len(calls) == 1, f"{len(calls)} execve calls, want only the daemon's own start: {calls[:4]}")
    return f"every verb exercised (provider items, ACTION on built-ins and provider items, shell metacharacters in strings); strace saw 1 execve (the start); exit {rc}"

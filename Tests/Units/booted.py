"""A booted systemd container of a Debian tree, with one user whose systemd user manager runs
SyncBadge's units (Tests/Units/test_units.py).

systemd-nspawn boots the tree (the host's own `/` by default) with `--volatile=yes`: a tmpfs
root with the tree's /usr read-only, so nothing the container does reaches the host, and
`--private-network`, so its loopback is its own. /etc is empty then, so copies of the files PAM
and the user manager need are bound in, and the user database is the tree's plus the test's own
user: the host's is never touched. `--register=no --keep-unit` because no machined runs here.
systemd-nspawn itself leaves an empty cgroup and a directory under /run/systemd/nspawn per run.
"""

import ctypes
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "Clients", "python"))
from syncbadge import testing  # noqa: E402

USER = "sbunit"
UID = 4242
PREFIX = "syncbadge-units-"
PR_SET_PDEATHSIG = 1


class BootError(RuntimeError):
    pass


def _wait(predicate, timeout, what):
    return testing.wait_until(what, predicate, timeout, interval=0.1, error=BootError)


def _die_with_parent():
    # systemd-nspawn halts its container when the test process dies, however it dies.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def sweep_stale(tmp=None):
    """Work directories of earlier runs whose nspawn is gone (a run killed before its teardown).
    One with no nspawn yet may be another run's starting now: left alone for an hour."""
    for work in glob.glob(os.path.join(tmp or tempfile.gettempdir(), PREFIX + "*")):
        try:
            with open(os.path.join(work, "nspawn.pid")) as f:
                pid = int(f.read())
        except (OSError, ValueError):
            try:
                if time.time() - os.stat(work).st_mtime > 3600:
                    shutil.rmtree(work, ignore_errors=True)
            except OSError:
                pass
            continue
        try:
            os.kill(pid, 0)     # still running: another test's
        except OSError:
            shutil.rmtree(work, ignore_errors=True)


class BootedTree(object):
    def __init__(self, tree="/", binds_ro=(), name=None):
        self.tree = tree
        self.binds_ro = list(binds_ro)
        self.name = name or "sbunit-%d" % os.getpid()
        sweep_stale()
        self.work = tempfile.mkdtemp(prefix=PREFIX)
        self.home = os.path.join(self.work, "home")
        self.process = None
        self.leader = None
        self.log_path = os.path.join(self.work, "nspawn.log")

    # -- life ------------------------------------------------------------------------------

    def boot(self, timeout=90):
        try:
            return self._boot(timeout)
        except BaseException:
            self.shutdown()
            raise

    def _boot(self, timeout):
        if os.geteuid() != 0:
            raise BootError("booting a systemd container needs root (systemd-nspawn); run the unit tests as root")
        if not shutil.which("systemd-nspawn"):
            raise BootError("systemd-nspawn is missing: apt-get install systemd-container")
        etc = os.path.join(self.work, "etc")
        os.makedirs(etc)
        tree_etc = os.path.join(self.tree, "etc")
        # The tree's own user database (its system users: messagebus...), plus the test's user.
        for name, line in (("passwd", "%s:x:%d:%d::/home/%s:/bin/sh" % (USER, UID, UID, USER)),
                           ("group", "%s:x:%d:" % (USER, UID)),
                           ("shadow", "%s:*:19000:0:99999:7:::" % USER),
                           ("gshadow", "%s:!::" % USER)):
            source = os.path.join(tree_etc, name)
            text = open(source).read() if os.path.exists(source) else ""
            with open(os.path.join(etc, name), "w") as f:
                f.write(text + ("" if text.endswith("\n") or not text else "\n") + line + "\n")
            os.chmod(os.path.join(etc, name), 0o600 if "shadow" in name else 0o644)
        # A machine id of the container's own: journald will not share the host's.
        with open(os.path.join(etc, "machine-id"), "w") as f:
            f.write(os.urandom(16).hex() + "\n")
        os.makedirs(self.home)
        os.chown(self.home, UID, UID)
        args = ["systemd-nspawn", "-D", self.tree, "--volatile=yes", "--private-network", "--register=no", "--keep-unit",
                "-M", self.name, "-b", "--console=passive",
                # Writable copies: systemd-sysusers adds the system users (messagebus...) at boot.
                "--bind=%s:/etc/passwd" % os.path.join(etc, "passwd"),
                "--bind=%s:/etc/group" % os.path.join(etc, "group"),
                "--bind=%s:/etc/shadow" % os.path.join(etc, "shadow"),
                "--bind=%s:/etc/gshadow" % os.path.join(etc, "gshadow"),
                "--bind-ro=%s:/etc/machine-id" % os.path.join(etc, "machine-id"),
                "--bind=%s:/home/%s" % (self.home, USER)]
        # Copies, not the tree's own files: --volatile hides the tree's path from the binds.
        for name in ("pam.d", "security", "nsswitch.conf", "login.defs"):
            source = os.path.join(tree_etc, name)
            if os.path.isdir(source):
                shutil.copytree(source, os.path.join(etc, name), symlinks=True)
            elif os.path.isfile(source):
                shutil.copy(source, os.path.join(etc, name))
            else:
                continue
            args.append("--bind-ro=%s:/etc/%s" % (os.path.join(etc, name), name))
        for path in self.binds_ro:
            args.append("--bind-ro=%s" % path)
        args.append("systemd.firstboot=off")
        log = open(self.log_path, "w")
        self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        preexec_fn=_die_with_parent)
        log.close()
        with open(os.path.join(self.work, "nspawn.pid"), "w") as f:
            f.write(str(self.process.pid))
        own_pidns = os.readlink("/proc/self/ns/pid")

        def leader():
            # The container's init: nspawn's child in a PID namespace of its own running systemd
            # (nspawn forks short-lived helpers first, in ours).
            if self.process.poll() is not None:
                raise BootError("systemd-nspawn exited with %s: %s" % (self.process.returncode, self.log()))
            out = subprocess.run(["pgrep", "-P", str(self.process.pid)], capture_output=True, text=True).stdout.split()
            for pid in out:
                try:
                    if os.readlink("/proc/%s/ns/pid" % pid) != own_pidns and open("/proc/%s/comm" % pid).read().strip() == "systemd":
                        return int(pid)
                except OSError:
                    continue
            return None

        self.leader = _wait(leader, timeout, "the container's init")

        # Boot done: is-system-running --wait returns once no job is left (running or degraded);
        # "offline" (or nothing) until the manager listens at all.
        def booted():
            state = self.run(["systemctl", "is-system-running", "--wait"], timeout=timeout, check=False).stdout.strip()
            return None if state in ("offline", "") else state
        state = _wait(booted, timeout, "the container's manager")
        if state not in ("running", "degraded"):
            raise BootError("the container did not boot: %s\n%s" % (state, self.log()))
        self.run(["systemctl", "start", "user@%d.service" % UID], timeout=timeout)
        return self

    def shutdown(self):
        """Halts the container (poweroff, then SIGKILL of nspawn and the container's init) and
        removes the work directory; every step runs whatever the one before did."""
        if self.process and self.process.poll() is None:
            if self.leader:
                try:
                    subprocess.run(["nsenter", "-t", str(self.leader), "-a", "systemctl", "poweroff", "--no-block"],
                                   capture_output=True, timeout=20)
                except subprocess.TimeoutExpired:
                    pass
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                for pid in (self.leader, self.process.pid):
                    if pid:
                        try:
                            os.kill(pid, signal.SIGKILL)
                        except OSError:
                            pass
                try:
                    self.process.wait(10)
                except subprocess.TimeoutExpired:
                    pass
        if self.process is None or self.process.poll() is not None:
            shutil.rmtree(self.work, ignore_errors=True)
        # else: left for sweep_stale(), which removes it once that nspawn is gone.

    def log(self):
        try:
            with open(self.log_path) as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    # -- commands --------------------------------------------------------------------------

    def run(self, argv, user=False, timeout=60, check=True, env=None):
        """Runs argv in the container: as root, or as the test user with its session's
        environment (XDG_RUNTIME_DIR, so `systemctl --user` finds its manager)."""
        prefix = ["nsenter", "-t", str(self.leader), "-a"]
        if user:
            variables = {"HOME": "/home/" + USER, "XDG_RUNTIME_DIR": "/run/user/%d" % UID, "USER": USER,
                         "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
            variables.update(env or {})
            prefix += ["setpriv", "--reuid=%d" % UID, "--regid=%d" % UID, "--init-groups", "--reset-env",
                       "env", "-C", "/home/" + USER] + ["%s=%s" % kv for kv in variables.items()]
        done = subprocess.run(prefix + list(argv), capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise BootError("%s exited %d\nstdout: %s\nstderr: %s" % (" ".join(argv), done.returncode, done.stdout, done.stderr))
        return done

    def user_systemctl(self, *args, check=True):
        return self.run(["systemctl", "--user"] + list(args), user=True, check=check)

    def write_user_file(self, relative, text, mode=0o644):
        path = os.path.join(self.home, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        # The directories and the file belong to the user, as they would in a real home.
        part = self.home
        for piece in relative.split("/"):
            part = os.path.join(part, piece)
            os.chown(part, UID, UID)
        return "/home/%s/%s" % (USER, relative)

    def wait_until(self, predicate, timeout, what):
        return _wait(predicate, timeout, what)

    def read_user_file(self, relative):
        with open(os.path.join(self.home, relative)) as f:
            return f.read()

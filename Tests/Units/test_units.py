"""SyncBadge's hardened systemd user units under a real systemd user manager.

A container of the tree in $SYNCBADGE_UNITS_TREE (default: this machine's own `/`, so Debian
12's systemd) boots with systemd as PID 1 (Tests/Units/booted.py); its user's manager gets
`syncbadged.socket`, `syncbadged.service`, `syncbadge-git.service` and
`syncbadge-syncthing.service` exactly as `make install-files` writes them (the sandbox lines
included), pointing at the binaries in $SYNCBADGE_BIN. Then each does its work with its
restrictions in force:

- the daemon is started by its socket for the user, and roots, states, the Ignore menu item
  (which writes the root's .syncbadgeignore) work; its process runs with no new privileges
  and a seccomp filter;
- a probe unit with the daemon's own sandbox lines shows what the kernel refuses it: an
  AF_INET socket, a writable and executable mapping, and (where the manager can make a mount
  namespace) a write to a directory the user owns outside the paths the unit allows;
- the git adapter reports a modified file as pending;
- the Syncthing adapter, beside a real Syncthing started by Debian's own user unit, reports a
  file Syncthing has scanned as synced.

Run: `make test-units` (root: systemd-nspawn). Artifacts of a failing run: the container's log
in the failure message.
"""

import os
import re
import shutil
import socket
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from booted import USER, UID, BootedTree  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
UNITS = os.path.join(REPO, "Examples", "systemd")
BIN = os.environ.get("SYNCBADGE_BIN", "")
TREE = os.environ.get("SYNCBADGE_UNITS_TREE", "/")
HOME = "/home/" + USER

# The daemon unit's sandbox, copied into a probe unit: the lines after "[Service]" that are
# not about how the daemon starts.
NOT_SANDBOX = ("ExecStart=", "KillSignal=", "Restart=", "RestartSec=", "RestartPreventExitStatus=")

PROBE = r'''
import mmap, os, socket, sys
report = []
def attempt(what, f):
    try:
        f()
        report.append("%s allowed" % what)
    except OSError as e:
        report.append("%s refused %d" % (what, e.errno))
attempt("inet", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
attempt("unix", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
attempt("wx", lambda: mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC))
attempt("write-outside", lambda: open("/opt/syncbadge-probe/x", "w").close())
attempt("write-home", lambda: open(os.path.expanduser("~/probe-wrote-here"), "w").close())
report.append("mountns %s" % (os.readlink("/proc/self/ns/mnt") != sys.argv[1]))
# Written whole and renamed, so the test never reads half of it.
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write("\n".join(report) + "\n")
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
'''


# Lines added to the daemon's [Service], to try a directive under a real manager (how
# docs/PACKAGING.md's table of options was made): SYNCBADGE_UNITS_EXTRA='PrivateUsers=yes'.
EXTRA = os.environ.get("SYNCBADGE_UNITS_EXTRA", "").replace("\\n", "\n")


def render(unit):
    with open(os.path.join(UNITS, unit)) as f:
        text = f.read().replace("@BINDIR@", BIN)
    if unit == "syncbadged.service" and EXTRA:
        text = text.replace("\n[Install]", "\n%s\n\n[Install]" % EXTRA)
    return text


def sandbox_lines(unit_text):
    body = unit_text.split("[Service]", 1)[1].split("[Install]", 1)[0]
    return [l for l in body.splitlines() if l and not l.startswith("#") and not l.startswith(NOT_SANDBOX)]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HardenedUnits(unittest.TestCase):
    tree = None

    @classmethod
    def setUpClass(cls):
        if not BIN or not os.path.exists(os.path.join(BIN, "syncbadged")):
            raise AssertionError(
                "SYNCBADGE_BIN must name a directory holding syncbadged, syncbadge, syncbadge-git "
                "and syncbadge-syncthing (make test-units sets it)")
        binds = [BIN]
        # A build in a checkout reads the badge set from the checkout's Badges/.
        checkout = os.path.realpath(BIN)
        while checkout != "/" and not os.path.exists(os.path.join(checkout, "Badges", "badges.tsv")):
            checkout = os.path.dirname(checkout)
        if checkout != "/":
            binds.append(os.path.join(checkout, "Badges"))
        # A debug build finds the Swift runtime by its rpath; a release build needs nothing.
        if os.path.isdir("/opt/swift"):
            binds.append("/opt/swift")
        cls.tree = BootedTree(TREE, binds_ro=binds).boot()
        try:
            units = ".config/systemd/user/"
            for unit in ("syncbadged.socket", "syncbadged.service", "syncbadge-git.service", "syncbadge-syncthing.service"):
                cls.tree.write_user_file(units + unit, render(unit))
            cls.tree.user_systemctl("daemon-reload")
            cls.tree.user_systemctl("enable", "--now", "syncbadged.socket")
        except BaseException:
            cls.tree.shutdown()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.tree:
            cls.tree.shutdown()

    def cli(self, *args, check=True):
        return self.tree.run([os.path.join(BIN, "syncbadge"), "--no-spawn"] + list(args), user=True, check=check)

    def state_of(self, path):
        out = self.cli("status", "--porcelain", path, check=False).stdout
        return out.split("\t")[0] if out else None

    def wait_state(self, path, state, timeout=30):
        return self.tree.wait_until(lambda: self.state_of(path) == state, timeout,
                                    "%s to be %s (now %s)" % (path, state, self.state_of(path)))

    def main_pid(self, unit):
        return int(self.tree.user_systemctl("show", "-p", "MainPID", "--value", unit).stdout.strip())

    def status_of_process(self, pid):
        with open("/proc/%d/status" % self.host_pid(pid)) as f:
            return dict(l.rstrip("\n").split(":\t", 1) for l in f if ":\t" in l)

    def host_pid(self, pid):
        # The container shares no PID namespace with the host: find the host's view of the
        # container's pid through NSpid.
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open("/proc/%s/status" % entry) as f:
                    for line in f:
                        if line.startswith("NSpid:"):
                            ids = line.split()[1:]
                            if len(ids) >= 2 and int(ids[-1]) == pid and self.in_container(int(entry)):
                                return int(entry)
                            break
            except OSError:
                continue
        raise AssertionError("no host process for container pid %d" % pid)

    def in_container(self, host_pid):
        try:
            return os.readlink("/proc/%d/ns/pid" % host_pid) == os.readlink("/proc/%d/ns/pid" % self.tree.leader)
        except OSError:
            return False

    # -- the daemon --------------------------------------------------------------------------

    def test_1_daemon_by_socket_activation(self):
        self.assertEqual(self.tree.user_systemctl("is-enabled", "syncbadged.socket").stdout.strip(), "enabled")
        status = self.tree.user_systemctl("status", "syncbadged.socket", check=False).stdout
        self.assertIn("enabled", status)
        self.assertEqual(self.tree.user_systemctl("is-active", "syncbadged.service", check=False).stdout.strip(), "inactive")
        root = os.path.dirname(self.tree.write_user_file("Sync/a.txt", "a\n"))
        self.cli("add", root)
        self.assertEqual(self.tree.user_systemctl("is-active", "syncbadged.service").stdout.strip(), "active")
        self.wait_state(root + "/a.txt", "unknown")
        self.cli("set", "synced", root + "/a.txt")
        self.wait_state(root + "/a.txt", "synced")
        # The Ignore menu item writes the root's .syncbadgeignore: allowed by ReadWritePaths.
        self.cli("action", "syncbadge.ignore", root + "/a.txt")
        self.wait_state(root + "/a.txt", "ignored")
        with open(os.path.join(self.tree.home, "Sync", ".syncbadgeignore")) as f:
            self.assertIn("a.txt", f.read())
        proc = self.status_of_process(self.main_pid("syncbadged.service"))
        self.assertEqual(proc["NoNewPrivs"].strip(), "1")
        self.assertEqual(proc["Seccomp"].strip(), "2")
        # A user manager holds no capabilities to pass on (nor may it drop any from the
        # bounding set: docs/PACKAGING.md, "Hardening").
        self.assertEqual(proc["CapEff"].strip(), "0000000000000000")

    def test_2_daemon_sandbox_refuses(self):
        lines = sandbox_lines(render("syncbadged.service"))
        probe = self.tree.write_user_file("probe.py", PROBE)
        # A directory the user may write, outside every path the unit makes writable.
        self.tree.run(["sh", "-c", "mkdir -p /opt/syncbadge-probe && chown %d /opt/syncbadge-probe" % UID])
        host_mnt = self.tree.run(["readlink", "/proc/self/ns/mnt"], user=True).stdout.strip()
        unit = "[Service]\nType=oneshot\nExecStart=/usr/bin/python3 %s %s %s\n%s\n" % (
            probe, host_mnt, HOME + "/probe.out", "\n".join(l.replace("%t/syncbadge", "%t") for l in lines))
        self.tree.write_user_file(".config/systemd/user/syncbadge-probe.service", unit)
        self.tree.user_systemctl("daemon-reload")
        # A oneshot's start returns once it has run: the report is there, or it failed.
        self.tree.user_systemctl("start", "syncbadge-probe.service")
        out = self.tree.read_user_file("probe.out")
        self.assertRegex(out, r"inet refused 97")      # EAFNOSUPPORT: RestrictAddressFamilies
        self.assertIn("unix allowed", out)
        self.assertRegex(out, r"wx refused 1")         # EPERM: MemoryDenyWriteExecute
        namespaced = "mountns True" in out
        if namespaced:
            self.assertRegex(out, r"write-outside refused 30")   # EROFS: ProtectSystem=strict
        else:
            self.assertIn("write-outside allowed", out)
        self.assertIn("write-home allowed", out)     # ReadWritePaths=%h
        print("\nsandbox probe (%s):\n%s" % ("mount namespace applied" if namespaced else
                                             "no mount namespace: this manager cannot make one", out), file=sys.stderr)

    # -- the adapters ----------------------------------------------------------------------

    def modified_repo(self, name):
        """A repository with one commit whose file is then modified, followed by the adapter."""
        repo = HOME + "/" + name
        self.tree.write_user_file(name + "/tracked.txt", "one\n")
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-C", repo]
        self.tree.run(["git", "init", "-q", repo], user=True)
        self.tree.run(git + ["add", "tracked.txt"], user=True)
        self.tree.run(git + ["commit", "-qm", "one"], user=True)
        self.tree.write_user_file(name + "/tracked.txt", "two\n")
        self.tree.run([os.path.join(BIN, "syncbadge-git"), "add", repo], user=True)
        return repo

    def test_3_git_adapter(self):
        repo = self.modified_repo("repo")
        self.tree.user_systemctl("start", "syncbadge-git.service")
        self.wait_state(repo + "/tracked.txt", "pending", timeout=60)
        proc = self.status_of_process(self.main_pid("syncbadge-git.service"))
        self.assertEqual(proc["NoNewPrivs"].strip(), "1")
        self.assertEqual(proc["Seccomp"].strip(), "2")

    def test_4_syncthing_adapter(self):
        if not shutil.which("syncthing"):
            self.fail("syncthing is not installed (make deps installs it)")
        # In Syncthing's own default home, which Debian's syncthing.service uses: ~/.config/syncthing
        # up to 1.26 (Debian 12), ~/.local/state/syncthing after (Debian 13).
        self.tree.run(["syncthing", "generate", "--no-default-folder", "--skip-port-probing"], user=True)
        path = next(p for p in (os.path.join(self.tree.home, d, "syncthing/config.xml") for d in (".local/state", ".config"))
                    if os.path.exists(p))
        with open(path) as f:
            xml = f.read()
        device = re.search(r'<device id="([^"]+)"', xml).group(1)
        xml = xml.replace("<address>127.0.0.1:8384</address>", "<address>127.0.0.1:%d</address>" % free_port())
        for key, value in (("listenAddress", "tcp://127.0.0.1:%d" % free_port()), ("globalAnnounceEnabled", "false"),
                           ("localAnnounceEnabled", "false"), ("relaysEnabled", "false"), ("natEnabled", "false"),
                           ("crashReportingEnabled", "false"), ("urAccepted", "-1"), ("autoUpgradeIntervalH", "0"),
                           ("startBrowser", "false")):
            xml = re.sub(r"<%s>[^<]*</%s>" % (key, key), "<%s>%s</%s>" % (key, value, key), xml)
        folder = HOME + "/Shared"
        xml = xml.replace("<gui", '<folder id="shared" label="shared" path="%s" type="sendreceive" rescanIntervalS="3600" '
                          'fsWatcherEnabled="true" fsWatcherDelayS="1"><filesystemType>basic</filesystemType>'
                          '<device id="%s" introducedBy=""></device></folder>\n    <gui' % (folder, device), 1)
        with open(path, "w") as f:
            f.write(xml)
        self.tree.write_user_file("Shared/hello.txt", "hello\n")
        self.tree.user_systemctl("start", "syncthing.service")
        self.tree.user_systemctl("start", "syncbadge-syncthing.service")
        self.wait_state(folder + "/hello.txt", "synced", timeout=90)
        proc = self.status_of_process(self.main_pid("syncbadge-syncthing.service"))
        self.assertEqual(proc["NoNewPrivs"].strip(), "1")
        self.assertEqual(proc["Seccomp"].strip(), "2")
        self.assertEqual(self.tree.user_systemctl("is-active", "syncbadge-syncthing.service").stdout.strip(), "active")

    # -- where the manager may not make namespaces ---------------------------------------

    def test_5_starts_where_user_namespaces_are_refused(self):
        """Ubuntu 24.04 (AppArmor) and kernels without unprivileged user namespaces refuse the
        namespaces that ProtectSystem= and friends need in a user manager: the units must still
        start there, with what needs no namespace (seccomp, no new privileges) in force. The
        user manager is refused user namespaces here by a drop-in of the container's own."""
        self.tree.run(["sh", "-c", "mkdir -p /etc/systemd/system/user@.service.d && printf '[Service]\\nRestrictNamespaces=~user\\n' "
                       "> /etc/systemd/system/user@.service.d/no-user-namespaces.conf && systemctl daemon-reload"])
        self.tree.run(["systemctl", "restart", "user@%d.service" % UID])
        refused = self.tree.run(["systemd-run", "--user", "--wait", "--pipe", "-q", "unshare", "-U", "true"], user=True, check=False)
        self.assertNotEqual(refused.returncode, 0, "the user manager's children can still make user namespaces")
        self.assertEqual(self.tree.user_systemctl("is-active", "syncbadged.socket").stdout.strip(), "active")
        root = os.path.dirname(self.tree.write_user_file("Refused/b.txt", "b\n"))
        self.cli("add", root)
        self.assertEqual(self.tree.user_systemctl("is-active", "syncbadged.service").stdout.strip(), "active")
        # Known to the daemon (its scan reached it) before an engine reports it.
        self.wait_state(root + "/b.txt", "unknown")
        self.cli("set", "synced", root + "/b.txt")
        self.wait_state(root + "/b.txt", "synced")
        proc = self.status_of_process(self.main_pid("syncbadged.service"))
        self.assertEqual(proc["NoNewPrivs"].strip(), "1")
        self.assertEqual(proc["Seccomp"].strip(), "2")
        repo = self.modified_repo("refused-repo")
        self.tree.user_systemctl("restart", "syncbadge-git.service")
        self.wait_state(repo + "/tracked.txt", "pending", timeout=60)


if __name__ == "__main__":
    unittest.main()

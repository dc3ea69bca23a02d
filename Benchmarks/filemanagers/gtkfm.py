"""The GTK file managers' module of make bench-fm: Nautilus, Nemo and Caja, each with three
sides (README.md here, "A file manager module"):

- `syncbadge`: Examples/filemanagers/syncbadge_fm.py and the package, installed into a private
  data directory by `make install-user` (as the tests do), against the real daemon;
- `nextcloud`: Debian's syncstate-Nextcloud.py for that file manager, taken out of its .deb
  with dpkg-deb -x (`make bench-fm-deps`; the package itself is never installed, so neither is
  nextcloud-desktop, which Nautilus would start over D-Bus), against nextcloud_standin.py;
- `none`: no extension (the floor);
- `minimal` (only when asked for, `--sides ...,minimal`): minimal_ext.py, the least work any
  emblem extension can do (a dict lookup, no socket), told of changes by the bench through a
  FIFO: the file manager's own cost of emblems.

Every side also gets the heartbeat probe (probe/syncbadge_probe.py) in its extension directory.
Each side's files are in a data directory of its own, given to the file manager as
XDG_DATA_HOME, so each process loads exactly one side's extension (/usr/share/*-python/extensions
must hold none of them: check_clean() says so).
"""

import glob
import os
import shutil
import signal
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
PROBE = os.path.join(HERE, "probe", "syncbadge_probe.py")

COMMANDS = {"nautilus": ["nautilus", "--new-window"], "nemo": ["nemo"], "caja": ["caja", "--no-desktop"]}
EXT_DIR = {"nautilus": "nautilus-python", "nemo": "nemo-python", "caja": "caja-python"}
SETTINGS = {"nautilus": "org/gnome/nautilus/preferences", "nemo": "org/nemo/preferences",
            "caja": "org/mate/caja/preferences"}
VIEWS = {"icon": "icon-view", "list": "list-view"}
SIDES = ("syncbadge", "nextcloud", "none")
EXTRA_SIDES = ("minimal",)
MINIMAL = os.path.join(HERE, "minimal_ext.py")
# Nextcloud's emblem names (its set_emblem) drawn with SyncBadge's images of the same meaning, so
# that both sides draw the same pixels (the client's own icons come with nextcloud-desktop).
NEXTCLOUD_EMBLEMS = {"ok": "synced", "sync": "syncing", "error": "error", "warn": "ignored",
                     "ok_shared": "synced", "sync_shared": "syncing", "error_shared": "error",
                     "warn_shared": "ignored"}


# From the first pixel of a folder's emblem (its top) to a point of its icon in icon view, where a
# double-click opens it (make bench-fm's renames), read off open.png: Nautilus 43 draws the emblem
# right of the icon's top, Nemo over its bottom right corner, Caja above its top right corner.
FOLDER_ICON = {"nautilus": (-58, 48), "nemo": (-16, -12), "caja": (-22, 36)}


def check_clean(names):
    """Extensions installed system-wide would be loaded by every side: refuse to measure then."""
    found = []
    for name in names:
        for d in ("/usr/share", "/usr/local/share"):
            found += [p for p in glob.glob(os.path.join(d, EXT_DIR[name], "extensions", "*.py"))]
    if found:
        raise RuntimeError("extensions installed system-wide would load on every side: %s" % ", ".join(found))


class Side(object):
    """The data directory of one side for the three file managers."""

    def __init__(self, name, work, nextcloud_ext):
        self.name = name
        self.share = os.path.join(work, "share-" + name)
        os.makedirs(self.share)
        if name == "syncbadge":
            r = subprocess.run(["make", "-s", "-C", REPO, "install-user", "XDG_DATA_HOME=" + self.share],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               env=dict(os.environ, GIO_USE_VFS="local"))
            if r.returncode != 0:
                raise RuntimeError("make install-user failed:\n" + r.stdout.decode(errors="replace"))
        elif name == "nextcloud":
            for fm, sub in EXT_DIR.items():
                src = os.path.join(nextcloud_ext, "usr", "share", sub, "extensions", "syncstate-Nextcloud.py")
                if not os.path.isfile(src):
                    raise RuntimeError("%s is missing (make bench-fm-deps takes it out of %s-nextcloud's .deb)" % (src, fm))
                dest = os.path.join(self.share, sub, "extensions")
                os.makedirs(dest, exist_ok=True)
                shutil.copy(src, dest)
            self._nextcloud_emblems()
        elif name == "minimal":
            r = subprocess.run(["make", "-s", "-C", REPO, "install-emblems", "FM_SHARE=" + self.share],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            if r.returncode != 0:
                raise RuntimeError("make install-emblems failed:\n" + r.stdout.decode(errors="replace"))
            for sub in EXT_DIR.values():
                dest = os.path.join(self.share, sub, "extensions")
                os.makedirs(dest, exist_ok=True)
                shutil.copy(MINIMAL, dest)
        for sub in EXT_DIR.values():
            dest = os.path.join(self.share, sub, "extensions")
            os.makedirs(dest, exist_ok=True)
            shutil.copy(PROBE, dest)

    def _nextcloud_emblems(self):
        tmp = self.share + "-emblems"
        r = subprocess.run(["make", "-s", "-C", REPO, "install-emblems", "FM_SHARE=" + tmp],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            raise RuntimeError("make install-emblems failed:\n" + r.stdout.decode(errors="replace"))
        for src in glob.glob(os.path.join(tmp, "icons", "hicolor", "*", "emblems", "emblem-syncbadge-*")):
            size_dir = os.path.dirname(src)
            state, ext = os.path.splitext(os.path.basename(src)[len("emblem-syncbadge-"):])
            dest = size_dir.replace(tmp, self.share)
            os.makedirs(dest, exist_ok=True)
            for nc, mine in NEXTCLOUD_EMBLEMS.items():
                if mine == state:
                    shutil.copy(src, os.path.join(dest, "Nextcloud_" + nc + ext))
        shutil.rmtree(tmp)


class Session(object):
    """One file manager process on one folder: started, its pid found (the probe logs it),
    the probe toggled, stopped. What the harness needs of any file manager (README.md)."""

    def __init__(self, fm, side, view, folder, work, base_env, tag):
        self.place(fm, side, work, tag)
        env = dict(base_env)
        env.update(HOME=os.path.join(self.dir, "home"), XDG_CONFIG_HOME=os.path.join(self.dir, "config"),
                   XDG_CACHE_HOME=os.path.join(self.dir, "cache"), XDG_DATA_HOME=side.share,
                   GSETTINGS_BACKEND="keyfile", GSK_RENDERER="cairo", NO_AT_BRIDGE="1",
                   SYNCBADGE_PROBE_OUT=self.probe_out,
                   PATH="/usr/bin:/bin:" + os.environ.get("PATH", ""))
        for key in ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
            os.makedirs(env[key])
        if side.name == "minimal":
            self.fifo = env["SYNCBADGE_MINIMAL_FIFO"] = os.path.join(self.dir, "minimal.fifo")
            os.mkfifo(self.fifo)
        settings = os.path.join(env["XDG_CONFIG_HOME"], "glib-2.0", "settings")
        os.makedirs(settings)
        with open(os.path.join(settings, "keyfile"), "w") as f:
            f.write("[%s]\ndefault-folder-viewer='%s'\n" % (SETTINGS[fm], VIEWS[view]))
        self.env = env
        self.folder = folder
        self.proc = None
        self.pid = None

    def place(self, fm, side, work, tag):
        """What every module's session has (its directory, log and probe files), whatever
        else its __init__ sets up."""
        self.fm = fm
        self.side = side
        self.fifo = None        # the minimal side's (tell()); other sides and modules have none
        self.dir = os.path.join(work, tag)
        os.makedirs(self.dir)
        self.log_path = os.path.join(self.dir, "fm.log")
        self.probe_out = os.path.join(self.dir, "probe")
        self.dumps = 0

    def start(self):
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(["dbus-run-session", "--"] + COMMANDS[self.fm] + [self.folder], env=self.env,
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                                     cwd=self.dir)
        log.close()

    def find_pid(self, timeout=60):
        """The file manager's pid, from the probe's `loaded in PID` line."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited (%s): %s" % (self.fm, self.proc.returncode, self.log()[-2000:]))
            for line in self.log().splitlines():
                if line.startswith("syncbadge-probe: loaded in "):
                    self.pid = int(line.split()[-1])
                    return self.pid
            time.sleep(0.05)
        raise RuntimeError("%s: no probe within %gs: %s" % (self.fm, timeout, self.log()[-2000:]))

    def leave_folder(self):
        """The folder shown has gone: Nautilus, Nemo and Caja go to its parent by themselves."""

    def pending_tints(self):
        """Colours other than its own that a folder's `pending` emblem may be drawn in in its
        parent: none (Nautilus, Nemo and Caja select nothing when they go to a folder's parent)."""
        return ()

    def folder_icon(self):
        """From the top pixel of a folder's emblem to its icon (x, y), or None: not measured."""
        return FOLDER_ICON.get(self.fm)

    def can_open_folder(self):
        return self.folder_icon() is not None

    def open_folder(self, name, at):
        """Opens the folder `name`, shown with the first pixel of its emblem at `at` (x, y)."""
        dx, dy = self.folder_icon()
        subprocess.run(["xdotool", "mousemove", str(at[0] + dx), str(at[1] + dy), "click", "--repeat", "2",
                        "--delay", "80", "1"], check=True)

    def tell(self, line):
        """Tells the `minimal` side's extension a change (minimal_ext.py); nothing on the others."""
        if self.fifo is None:
            return
        try:
            fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as ex:       # ENXIO: no reader, the extension did not load
            raise RuntimeError("%s: the minimal extension is not reading %s (%s; see fm.log)" % (self.fm, self.fifo, ex))
        try:
            os.set_blocking(fd, True)       # a whole line, however full the FIFO is
            os.write(fd, (line + "\n").encode("utf-8", "surrogateescape"))
        finally:
            os.close(fd)

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def probe_start(self, timeout=30):
        """Starts the heartbeat; returns once the main loop has (the probe says so)."""
        os.kill(self.pid, signal.SIGUSR2)
        self._wait("%s.%d.on" % (self.probe_out, self.dumps + 1), timeout)

    def probe_stop(self, timeout=60):
        """Stops the heartbeat: its stamps."""
        os.kill(self.pid, signal.SIGUSR1)
        self.dumps += 1
        path = "%s.%d" % (self.probe_out, self.dumps)
        self._wait(path, timeout)
        with open(path) as f:
            return [float(x) for x in f.read().split()]

    def _wait(self, path, timeout):
        deadline = time.monotonic() + timeout
        while not os.path.exists(path):
            if time.monotonic() > deadline:
                raise RuntimeError("%s: the probe wrote no %s within %gs" % (self.fm, path, timeout))
            time.sleep(0.01)

    def stop(self):
        if self.proc is None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(5)
                break
            except subprocess.TimeoutExpired:
                pass
        # The file manager may outlive dbus-run-session's group leader: by its own pid too.
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc = None

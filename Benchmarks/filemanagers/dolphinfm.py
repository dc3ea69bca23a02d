"""Dolphin's module of make bench-fm (README.md here, "A file manager module"): Dolphin (22.12,
KF5, on Debian 12; KF6 Dolphin the same way) with three sides:

- `syncbadge`: Clients/dolphin's plugins as `make install-user PREFIX=<side>` puts them, found
  through a QT_PLUGIN_PATH of that side alone (as Clients/dolphin/README.md tells a user), against
  the real daemon;
- `nextcloud`: Debian 12's `dolphin-nextcloud` 3.7.3 plugins, taken out of its .deb with
  dpkg-deb -x (`make bench-fm-deps`; never installed: it pulls nextcloud-desktop), in that side's
  QT_PLUGIN_PATH with its helper library through LD_LIBRARY_PATH (the plugin's RUNPATH is
  /usr/lib/<multiarch>/nextcloud), against nextcloud_standin.py;
- `none`: no plugin (the floor).

Every side also gets the heartbeat probe (probe/dolphin: a KOverlayIconPlugin of no overlays
with a 5 ms Qt timer, the same signals and files as probe/syncbadge_probe.py), built here with
CMake into .build/dolphin-probe. Qt's own plugin directory must hold neither side's overlay
plugin (check_clean() says so): every side would load it.

The same pixels: Nextcloud's plugin names Breeze's `vcs-normal`, `vcs-update-required`,
`vcs-locally-modified-unstaged` and `vcs-conflicting`. Each side runs with an icon theme of its
own data directory, `sbbench`, that inherits Breeze; the Nextcloud side's holds SyncBadge's
images of the same meaning under those names, so both plugins draw the same emblems and the
screen is read the same way. The view: Dolphin's global view properties (`GlobalViewProps` in
dolphinrc, `ViewMode` 0 icons or 1 details in the session's
view_properties/global/.directory), previews off (empty .txt files: only thumbnailer noise).
"""

import glob
import os
import shutil
import subprocess

import gtkfm

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
PROBE_SRC = os.path.join(HERE, "probe", "dolphin")
PROBE_BUILD = os.path.join(REPO, ".build", "dolphin-probe")

SIDES = ("syncbadge", "nextcloud", "none")
VIEW_MODES = {"icon": 0, "list": 1}     # DolphinView::Mode: IconsView, DetailsView
# Nextcloud's overlay names (its overlaysForString) drawn with SyncBadge's image of that meaning.
NEXTCLOUD_EMBLEMS = {"vcs-normal": "synced", "vcs-update-required": "syncing",
                     "vcs-locally-modified-unstaged": "ignored", "vcs-conflicting": "error"}
THEME = "sbbench"
# From the top pixel of a folder's emblem (drawn over the icon's bottom right corner) to the
# icon, in icon view at Dolphin's default size (read off open.png).
FOLDER_ICON = (-10, -5)
# The `pending` emblem as Dolphin draws it on a selected item (Breeze's selection tint, read off a
# screenshot): Dolphin selects the folder it came up from once that folder is back, and in the
# bench neither Escape nor a click on the view kept that selection cleared until the next grab.
SELECTED_PENDING = bytes((115, 159, 165))
OWN_PLUGINS = ("syncbadge_overlay.so", "nextclouddolphinoverlayplugin.so")


def multiarch():
    return subprocess.run(["gcc", "-print-multiarch"], stdout=subprocess.PIPE, check=True,
                          universal_newlines=True).stdout.strip()


def qt_plugin_dirs():
    """Qt's own plugin directories (qtpaths, qtpaths6): what every Dolphin loads."""
    dirs = []
    for tool in ("qtpaths", "qtpaths6"):
        try:
            out = subprocess.run([tool, "--plugin-dir"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 universal_newlines=True).stdout.strip()
        except FileNotFoundError:
            continue
        if out:
            dirs.append(out)
    return dirs or glob.glob("/usr/lib/*/qt[56]/plugins")


def check_clean(names=None):
    """Overlay plugins in Qt's own plugin directory load on every side: refuse to measure then."""
    found = [p for d in qt_plugin_dirs() for name in OWN_PLUGINS
             for p in glob.glob(os.path.join(d, "kf[56]", "overlayicon", name))]
    if found:
        raise RuntimeError("Dolphin overlay plugins installed system-wide would load on every side: %s"
                           % ", ".join(found))


def run(argv, what, **kw):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw)
    if r.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (what, r.stdout.decode(errors="replace")[-3000:]))
    return r.stdout.decode(errors="replace")


def build_probe():
    """The probe plugin (CMake, built once per run; the build is incremental): its .so and
    its kfN namespace."""
    run(["cmake", "-S", PROBE_SRC, "-B", PROBE_BUILD, "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-Wno-dev"],
        "cmake (the Dolphin probe)")
    run(["cmake", "--build", PROBE_BUILD], "the Dolphin probe's build")
    found = glob.glob(os.path.join(PROBE_BUILD, "bin", "kf[56]", "overlayicon", "syncbadge_probe.so"))
    if len(found) != 1:
        raise RuntimeError("not one Dolphin probe plugin but %r" % found)
    return found[0], found[0].split(os.sep)[-3]


class Side(object):
    """One side's plugin directory (its QT_PLUGIN_PATH) and data directory (its icon theme)."""

    def __init__(self, name, work, nextcloud_ext):
        self.name = name
        self.dir = os.path.join(work, "dolphin-" + name)
        self.share = os.path.join(self.dir, "share")
        os.makedirs(self.share)
        probe, kf = build_probe()
        self.kf = kf
        self.qt = "qt" + kf[2:]
        self.plugins = os.path.join(self.dir, "lib", multiarch(), self.qt, "plugins")
        self.env = {"QT_PLUGIN_PATH": self.plugins}
        if name == "syncbadge":
            # As the README tells a user: make install-user PREFIX=P, then QT_PLUGIN_PATH.
            said = run(["make", "-s", "-C", REPO, "install-user", "PREFIX=" + self.dir, "XDG_DATA_HOME=" + self.share],
                       "make install-user", env=dict(os.environ, GIO_USE_VFS="local"))
            if not os.path.isfile(os.path.join(self.plugins, kf, "overlayicon", "syncbadge_overlay.so")):
                raise RuntimeError("make install-user put no syncbadge_overlay.so in %s:\n%s" % (self.plugins, said))
        elif name == "nextcloud":
            lib = os.path.join(nextcloud_ext, "usr", "lib", multiarch())
            for sub, so in (("overlayicon", "nextclouddolphinoverlayplugin.so"),
                            ("kfileitemaction", "nextclouddolphinactionplugin.so")):
                src = os.path.join(lib, self.qt, "plugins", kf, sub, so)
                if not os.path.isfile(src):
                    raise RuntimeError("%s is missing (make bench-fm-deps takes it out of dolphin-nextcloud's .deb)" % src)
                os.makedirs(os.path.join(self.plugins, kf, sub), exist_ok=True)
                shutil.copy(src, os.path.join(self.plugins, kf, sub))
            self.env["LD_LIBRARY_PATH"] = os.path.join(lib, "nextcloud")
        os.makedirs(os.path.join(self.plugins, kf, "overlayicon"), exist_ok=True)
        shutil.copy(probe, os.path.join(self.plugins, kf, "overlayicon"))
        self._theme()

    def _theme(self):
        """sbbench, inheriting Breeze; on the Nextcloud side with its overlay names drawn as ours."""
        theme = os.path.join(self.share, "icons", THEME)
        dirs = []
        if self.name == "nextcloud":
            tmp = self.dir + "-emblems"
            run(["make", "-s", "-C", REPO, "install-emblems", "FM_SHARE=" + tmp], "make install-emblems")
            for src in glob.glob(os.path.join(tmp, "icons", "hicolor", "*", "emblems", "emblem-syncbadge-*")):
                size = os.path.basename(os.path.dirname(os.path.dirname(src)))
                state, ext = os.path.splitext(os.path.basename(src)[len("emblem-syncbadge-"):])
                for nc, mine in NEXTCLOUD_EMBLEMS.items():
                    if mine == state:
                        dest = os.path.join(theme, size, "emblems")
                        os.makedirs(dest, exist_ok=True)
                        shutil.copy(src, os.path.join(dest, nc + ext))
                        if size + "/emblems" not in dirs:
                            dirs.append(size + "/emblems")
            shutil.rmtree(tmp)
        os.makedirs(theme, exist_ok=True)
        with open(os.path.join(theme, "index.theme"), "w") as f:
            f.write("[Icon Theme]\nName=SyncBadge bench\nInherits=breeze,hicolor\nDirectories=%s\n\n" % ",".join(sorted(dirs)))
            for d in sorted(dirs):
                size = d.split("/")[0]
                if size == "scalable":
                    f.write("[%s]\nSize=16\nMinSize=8\nMaxSize=512\nContext=Emblems\nType=Scalable\n\n" % d)
                else:
                    f.write("[%s]\nSize=%s\nContext=Emblems\nType=Fixed\n\n" % (d, size.split("x")[0]))


class Session(gtkfm.Session):
    """One Dolphin process on one folder in one view. Found, probed and stopped as the GTK file
    managers are (gtkfm.Session: the probe's `loaded in PID` line, SIGUSR2/SIGUSR1 and its
    files, the process group then the pid); made and started here."""

    def __init__(self, fm, side, view, folder, work, base_env, tag):  # noqa: super's makes GTK settings
        self.place(fm, side, work, tag)
        env = dict(base_env)
        data = os.path.join(self.dir, "data")
        env.update(HOME=os.path.join(self.dir, "home"), XDG_CONFIG_HOME=os.path.join(self.dir, "config"),
                   XDG_CACHE_HOME=os.path.join(self.dir, "cache"), XDG_DATA_HOME=data,
                   # Qt's KDE platform theme reads kdeglobals (the icon theme), as in a Plasma session.
                   XDG_CURRENT_DESKTOP="KDE", KDE_SESSION_VERSION=side.kf[2:], NO_AT_BRIDGE="1",
                   SYNCBADGE_PROBE_OUT=self.probe_out, PATH="/usr/bin:/bin:" + os.environ.get("PATH", ""))
        env.update(side.env)
        for key in ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
            os.makedirs(env[key])
        # The side's icons; the view properties of this session.
        os.symlink(os.path.join(side.share, "icons"), os.path.join(data, "icons"))
        props = os.path.join(data, "dolphin", "view_properties", "global")
        os.makedirs(props)
        with open(os.path.join(props, ".directory"), "w") as f:
            f.write("[Dolphin]\nVersion=4\nViewMode=%d\nPreviewsShown=false\n" % VIEW_MODES[view])
        config = env["XDG_CONFIG_HOME"]
        with open(os.path.join(config, "kdeglobals"), "w") as f:
            f.write("[Icons]\nTheme=%s\n" % THEME)
        with open(os.path.join(config, "dolphinrc"), "w") as f:
            f.write("[General]\nGlobalViewProps=true\nRememberOpenedTabs=false\nShowFullPath=true\n")
        self.env = env
        self.folder = folder
        self.proc = None
        self.pid = None

    def start(self):
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(["dbus-run-session", "--", "dolphin", "--new-window", self.folder], env=self.env,
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                                     cwd=self.dir)
        log.close()

    def folder_icon(self):
        return FOLDER_ICON

    def pending_tints(self):
        return (SELECTED_PENDING,)

    def open_folder(self, name, at):
        """A click on its icon (Dolphin's double-click mode: it selects) and Return: xdotool's
        double-click only selects in the bench's Dolphin under Xvfb."""
        dx, dy = self.folder_icon()
        subprocess.run(["xdotool", "mousemove", str(at[0] + dx), str(at[1] + dy), "click", "1", "key", "Return"],
                       check=True)

    def leave_folder(self):
        """Dolphin stays on the path of a folder gone from under it, empty, and does not list it
        again once it is back: a user goes up (Alt+Up). The click gives the view the keyboard."""
        subprocess.run(["xdotool", "mousemove", "500", "300", "click", "1"], check=True)
        subprocess.run(["xdotool", "key", "--clearmodifiers", "alt+Up"], check=True)

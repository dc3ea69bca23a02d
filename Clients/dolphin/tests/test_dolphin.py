"""The Dolphin plugins (Clients/dolphin) in the real Dolphin, against the real syncbadged.

Run by `make test-dolphin` (a step of `make test`): under xvfb-run, with /usr/bin/python3. With
the daemon on a private socket:

1. the plugins and the emblems are installed by `make install-user PREFIX=<tmp>` as a user would,
   and Dolphin started with the README's QT_PLUGIN_PATH on a root (Breeze icons, as in Plasma);
   with no daemon yet the plugin says so once, and Dolphin shows the files;
2. the daemon starts, a provider sets every state: each state's emblem is found on the
   screenshot by its colour, in the order of the files (so next to its file), none for `unknown`;
3. a SET and a provider's new badge (`* BADGE`, its image installed by the plugin) change the
   emblems in later screenshots of the same window;
4. a right-click on a file shows the Sync submenu; "Show details" reaches the daemon (its answer
   arrives as a notification, at a stand-in notification server); the engine's own item gets the
   engine's answer when the daemon offers `action-reply`; a right-click on the background shows
   the engine's toolbar item, whose menu item reaches the engine;
5. the daemon is restarted: the emblems go while it is down and come back, and a SET after the
   restart shows.

Screenshots and logs of a failing run are kept under $SYNCBADGE_DOLPHIN_ARTIFACTS (default
/tmp/syncbadge-dolphin-artifacts), of a passing one too with SYNCBADGE_DOLPHIN_KEEP=1.
SYNCBADGE_DOLPHIN_SCREENSHOTS=DIR saves the window as
DIR/dolphin.png (make screenshots).
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "Examples", "filemanagers", "tests"))

import fmsession as fs  # noqa: E402  (the GTK tests' daemon, screen and click helpers)

BINARY = os.environ.get("SYNCBADGED") or os.path.join(REPO, ".build", "debug", "syncbadged")
ARTIFACTS = os.environ.get("SYNCBADGE_DOLPHIN_ARTIFACTS") or "/tmp/syncbadge-dolphin-artifacts"
SCREENSHOTS = os.environ.get("SYNCBADGE_DOLPHIN_SCREENSHOTS")

FILES = [("a-synced.txt", "synced"), ("b-syncing.txt", "syncing"), ("c-error.txt", "error"),
         ("d-conflict.txt", "conflict"), ("e-pending.txt", "pending"), ("f-ignored.txt", "ignored"),
         ("g-unknown.txt", "unknown")]
CLOUD = (0xff, 0x6e, 0xc7)
CLOUD_SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="320" height="320" viewBox="0 0 320 320">'
             '<circle cx="160" cy="160" r="160" fill="#ff6ec7"/></svg>\n')
COLOURS = dict(fs.BADGE_COLOURS, cloud=CLOUD)
# From an emblem's centre (Dolphin draws it at the icon's lower right) to the icon's middle.
ICON = (-18, -18)
KDEGLOBALS = "[Icons]\nTheme=breeze\n"

PREFIX = None


class Dolphin(fs.FileManager):
    COMMANDS = dict(fs.FileManager.COMMANDS, dolphin=["dolphin", "--new-window"])


def multiarch():
    return subprocess.run(["gcc", "-print-multiarch"], stdout=subprocess.PIPE, check=True,
                          universal_newlines=True).stdout.strip()


def setUpModule():
    global PREFIX
    if not os.environ.get("DISPLAY"):
        raise RuntimeError("no DISPLAY: run under xvfb-run -a -s '-screen 0 1280x800x24' (make test-dolphin)")
    if not os.access(BINARY, os.X_OK):
        raise RuntimeError("no daemon at %s (swift build --product syncbadged, or set SYNCBADGED)" % BINARY)
    if shutil.which("dolphin", path="/usr/bin:/bin") is None:
        raise RuntimeError("dolphin is not installed (make deps)")
    # As the README tells a user: make install-user PREFIX=P, then QT_PLUGIN_PATH. GIO_USE_VFS:
    # rsvg-convert would otherwise start gvfsd on a session bus.
    PREFIX = tempfile.mkdtemp(prefix="syncbadge-dolphin-prefix-")
    scratch = ["SCRATCH=" + os.environ["SYNCBADGE_SCRATCH"]] if os.environ.get("SYNCBADGE_SCRATCH") else []
    r = subprocess.run(["make", "-s", "-C", REPO, "install-user", "PREFIX=" + PREFIX,
                        "XDG_DATA_HOME=" + os.path.join(PREFIX, "share")] + scratch,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=dict(os.environ, GIO_USE_VFS="local"))
    if r.returncode != 0:
        raise RuntimeError("make install-user failed:\n" + r.stdout.decode(errors="replace"))
    plugins = os.path.join(PREFIX, "lib", multiarch(), "qt5", "plugins", "kf5")
    for plugin in ("overlayicon/syncbadge_overlay.so", "kfileitemaction/syncbadge_actions.so"):
        if not os.path.isfile(os.path.join(plugins, plugin)):
            raise RuntimeError("make install-user did not install %s:\n%s" % (plugin, r.stdout.decode(errors="replace")))


def tearDownModule():
    if PREFIX:
        shutil.rmtree(PREFIX, ignore_errors=True)


class DolphinTests(unittest.TestCase):
    maxDiff = None

    def test_dolphin(self):
        self.work = os.path.realpath(tempfile.mkdtemp(prefix="syncbadge-dolphin-"))
        self.shots = 0
        self.daemon = fs.Daemon(BINARY, self.work)
        self.fm = None
        self.conns = []
        ok = False
        try:
            self.scenario()
            ok = True
        finally:
            if self.fm is not None:
                self.fm.stop()
            for conn in self.conns:
                conn.close()
            self.daemon.stop()
            if not ok or os.environ.get("SYNCBADGE_DOLPHIN_KEEP"):
                kept = os.path.join(ARTIFACTS, "dolphin-%s" % time.strftime("%Y%m%d-%H%M%S"))
                os.makedirs(kept, exist_ok=True)
                for entry in os.listdir(self.work):
                    if entry.endswith((".png", ".log", ".jsonl")):
                        shutil.copy(os.path.join(self.work, entry), kept)
                sys.stderr.write("\ndolphin: screenshots and logs kept in %s\n" % kept)
            shutil.rmtree(self.work, ignore_errors=True)

    def scenario(self):
        root = self.root = os.path.join(self.work, "Sync")
        os.makedirs(root)
        for fname, _ in FILES:
            with open(os.path.join(root, fname), "w") as f:
                f.write("x")
        share = os.path.join(self.work, "share")
        shutil.copytree(os.path.join(PREFIX, "share"), share, symlinks=True)
        env = dict(os.environ)
        env.update(PATH="/usr/bin:/bin:" + os.environ.get("PATH", ""), HOME=os.path.join(self.work, "home"),
                   XDG_DATA_HOME=share, XDG_CONFIG_HOME=os.path.join(self.work, "config"),
                   XDG_CACHE_HOME=os.path.join(self.work, "cache"), SYNCBADGE_SOCKET=self.daemon.socket,
                   SYNCBADGE_DEBUG="1", QT_PLUGIN_PATH=os.path.join(PREFIX, "lib", multiarch(), "qt5", "plugins"),
                   # Qt's KDE platform theme: the Breeze icons of kdeglobals, as in a Plasma session.
                   XDG_CURRENT_DESKTOP="KDE", KDE_SESSION_VERSION="5", NO_AT_BRIDGE="1")
        for key in ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
            os.makedirs(env[key])
        with open(os.path.join(env["XDG_CONFIG_HOME"], "kdeglobals"), "w") as f:
            f.write(KDEGLOBALS)

        # 0. No daemon yet: Dolphin shows the directory, and the plugin says so once.
        self.fm = Dolphin("dolphin", self.work, env)
        self.fm.start(root)
        self.fm.wait_log(r"^syncbadge: no daemon at %s" % re.escape(self.daemon.socket), 30)
        self.fm.wait_log(r"^syncbadge: asked about the entries of %s \(no daemon yet\)" % re.escape(root), 30)
        self.daemon.start()
        admin = self.connect("admin", "test-admin")
        admin.request("ADD-ROOT", root, timeout=30)
        engine = self.connect("provider", "test-engine")
        caps = engine.caps
        engine.request("DEFINE-TOOLBAR", name="Engine", tooltip="Pause or resume syncing", timeout=10)
        engine.request("DEFINE-MENU", "toolbar", "engine.pause", title="Pause syncing", timeout=10)
        engine.request("CLAIM", root, timeout=10)
        engine.request("DEFINE-MENU", "items", "test.hello", title="Say hello", timeout=10)
        engine.request("DEFINE-MENU", "container", "test.rescan", title="Rescan now", timeout=10)
        for fname, state in FILES:
            if state != "unknown":
                engine.request("SET", state, self.path(fname), progress=40 if state == "syncing" else None,
                               message="disk full" if state == "error" else None, timeout=10)

        # 1. Every state's emblem next to its file; none for unknown.
        expected = [state for _, state in FILES if state != "unknown"]
        first = self.wait_emblems("every state's emblem", expected)
        self.fm.wait_log(r"^syncbadge: connected to ", 1)
        # Once: the menu plugin connects when Dolphin first builds a context menu.
        self.assertEqual(len(re.findall(r"(?m)^syncbadge: no daemon at ", self.fm.text())), 1)
        where = dict((FILES[i][0], (x, y)) for i, (_, x, y) in enumerate(first[1]))

        # 2. Live, in the same window: a SET, and a badge a provider defines now.
        pid = self.fm.proc.pid
        cloud = os.path.join(self.work, "cloud.svg")
        with open(cloud, "w") as f:
            f.write(CLOUD_SVG)
        engine.request("DEFINE-BADGE", "cloud", label="In the cloud", glyph="c", ascii="c", color="36",
                       image=cloud, timeout=10)
        engine.request("SET", "synced", self.path("c-error.txt"), timeout=10)
        engine.request("SET", "synced", self.path("g-unknown.txt"), badge="cloud", timeout=10)
        changed = ["synced", "syncing", "synced", "conflict", "pending", "ignored", "cloud"]
        later = self.wait_emblems("the changed emblems", changed)
        self.assertEqual(pid, self.fm.proc.pid)
        self.assertTrue(os.path.isfile(os.path.join(share, "icons", "hicolor", "scalable", "emblems",
                                                    "emblem-syncbadge-cloud.svg")))
        x, y = where["c-error.txt"]
        self.assertTrue(any(s == "synced" and abs(ex - x) <= 3 and abs(ey - y) <= 3 for s, ex, ey in later[1]),
                        "the green emblem is not where the red one was (%d,%d): %r" % (x, y, later[1]))

        # 3. The Sync submenu on a right-click on a file, and "Show details" reaching the daemon.
        ex, ey = where["a-synced.txt"]
        log_at = self.open_menu(ex + ICON[0], ey + ICON[1],
                                r"menu items for 1 paths: test\.hello syncbadge\.ignore syncbadge\.details")
        self.choose(["Sync", "syncbadge.details"], log_at)
        note = self.wait_note("Sync: Show details")
        self.assertIn("state=synced gen=", note["body"])
        self.fm.wait_log(r"^syncbadge: action syncbadge\.details -> OK state=synced", 5, start=log_at)

        # 3b. The engine's own item: with action-reply, the engine's answer is what shows.
        log_at = self.open_menu(ex + ICON[0], ey + ICON[1], r"menu items for 1 paths: test\.hello .*")
        self.choose(["Sync", "test.hello"], log_at)
        push = self.engine_action(engine, "test.hello")
        self.assertEqual(push.opt("from"), "dolphin")
        self.assertEqual(push.fields[1:], [os.fsencode(self.path("a-synced.txt"))])
        if "action-reply" in caps:
            token = push.opt("reply")
            self.assertTrue(token, "ACTION without reply= though the daemon offers action-reply: %r" % push)
            engine.request("ANSWER", token, message="hello from the engine", timeout=10)
            self.assertEqual(self.wait_note("Sync: Say hello")["body"], "hello from the engine")
            self.fm.wait_log(r"^syncbadge: action test\.hello sent with reply=1$", 1, start=log_at)
        else:
            self.assertIsNone(push.opt("reply"))
            self.assertEqual(self.wait_note("Sync: Say hello")["body"], "done")

        # 3c. The background: the directory's own items (MENU container) in a Sync submenu, and
        # the engine's toolbar item, whose menu item reaches the engine.
        background = (ex + 40, max(y for _, _, y in later[1]) + 120)
        menu = r"background menu for %s: 1 items; toolbar items: Engine" % re.escape(root)
        log_at = self.open_menu(background[0], background[1], menu)
        self.choose(["Sync", "test.rescan"], log_at)
        push = self.engine_action(engine, "test.rescan")
        self.assertEqual(push.opt("target"), root)
        if "action-reply" in caps:
            engine.request("ANSWER", push.opt("reply"), message="rescanning", timeout=10)
        self.wait_note("Sync: Rescan now")
        menu = r"background menu for %s: 1 items; toolbar items: Engine" % re.escape(root)
        log_at = self.open_menu(background[0], background[1], menu)
        self.choose(["Engine", "engine.pause"], log_at)
        push = self.engine_action(engine, "engine.pause")
        self.assertEqual(push.opt("from"), "dolphin")
        if "action-reply" in caps:
            # An engine that says it failed: its message, as an error.
            engine.request("ANSWER", push.opt("reply"), message="no network", failed=1, timeout=10)
            self.assertEqual(self.wait_note("Sync: Pause syncing")["body"], "failed: no network")
        else:
            self.wait_note("Sync: Pause syncing")
        self.wait_emblems("the emblems with the menus closed", changed)

        # 4. A daemon restart: no emblems while it is down, all back after, and live again.
        log_at = len(self.fm.text())
        self.daemon.stop()
        for conn in self.conns:
            conn.close()
        self.conns = []
        self.fm.wait_log(r"^syncbadge: disconnected", 10, start=log_at)
        self.wait_emblems("no emblems while the daemon is down", [])
        self.daemon.start()
        self.fm.wait_log(r"^syncbadge: connected to ", 15, start=log_at)
        self.wait_emblems("the emblems after the restart", changed)
        engine = self.connect("provider", "test-engine")
        engine.request("SET", "synced", self.path("e-pending.txt"), timeout=10)
        self.wait_emblems("a SET after the restart",
                          ["synced", "syncing", "synced", "conflict", "synced", "ignored", "cloud"])
        self.assertEqual(pid, self.fm.proc.pid)

        # 5. For the documentation: every state again, and the Sync submenu of a file.
        if SCREENSHOTS:
            self.documentation(engine)

    def documentation(self, engine):
        # The engine's claim and items went with its connection at the restart: again.
        engine.request("CLAIM", self.root, timeout=10)
        engine.request("DEFINE-MENU", "items", "test.hello", title="Sync now", timeout=10)
        engine.request("SET", "error", self.path("c-error.txt"), message="disk full", timeout=10)
        engine.request("SET", "pending", self.path("e-pending.txt"), timeout=10)
        every = ["synced", "syncing", "error", "conflict", "pending", "ignored", "cloud"]
        shot, found = self.wait_emblems("every state again", every)
        # The banner Dolphin shows to root (the tests run as root) has its close button at the
        # window's top right, under the toolbar: closed when it is there, kept when not.
        window = subprocess.run(["xdotool", "search", "--onlyvisible", "--class", "dolphin"], stdout=subprocess.PIPE,
                                universal_newlines=True).stdout.split()
        if window:
            geometry = subprocess.run(["xdotool", "getwindowgeometry", "--shell", window[0]], stdout=subprocess.PIPE,
                                      universal_newlines=True, check=True).stdout
            g = dict(line.split("=", 1) for line in geometry.split())
            x, y, w = int(g["X"]), int(g["Y"]), int(g["WIDTH"])
            if os.getuid() == 0:
                fs.left_click(x + w - 23, y + 58)
            self.settle("the banner to close")
        shot, found = self.wait_emblems("every state without the banner", every)
        ex, ey = found[4][1], found[4][2]   # e-pending.txt: its menu leaves the first row in view
        log_at = self.open_menu(ex + ICON[0], ey + ICON[1], r"menu items for 1 paths: .*syncbadge\.details")
        rx = r"(?m)^syncbadge: menu item Sync at (-?\d+),(-?\d+) size (\d+)x(\d+)$"
        m = self.fm.wait_log(rx, 10, start=log_at)
        x, y, w, h = map(int, m.groups())
        fs.left_click(x + 40, y + h // 2)
        self.fm.wait_log(r"(?m)^syncbadge: menu item syncbadge\.details at ", 10, start=log_at)
        fs.xdotool("mousemove", x + w + 30, y + h // 2)   # onto the engine's item, highlighted
        final = self.settle("the menu")
        os.makedirs(SCREENSHOTS, exist_ok=True)
        subprocess.run(["convert", final.png, "-bordercolor", "black", "-border", "1", "-trim", "+repage",
                        os.path.join(SCREENSHOTS, "dolphin.png")], check=True)
        fs.xdotool("key", "Escape", "Escape")

    # -- helpers ------------------------------------------------------------------------

    def path(self, fname):
        return os.path.join(self.root, fname)

    def connect(self, role, name):
        conn = self.daemon.connect(role, name)
        self.conns.append(conn)
        return conn

    def shot(self, label):
        self.shots += 1
        return fs.screenshot(os.path.join(self.work, "%02d-%s.png" % (self.shots, label)))

    def settle(self, what):
        """Screenshots until two in a row are the same (an animation is over); the last one."""
        stable = [self.shot("settle")]

        def settled():
            stable.append(self.shot("settle"))
            return fs.changed_pixels(stable[-2], stable[-1], step=1) == 0
        fs.wait_until(what + " to settle", settled, 10, interval=0.3)
        return stable[-1]

    def open_menu(self, x, y, expected):
        """Right-clicks at x,y until the plugin logs the menu `expected` (a regular expression
        of what follows `syncbadge: `); returns where the log stood before that click. A menu
        waits for the daemon at most 100 ms: on a loaded machine the first one for a request
        may come without the daemon's answer, and the next one answers from the cache."""
        said = r"(?m)^syncbadge: ((?:menu items for \d+ paths|background menu for |no menu for ).*)$"
        for attempt in range(3):
            before = self.shot("before-menu")
            log_at = len(self.fm.text())
            fs.right_click(x, y)
            line = self.fm.wait_log(said, 10, start=log_at).group(1)
            if re.fullmatch(expected, line):
                return log_at
            sys.stderr.write("\ndolphin: menu %d was %r, not /%s/: again\n" % (attempt + 1, line, expected))
            fs.xdotool("key", "Escape")
            fs.wait_until("the menu to close", lambda: fs.changed_pixels(before, self.shot("menu-closed")) < 8000, 10,
                          interval=0.2)
        self.fail("the menu never was /%s/" % expected)

    def choose(self, labels, log_at):
        """Clicks through an open context menu: each label's item, where the plugin logged it
        (a submenu's items are logged once it is on the screen)."""
        for label in labels:
            rx = r"(?m)^syncbadge: menu item %s at (-?\d+),(-?\d+) size (\d+)x(\d+)$" % re.escape(label)
            m = self.fm.wait_log(rx, 10, start=log_at)
            x, y, w, h = map(int, m.groups())
            self.assertTrue(w > 0 and h > 0, "%s: %r" % (label, m.groups()))
            self.shot("menu-" + label)
            fs.left_click(x + min(w // 2, 40), y + h // 2)

    def wait_note(self, summary):
        notes = fs.wait_until("the notification %r" % summary, lambda: [
            n for n in self.fm.notifications() if n["summary"] == summary], 10)
        return notes[-1]

    def engine_action(self, engine, action_id):
        def action():
            push = engine.next_push(0.2)
            return push is not None and push.kind == "ACTION" and push.arg(0) == action_id and push
        return fs.wait_until("the action %s at the engine" % action_id, action, 10)

    def wait_emblems(self, what, states, timeout=30):
        """Screenshots until the emblems on the screen, in reading order, are `states`;
        returns (the screenshot, its emblems)."""
        seen = []

        def check():
            shot = self.shot(what.replace(" ", "-").replace("'", ""))
            found = fs.emblems(shot, COLOURS)
            seen[:] = [found]
            if [s for s, _, _ in found] == states:
                return shot, found
            os.unlink(shot.png)   # only the last one is kept
            self.shots -= 1
            return None
        try:
            return fs.wait_until("%s in Dolphin" % what, check, timeout, interval=0.3)
        except fs.Failure as ex:
            self.shot("failed")
            raise fs.Failure("%s; expected %s, the last screenshot had %s" % (ex, states, seen and seen[0]))


if __name__ == "__main__":
    unittest.main()

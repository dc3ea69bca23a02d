"""The extension (Examples/filemanagers/syncbadge_fm.py) in the real Nautilus, Nemo and Caja.

Run by `make test-filemanagers` (a step of `make test`): under xvfb-run and dbus-run-session,
with /usr/bin/python3 (gi). For each file manager, with the real syncbadged on a private socket:

1. the extension and the emblems are installed by `make install-user` into a private data
   directory, and the file manager opened on a root whose files a provider set to every state;
2. each state's emblem is found on the screenshot by its colour, in the order of the files
   (so next to its file), and `unknown` shows none;
3. a SET and a provider's new badge (`* BADGE`, image installed by the extension) change the
   emblems in later screenshots of the same window;
4. a right-click shows the Sync submenu, and "Show details" reaches the daemon: its answer
   arrives as a notification (notify-send, to a stand-in notification server); the engine's
   own item asks for the engine's answer (reply=1), which is the notification; in Caja, the
   engine's toolbar item is a button in the window's toolbar, whose menu item reaches the engine
   and whose answer is the notification; the engine renames its toolbar item and the extension
   follows the `* TOOLBAR` push;
5. the daemon is restarted: the emblems go while it is down and come back, and a SET after the
   restart shows.

A file manager that is not installed fails its test; SYNCBADGE_FM_SKIP=nemo,caja skips on
purpose. Screenshots and logs of a failing run are kept under $SYNCBADGE_FM_ARTIFACTS (default
/tmp/syncbadge-fm-artifacts). SYNCBADGE_FM_SCREENSHOTS=DIR saves each file manager's window
to DIR/<name>.png (make screenshots).
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import fmsession as fs

BINARY = os.environ.get("SYNCBADGED") or os.path.join(fs.REPO, ".build", "debug", "syncbadged")
ARTIFACTS = os.environ.get("SYNCBADGE_FM_ARTIFACTS") or "/tmp/syncbadge-fm-artifacts"
SCREENSHOTS = os.environ.get("SYNCBADGE_FM_SCREENSHOTS")
SKIP = set(s for s in os.environ.get("SYNCBADGE_FM_SKIP", "").split(",") if s)

# (name, state) in name order: the order the file managers lay them out.
FILES = [("a-synced.txt", "synced"), ("b-syncing.txt", "syncing"), ("c-error.txt", "error"),
         ("d-conflict.txt", "conflict"), ("e-pending.txt", "pending"), ("f-ignored.txt", "ignored"),
         ("g-unknown.txt", "unknown")]
CLOUD = (0xff, 0x6e, 0xc7)
CLOUD_SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="320" height="320" viewBox="0 0 320 320">'
             '<circle cx="160" cy="160" r="160" fill="#ff6ec7"/></svg>\n')
COLOURS = dict(fs.BADGE_COLOURS, cloud=CLOUD)

# Where to right-click a file, from its emblem's centre (the emblem's place differs: Nautilus
# and Caja draw it at the icon's top right, Nemo at its lower right), and the keys that choose
# "Show details", the last item of the Sync submenu, itself the item before "Properties".
CLICK = {"nautilus": (-58, 40), "nemo": (-14, -15), "caja": (-23, 26)}
KEYS = {"nautilus": ["Up", "Up", "Right", "Up", "Return"],
        "nemo": ["Up", "Up", "Right", "End", "Return"],
        "caja": ["Up", "Up", "Right", "End", "Return"]}

# Each file manager's Python extension host: the library and its package.
HOSTS = {"nautilus": ("/usr/lib/*/nautilus/extensions-4/libnautilus-python.so", "python3-nautilus"),
         "nemo": ("/usr/lib/*/nemo/extensions-3.0/libnemo-python.so", "nemo-python"),
         "caja": ("/usr/lib/*/caja/extensions-2.0/libcaja-python.so", "python3-caja")}
LIST_VIEW_KEY = {"nautilus": "ctrl+1", "nemo": "ctrl+2", "caja": "ctrl+2"}

SETTINGS = """\
[org/gnome/nautilus/list-view]
default-visible-columns=['name', 'size', 'SyncBadge::sync', 'date_modified']

[org/nemo/list-view]
default-visible-columns=['name', 'size', 'SyncBadge::sync', 'date_modified']

[org/mate/caja/list-view]
default-visible-columns=['name', 'size', 'SyncBadge::sync', 'date_modified']
"""

SHARE = None


def setUpModule():
    global SHARE
    if not os.environ.get("DISPLAY"):
        raise RuntimeError("no DISPLAY: run under xvfb-run -a -s '-screen 0 1280x800x24' dbus-run-session "
                           "(make test-filemanagers)")
    if not os.access(BINARY, os.X_OK):
        raise RuntimeError("no daemon at %s (swift build --product syncbadged, or set SYNCBADGED)" % BINARY)
    SHARE = tempfile.mkdtemp(prefix="syncbadge-fm-share-")
    # GIO_USE_VFS=local: rsvg-convert would otherwise start gvfsd on the session bus, which
    # complains when the bus goes at the end of the run.
    subprocess.run(["make", "-s", "-C", fs.REPO, "install-user", "XDG_DATA_HOME=" + SHARE], check=True,
                   stdout=subprocess.DEVNULL, env=dict(os.environ, GIO_USE_VFS="local"))


def tearDownModule():
    if SHARE:
        shutil.rmtree(SHARE, ignore_errors=True)


class FileManagerTests(unittest.TestCase):
    maxDiff = None

    def test_caja(self):
        self.run_file_manager("caja")

    def test_nautilus(self):
        self.run_file_manager("nautilus")

    def test_nemo(self):
        self.run_file_manager("nemo")

    # -- the run ------------------------------------------------------------------------

    def run_file_manager(self, name):
        if name in SKIP:
            self.skipTest("SYNCBADGE_FM_SKIP names %s" % name)
        if shutil.which(name, path="/usr/bin:/bin") is None:
            self.fail("%s is not installed (apt-get install %s; SYNCBADGE_FM_SKIP=%s skips it)"
                      % (name, {"nautilus": "nautilus python3-nautilus", "nemo": "nemo nemo-python",
                                "caja": "caja python3-caja"}[name], name))
        host = HOSTS[name]
        if not glob.glob(host[0]):
            self.fail("%s is installed but not its Python extension host %s (apt-get install %s)"
                      % (name, host[0], host[1]))
        self.name = name
        self.work = os.path.realpath(tempfile.mkdtemp(prefix="syncbadge-fm-%s-" % name))
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
            if not ok:
                kept = os.path.join(ARTIFACTS, "%s-%s" % (name, time.strftime("%Y%m%d-%H%M%S")))
                os.makedirs(kept, exist_ok=True)
                for entry in os.listdir(self.work):
                    if entry.endswith((".png", ".log", ".jsonl")):
                        shutil.copy(os.path.join(self.work, entry), kept)
                sys.stderr.write("\n%s: screenshots and logs kept in %s\n" % (name, kept))
            shutil.rmtree(self.work, ignore_errors=True)

    def scenario(self):
        name = self.name
        root = self.root = os.path.join(self.work, "Sync")
        os.makedirs(root)
        for fname, _ in FILES:
            with open(os.path.join(root, fname), "w") as f:
                f.write("x")

        share = os.path.join(self.work, "share")
        shutil.copytree(SHARE, share, symlinks=True)
        env = dict(os.environ)
        env.update(PATH="/usr/bin:/bin:" + os.environ.get("PATH", ""), HOME=os.path.join(self.work, "home"),
                   XDG_DATA_HOME=share, XDG_CONFIG_HOME=os.path.join(self.work, "config"),
                   XDG_CACHE_HOME=os.path.join(self.work, "cache"), SYNCBADGE_SOCKET=self.daemon.socket,
                   SYNCBADGE_DEBUG="1", GSETTINGS_BACKEND="keyfile", GSK_RENDERER="cairo", NO_AT_BRIDGE="1")
        for key in ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
            os.makedirs(env[key])   # Nautilus never finishes loading with a missing XDG_CACHE_HOME
        # Settings of this run only (GSettings' keyfile backend): the Sync column in list view.
        os.makedirs(os.path.join(env["XDG_CONFIG_HOME"], "glib-2.0", "settings"))
        with open(os.path.join(env["XDG_CONFIG_HOME"], "glib-2.0", "settings", "keyfile"), "w") as f:
            f.write(SETTINGS)

        # 0. No daemon yet: the file manager shows the directory, and the extension says so once.
        self.fm = fs.FileManager(name, self.work, env)
        self.fm.start(root)
        self.fm.wait_log(r"^syncbadge: no daemon at %s" % re.escape(self.daemon.socket), 30)
        self.fm.wait_log(r"^syncbadge: asked about the entries of %s \(no daemon yet\)" % re.escape(root), 30)
        self.daemon.start()
        admin = self.connect("admin", "test-admin")
        admin.request("ADD-ROOT", root, timeout=30)
        engine = self.connect("provider", "test-engine")
        # The toolbar item before the claim, as engines do: the claim's `* ROOT` push is what
        # makes viewers ask for TOOLBAR again.
        engine.request("DEFINE-TOOLBAR", name="Engine", tooltip="Pause or resume syncing", timeout=10)
        engine.request("DEFINE-MENU", "toolbar", "engine.pause", title="Pause syncing", timeout=10)
        engine.request("CLAIM", root, timeout=10)
        engine.request("DEFINE-MENU", "items", "test.hello", title="Say hello", timeout=10)
        for fname, state in FILES:
            if state != "unknown":
                engine.request("SET", state, self.path(fname), progress=40 if state == "syncing" else None,
                               message="disk full" if state == "error" else None, timeout=10)

        # 1. Every state's emblem next to its file; none for unknown.
        expected = [state for _, state in FILES if state != "unknown"]
        first = self.wait_emblems("every state's emblem", expected)
        self.fm.wait_log(r"^syncbadge: connected to ", 1)
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
        later = self.wait_emblems("the changed emblems",
                                  ["synced", "syncing", "synced", "conflict", "pending", "ignored", "cloud"])
        self.assertEqual(pid, self.fm.proc.pid)
        self.assertTrue(os.path.isfile(os.path.join(share, "icons", "hicolor", "scalable", "emblems",
                                                    "emblem-syncbadge-cloud.svg")))
        # Relative to the first file's emblem: the view may have scrolled by a few pixels between
        # the two screenshots (Caja settling its layout moved every icon 12 px down once).
        x, y = where["c-error.txt"]
        ax, ay = where[FILES[0][0]]
        _, lax, lay = later[1][0]
        self.assertTrue(any(s == "synced" and abs((ex - lax) - (x - ax)) <= 3 and abs((ey - lay) - (y - ay)) <= 3
                            for s, ex, ey in later[1]),
                        "the green emblem is not where the red one was (%d,%d; the first emblem at %d,%d, then %d,%d): %r"
                        % (x, y, ax, ay, lax, lay, later[1]))

        # 3. The Sync submenu on a right-click, and "Show details" reaching the daemon.
        before = later[0]
        ex, ey = where["a-synced.txt"]
        dx, dy = CLICK[name]
        log_at = len(self.fm.text())
        fs.right_click(ex + dx, ey + dy)
        self.fm.wait_log(r"^syncbadge: menu items for 1 paths: .*syncbadge\.details", 10, start=log_at)
        fs.wait_until("the context menu on the screen",
                      lambda: fs.changed_pixels(before, self.shot("menu")) > 8000, 10, interval=0.2)
        fs.xdotool("key", "--delay", "300", *KEYS[name])
        note = fs.wait_until("the notification of Show details", lambda: [
            n for n in self.fm.notifications() if n["summary"] == "Sync: syncbadge.details"], 10)
        self.assertIn("state=synced gen=", note[0]["body"])
        self.fm.wait_log(r"^syncbadge: action syncbadge\.details -> OK state=synced", 5, start=log_at)
        # Nemo tints a selected file's icon, emblem included: select nothing again.
        fs.left_click(ex + dx, max(y for _, _, y in later[1]) + 150)
        before = self.wait_emblems("the emblems with nothing selected",
                                   ["synced", "syncing", "synced", "conflict", "pending", "ignored", "cloud"])[0]

        # 3a. The engine's own item, "Say hello" (the first of the submenu: two up from the last):
        # the engine's answer to it is the notification (action-reply).
        log_at = len(self.fm.text())
        fs.right_click(ex + dx, ey + dy)
        self.fm.wait_log(r"^syncbadge: menu items for 1 paths: test\.hello ", 10, start=log_at)
        fs.wait_until("the context menu on the screen",
                      lambda: fs.changed_pixels(before, self.shot("menu-again")) > 8000, 10, interval=0.2)
        fs.xdotool("key", "--delay", "300", *(KEYS[name][:-1] + ["Up", "Up", "Return"]))
        action = self.action_at(engine, "test.hello")
        self.assertEqual((action.paths, action.client), ([os.fsencode(self.path("a-synced.txt"))], name))
        self.assertIsNotNone(action.reply, "the extension asked for no answer")
        fs.sb.Provider(engine).answer(action, "Hello from the engine").result(10)
        note = fs.wait_until("the notification of the engine's answer", lambda: [
            n for n in self.fm.notifications() if n["summary"] == "Sync: test.hello"], 10)
        self.assertEqual(note[0]["body"], "Hello from the engine")
        fs.left_click(ex + dx, max(y for _, _, y in later[1]) + 150)
        self.wait_emblems("the emblems with nothing selected again",
                          ["synced", "syncing", "synced", "conflict", "pending", "ignored", "cloud"])

        # 3b. Caja: the engine's toolbar item is a button in the window's toolbar; its menu's
        # item reaches the engine, and the engine's answer is the notification.
        if name == "caja":
            self.toolbar_button(engine)

        # 3c. The engine renames its toolbar item: the `* TOOLBAR` push alone brings it (no
        # `* ROOT` comes), into the background menu or Caja's button.
        log_at = len(self.fm.text())
        engine.request("DEFINE-TOOLBAR", name="Resume all", tooltip="Resume syncing", timeout=10)
        self.fm.wait_log(r"^syncbadge: toolbar items: Resume all$", 10, start=log_at)
        if name == "caja":
            self.fm.wait_log(r"^syncbadge: toolbar buttons: Resume all$", 10, start=log_at)

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
        self.wait_emblems("the emblems after the restart",
                          ["synced", "syncing", "synced", "conflict", "pending", "ignored", "cloud"])
        engine = self.connect("provider", "test-engine")
        engine.request("SET", "synced", self.path("e-pending.txt"), timeout=10)
        self.wait_emblems("a SET after the restart",
                          ["synced", "syncing", "synced", "conflict", "synced", "ignored", "cloud"])
        self.assertEqual(pid, self.fm.proc.pid)

        # 5. For the documentation: the list view, with the Sync column.
        if SCREENSHOTS:
            # The engine's toolbar item again (it went with the connection), so that Caja's
            # picture shows its button: the claim's `* ROOT` push makes the extension ask.
            log_at = len(self.fm.text())
            engine.request("DEFINE-TOOLBAR", name="Engine", tooltip="Pause or resume syncing", timeout=10)
            engine.request("CLAIM", root, timeout=10)
            if name == "caja":
                self.fm.wait_log(r"^syncbadge: toolbar buttons: Engine$", 10, start=log_at)
            engine.request("SET", "error", self.path("c-error.txt"), message="disk full", timeout=10)
            engine.request("SET", "pending", self.path("e-pending.txt"), timeout=10)
            before = self.wait_emblems("every state again",
                                       ["synced", "syncing", "error", "conflict", "pending", "ignored", "cloud"])[0]
            fs.xdotool("key", LIST_VIEW_KEY[name])
            fs.wait_until("the list view", lambda: fs.changed_pixels(before, self.shot("list")) > 8000, 10,
                          interval=0.3)
            stable = [self.shot("list")]

            def settled():
                stable.append(self.shot("list"))
                return fs.changed_pixels(stable[-2], stable[-1], step=1) == 0
            fs.wait_until("the list view to settle", settled, 10, interval=0.3)
            os.makedirs(SCREENSHOTS, exist_ok=True)
            subprocess.run(["convert", stable[-1].png, "-bordercolor", "black", "-border", "1", "-trim", "+repage",
                            os.path.join(SCREENSHOTS, name + ".png")], check=True)

    def toolbar_button(self, engine):
        placed = r"(?m)^syncbadge: toolbar button Engine at (-?\d+),(-?\d+) size (\d+)x(\d+)$"
        self.fm.wait_log(placed, 10)
        where = re.findall(placed, self.fm.text())[-1]   # it logs again whenever the button moves
        x, y, w, h = map(int, where)
        self.assertTrue(w > 0 and h > 0 and 0 <= y < 200, "the button is not in the toolbar: %r" % (where,))
        before = self.shot("toolbar")
        log_at = len(self.fm.text())
        fs.left_click(x + w // 2, y + h // 2)
        self.fm.wait_log(r"^syncbadge: toolbar menu of Engine: engine\.pause$", 10, start=log_at)
        fs.wait_until("the toolbar menu on the screen",
                      lambda: fs.changed_pixels(before, self.shot("toolbar-menu")) > 1000, 10, interval=0.2)
        fs.xdotool("key", "--delay", "300", "Down", "Return")

        action = self.action_at(engine, "engine.pause")
        self.assertEqual(action.client, "caja")
        fs.sb.Provider(engine).answer(action, "paused").result(10)
        note = fs.wait_until("the notification of the toolbar action", lambda: [
            n for n in self.fm.notifications() if n["summary"] == "Sync: engine.pause"], 10)
        self.assertEqual(note[0]["body"], "paused")

    # -- helpers ------------------------------------------------------------------------

    def path(self, fname):
        return os.path.join(self.root, fname)

    def action_at(self, engine, action_id, timeout=10):
        """The next `* ACTION <action_id>` the engine gets (other pushes are skipped)."""
        def action():
            push = engine.next_push(0.2)
            return push is not None and push.kind == "ACTION" and push.arg(0) == action_id and push
        return fs.sb.Action.from_message(fs.wait_until("the action %s at the engine" % action_id, action, timeout))

    def connect(self, role, name):
        conn = self.daemon.connect(role, name)
        self.conns.append(conn)
        return conn

    def shot(self, label):
        self.shots += 1
        return fs.screenshot(os.path.join(self.work, "%02d-%s.png" % (self.shots, label)))

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
            return fs.wait_until("%s in %s" % (what, self.name), check, timeout, interval=0.3)
        except fs.Failure as ex:
            self.shot("failed")
            raise fs.Failure("%s; expected %s, the last screenshot had %s" % (ex, states, seen and seen[0]))


if __name__ == "__main__":
    unittest.main()

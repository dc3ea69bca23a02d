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
to DIR/<name>.png (make screenshots). SYNCBADGE_TEST_INSTALLED=1: the packages' extension and
emblems as installed on this system, nothing installed by the test (fmscenario.INSTALLED).
"""

import glob
import os
import re
import shutil
import unittest

import fmscenario as sc
import fmsession as fs

ARTIFACTS = sc.ARTIFACTS
SCREENSHOTS = os.environ.get("SYNCBADGE_FM_SCREENSHOTS")
SKIP = sc.SKIP

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
    SHARE = sc.set_up_module()


class FileManagerTests(sc.Scenario, unittest.TestCase):
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
        self.name = self.title = name
        self.run_scenario(name, "syncbadge-fm-%s-" % name, ARTIFACTS)

    def scenario(self):
        name = self.name
        root = self.make_root()
        env = self.session_env(SHARE, GSETTINGS_BACKEND="keyfile", GSK_RENDERER="cairo")
        # Settings of this run only (GSettings' keyfile backend): the Sync column in list view.
        os.makedirs(os.path.join(env["XDG_CONFIG_HOME"], "glib-2.0", "settings"))
        with open(os.path.join(env["XDG_CONFIG_HOME"], "glib-2.0", "settings", "keyfile"), "w") as f:
            f.write(SETTINGS)

        # 0. No daemon yet: the file manager shows the directory, and the extension says so once.
        self.start_before_daemon(fs.FileManager(name, self.work, env))
        engine = self.engine_with_every_state()

        # 1. Every state's emblem next to its file; none for unknown.
        where = self.wait_every_state()

        # 2. Live, in the same window: a SET, and a badge a provider defines now.
        pid, later = self.live_changes(engine)
        # Relative to the first file's emblem: the view may have scrolled by a few pixels between
        # the two screenshots (Caja settling its layout moved every icon 12 px down once).
        x, y = where["c-error.txt"]
        ax, ay = where[sc.FILES[0][0]]
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
        note = self.wait_notes("Sync: syncbadge.details", "the notification of Show details")
        self.assertIn("state=synced gen=", note[0]["body"])
        self.fm.wait_log(r"^syncbadge: action syncbadge\.details -> OK state=synced", 5, start=log_at)
        # Nemo tints a selected file's icon, emblem included: select nothing again.
        fs.left_click(ex + dx, max(y for _, _, y in later[1]) + 150)
        before = self.wait_emblems("the emblems with nothing selected", sc.CHANGED)[0]

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
        note = self.wait_notes("Sync: test.hello", "the notification of the engine's answer")
        self.assertEqual(note[0]["body"], "Hello from the engine")
        fs.left_click(ex + dx, max(y for _, _, y in later[1]) + 150)
        self.wait_emblems("the emblems with nothing selected again", sc.CHANGED)

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
        engine = self.restart_daemon(pid)

        # 5. For the documentation: the list view, with the Sync column.
        if SCREENSHOTS:
            # The engine's toolbar item again (it went with the connection), so that Caja's
            # picture shows its button: the claim's `* ROOT` push makes the extension ask.
            log_at = len(self.fm.text())
            engine.request("DEFINE-TOOLBAR", name="Engine", tooltip="Pause or resume syncing", timeout=10)
            engine.request("CLAIM", root, timeout=10)
            if name == "caja":
                self.fm.wait_log(r"^syncbadge: toolbar buttons: Engine$", 10, start=log_at)
            before = self.every_state_again(engine)[0]
            fs.xdotool("key", LIST_VIEW_KEY[name])
            fs.wait_until("the list view", lambda: fs.changed_pixels(before, self.shot("list")) > 8000, 10,
                          interval=0.3)
            self.save_picture(self.settle("the list view", "list"), SCREENSHOTS, name)

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
        note = self.wait_notes("Sync: engine.pause", "the notification of the toolbar action")
        self.assertEqual(note[0]["body"], "paused")

    # -- helpers ------------------------------------------------------------------------

    def action_at(self, engine, action_id, timeout=10):
        """The next `* ACTION <action_id>` the engine gets, as an Action (other pushes are skipped)."""
        return fs.sb.Action.from_message(self.engine_action(engine, action_id, timeout))


if __name__ == "__main__":
    unittest.main()

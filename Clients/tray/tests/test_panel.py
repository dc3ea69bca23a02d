"""A real StatusNotifierItem host that Debian ships shows the tray: xfce4-panel (its systray plugin
hosts StatusNotifierItems and is the StatusNotifierWatcher itself) under Xvfb, with this build's
daemon and an engine. The panel must list the item, draw the badge's icon (the conflict badge's
purple, found in the panel's strip) and open the menu on a click (drawn below the icon).

SYNCBADGE_TRAY_SCREENSHOT=FILE keeps the picture of the panel with the open menu there
(docs/images/tray.png, by `make screenshot-tray`); a failing run leaves its screenshots in
SYNCBADGE_TRAY_ARTIFACTS (or the test's temporary directory, printed).
"""

import os
import shutil
import subprocess
import time
import unittest

from test_tray import TrayCase

PURPLE = (0xa8, 0x3b, 0xb5)     # Badges/conflict.svg's disc
WIDTH, HEIGHT = 900, 560


def screenshot(path):
    subprocess.run(["import", "-window", "root", path], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ppm = subprocess.run(["convert", path, "ppm:-"], check=True, stdout=subprocess.PIPE).stdout
    # P6\nW H\n255\n then RGB bytes.
    head = ppm.split(b"\n", 3)
    w, h = (int(x) for x in head[1].split())
    return w, h, head[3]


def pixels_near(image, colour, box, tolerance=40):
    """(count, centre) of the pixels within `tolerance` of `colour` inside box (x0, y0, x1, y1)."""
    w, h, data = image
    x0, y0, x1, y1 = box
    n = sx = sy = 0
    for y in range(y0, min(y1, h)):
        row = y * w * 3
        for x in range(x0, min(x1, w)):
            i = row + x * 3
            if abs(data[i] - colour[0]) + abs(data[i + 1] - colour[1]) + abs(data[i + 2] - colour[2]) <= tolerance:
                n += 1
                sx += x
                sy += y
    return n, ((sx // n, sy // n) if n else None)


def lit(image, box):
    """How many pixels inside box are not black (the root window is black: what is drawn is not)."""
    w, h, data = image
    x0, y0, x1, y1 = box
    return sum(1 for y in range(y0, min(y1, h)) for x in range(x0, min(x1, w))
               if data[(y * w + x) * 3] + data[(y * w + x) * 3 + 1] + data[(y * w + x) * 3 + 2] > 60)


@unittest.skipUnless(os.environ.get("DISPLAY"), "no X display: run under xvfb-run (make test-tray)")
class PanelTest(TrayCase):
    fake_watcher = False

    def setUp(self):
        if not shutil.which("xfce4-panel"):
            self.fail("xfce4-panel is missing (make deps installs it)")
        TrayCase.setUp(self)
        self.artifacts = os.environ.get("SYNCBADGE_TRAY_ARTIFACTS") or os.path.join(self.work, "artifacts")
        os.makedirs(self.artifacts, exist_ok=True)
        home = os.path.join(self.work, "home")
        os.makedirs(os.path.join(home, ".config"), exist_ok=True)
        self.panel_log = open(os.path.join(self.work, "panel.log"), "w")
        env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"),
                   XDG_CACHE_HOME=os.path.join(home, ".cache"), NO_AT_BRIDGE="1", GTK_THEME="Adwaita")
        # Its own session: xfce4-panel starts a wrapper process per plugin.
        self.panel = subprocess.Popen(["xfce4-panel", "--disable-wm-check"], env=env, stdin=subprocess.DEVNULL,
                                      stdout=self.panel_log, stderr=subprocess.STDOUT, start_new_session=True)
        self.addCleanup(self._stop_panel)
        self.desktop.wait_for("xfce4-panel's systray to own org.kde.StatusNotifierWatcher",
                              lambda: self.desktop.has_owner("org.kde.StatusNotifierWatcher"), timeout=30)

    def _stop_panel(self):
        try:
            os.killpg(self.panel.pid, 15)
        except ProcessLookupError:
            pass
        try:
            self.panel.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.panel.pid, 9)
            self.panel.wait()
        self.panel_log.close()

    def wait_screen(self, what, check, timeout=20):
        """Screenshots until check(image) holds: drawing has no signal to wait on."""
        deadline = time.monotonic() + timeout
        path = os.path.join(self.artifacts, "panel.png")
        while True:
            image = screenshot(path)
            value = check(image)
            if value:
                return value, image
            if time.monotonic() > deadline:
                self.fail("%s: not on the screen after %gs (%s)" % (what, timeout, path))
            time.sleep(0.2)

    def test_panel_shows_the_icon_and_the_menu(self):
        self.engine.set("conflict", self.path("docs/report.txt"), message="changed on both sides")
        self.engine.set("conflict", self.path("docs/deep/notes.txt"), message="edited on laptop and phone")
        self.engine.set("syncing", self.path("b.txt"), progress=40)
        # The root shows as ~/Sync: the tray's home is the test's directory.
        tray = self.start_tray(HOME=os.path.dirname(self.root))
        self.wait_prop("IconName", "emblem-syncbadge-conflict")
        strip = (0, 0, WIDTH, 32)
        (count, centre), _ = self.wait_screen("the conflict icon in the panel",
                                               lambda im: (lambda r: r if r[0] >= 20 else None)(pixels_near(im, PURPLE, strip)))
        self.assertGreaterEqual(count, 20)
        subprocess.run(["xdotool", "mousemove", str(centre[0]), str(centre[1]), "click", "1"], check=True)
        below = (max(0, centre[0] - 420), 34, WIDTH, HEIGHT - 80)
        _, image = self.wait_screen("the open menu", lambda im: lit(im, below) > 20000)
        self.assertIsNotNone(tray.find("report.txt — conflict: changed on both sides"))
        keep = os.environ.get("SYNCBADGE_TRAY_SCREENSHOT")
        if keep:
            # For the picture, "Recent problems" open too: the pointer on its row (rows of the
            # menu's first level, in the layout's order, as GTK draws them here).
            rows = [l for l in tray.labels() if l[3] == 1]
            menu_left = min(x for x in range(below[0], WIDTH) if lit(image, (x, 40, x + 1, 60)))
            row = [i for i, l in enumerate(rows) if l[0] == "Recent problems"][0]
            before = lit(image, (0, 34, menu_left, HEIGHT - 80))
            subprocess.run(["xdotool", "mousemove", str(menu_left + 60), str(42 + 26 * row)], check=True)
            self.wait_screen("the problems' submenu", lambda im: lit(im, (0, 34, menu_left, HEIGHT - 80)) > before + 5000)
            # The panel and the menus under it, above the panel's dock at the bottom.
            subprocess.run(["convert", os.path.join(self.artifacts, "panel.png"), "-crop", "%dx200+0+0" % WIDTH,
                            "+repage", keep], check=True)


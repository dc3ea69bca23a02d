"""The ranger plugin, the rsync-mirror engine and vifm's helper find the package wherever they
are put: in the repository, installed by `make install` ($(SHARE)/syncbadge/{ranger,providers,
vifm,python}), reached through a symbolic link (as ranger's plugin directory usually holds it),
alone beside an installed package (as Debian's packages lay them out), and when a module that is
not the package already holds the name `syncbadge`. Each check runs a fresh interpreter without
site-packages (-S -E), so an installed copy of the package cannot hide a failure. ranger itself is
a stub here: only the plugin's import is under test.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import vectors

REPO = vectors.REPO
PLUGIN = os.path.join(REPO, "Examples", "ranger", "syncbadge.py")
ENGINE = os.path.join(REPO, "Examples", "providers", "rsync-mirror", "rsync_mirror.py")
VIFM_HELPER = os.path.join(REPO, "Examples", "vifm", "syncbadge", "syncbadge-vifm")
PACKAGE = os.path.join(vectors.CLIENT, "syncbadge")

# Just enough of ranger for the plugin's module-level code.
RANGER_STUB = {
    "ranger/__init__.py": "",
    "ranger/api/__init__.py": "def hook_init(fm):\n    pass\n\n\ndef hook_ready(fm):\n    pass\n\n\n"
                              "def register_linemode(cls):\n    return cls\n",
    "ranger/api/commands.py": "class Command(object):\n    pass\n",
    "ranger/core/__init__.py": "",
    "ranger/core/linemode.py": "class LinemodeBase(object):\n    pass\n",
}

# As ranger loads a plugin: the config directory on sys.path, `import plugins.<name>`. Prints
# where the package came from and under which name.
LOAD_PLUGIN = """
import importlib, sys
sys.path[0:0] = [sys.argv[1], sys.argv[2]]
plugin = importlib.import_module("plugins.syncbadge")
assert plugin.__name__ == "plugins.syncbadge"
print(plugin.sb.__name__, plugin.sb.__file__)
"""

# As `python3 rsync_mirror.py` would, short of running main(); argv[2] (if any) goes first on
# sys.path.
LOAD_ENGINE = """
import importlib.util, sys
sys.path[0:0] = sys.argv[2:]
spec = importlib.util.spec_from_file_location("__engine__", sys.argv[1])
engine = importlib.util.module_from_spec(spec)
spec.loader.exec_module(engine)
print(engine.sb.__name__, engine.sb.__file__)
"""


class Layouts(unittest.TestCase):
    def setUp(self):
        self.tmp = os.path.realpath(tempfile.mkdtemp(prefix="sblayout-"))
        self.stub = os.path.join(self.tmp, "stub")
        for rel, text in RANGER_STUB.items():
            path = os.path.join(self.stub, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def python(self, code, *args):
        r = subprocess.run([sys.executable, "-S", "-E", "-c", code] + list(args), cwd=self.tmp,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.split()

    def ranger_config(self, plugin):
        """A ranger config directory whose plugins/syncbadge.py is a symbolic link to `plugin`."""
        config = os.path.join(self.tmp, "config", "ranger")
        os.makedirs(os.path.join(config, "plugins"))
        open(os.path.join(config, "plugins", "__init__.py"), "w").close()
        os.symlink(plugin, os.path.join(config, "plugins", "syncbadge.py"))
        return config

    def install(self):
        """What `make install` puts under $(SHARE)/syncbadge for the three."""
        share = os.path.join(self.tmp, "share", "syncbadge")
        os.makedirs(os.path.join(share, "ranger"))
        os.makedirs(os.path.join(share, "providers"))
        os.makedirs(os.path.join(share, "vifm", "syncbadge"))
        shutil.copy(PLUGIN, os.path.join(share, "ranger"))
        shutil.copy(ENGINE, os.path.join(share, "providers"))
        shutil.copy(VIFM_HELPER, os.path.join(share, "vifm", "syncbadge"))
        shutil.copytree(PACKAGE, os.path.join(share, "python", "syncbadge"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        return share

    def test_plugin_in_the_repository_through_a_link(self):
        config = self.ranger_config(PLUGIN)
        name, origin = self.python(LOAD_PLUGIN, config, self.stub)
        self.assertEqual(name, "syncbadge")
        self.assertEqual(origin, os.path.join(PACKAGE, "__init__.py"))

    def test_plugin_installed(self):
        share = self.install()
        config = self.ranger_config(os.path.join(share, "ranger", "syncbadge.py"))
        name, origin = self.python(LOAD_PLUGIN, config, self.stub)
        self.assertEqual((name, origin), ("syncbadge", os.path.join(share, "python", "syncbadge", "__init__.py")))

    def test_engine_in_the_repository_and_installed(self):
        name, origin = self.python(LOAD_ENGINE, ENGINE)
        self.assertEqual((name, origin), ("syncbadge", os.path.join(PACKAGE, "__init__.py")))
        share = self.install()
        name, origin = self.python(LOAD_ENGINE, os.path.join(share, "providers", "rsync_mirror.py"))
        self.assertEqual((name, origin), ("syncbadge", os.path.join(share, "python", "syncbadge", "__init__.py")))
        # Run for real, through a link from elsewhere.
        link = os.path.join(self.tmp, "rsync-mirror")
        os.symlink(os.path.join(share, "providers", "rsync_mirror.py"), link)
        r = subprocess.run([sys.executable, "-S", "-E", link, "--help"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ROOT", r.stdout.upper())

    def test_vifm_helper_installed(self):
        share = self.install()
        r = subprocess.run([sys.executable, "-S", "-E", os.path.join(share, "vifm", "syncbadge", "syncbadge-vifm"),
                            "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                           timeout=60, cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--cache", r.stdout)

    def test_a_module_that_is_not_the_package_holds_the_name(self):
        other = os.path.join(self.tmp, "other")
        os.mkdir(other)
        with open(os.path.join(other, "syncbadge.py"), "w") as f:
            f.write("NOT_THE_PACKAGE = True\n")
        name, origin = self.python(LOAD_ENGINE, ENGINE, other)
        self.assertEqual((name, origin), ("syncbadge", os.path.join(PACKAGE, "__init__.py")))

    def test_the_copy_that_came_with_the_file_comes_first(self):
        # An installed package (pip install, PYTHONPATH) serves a file that has no copy of its own
        # beside it, as Debian's packages lay them out; where there is one, that copy is used.
        site = os.path.join(self.tmp, "site")
        shutil.copytree(PACKAGE, os.path.join(site, "syncbadge"), ignore=shutil.ignore_patterns("__pycache__"))
        name, origin = self.python(LOAD_ENGINE, ENGINE, site)
        self.assertEqual((name, origin), ("syncbadge", os.path.join(PACKAGE, "__init__.py")))
        alone = os.path.join(self.tmp, "doc", "examples")
        os.makedirs(alone)
        shutil.copy(ENGINE, alone)
        name, origin = self.python(LOAD_ENGINE, os.path.join(alone, "rsync_mirror.py"), site)
        self.assertEqual((name, origin), ("syncbadge", os.path.join(site, "syncbadge", "__init__.py")))

if __name__ == "__main__":
    unittest.main()

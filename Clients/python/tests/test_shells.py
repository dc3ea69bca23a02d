"""The shell prompt scripts (Examples/prompt/syncbadge.{bash,zsh,fish}) against
Tests/Vectors/wire.tsv: their field encoder (`_syncbadge_encode`) and their socket rule
(`_syncbadge_socket`), run by the real shells. A shell that is not installed is skipped.

What a shell cannot do is left out, and counted in the test's output: a NUL byte (no shell
variable or argument holds one), an explicit socket path (the scripts have no such option),
and for bash and zsh a /tmp fallback for another uid than the process's own ($UID is
read-only there).
"""

import os
import shutil
import subprocess
import sys
import unittest

import vectors

CASES = vectors.load()
PROMPT = os.path.join(vectors.REPO, "Examples", "prompt")

# Each runs the script's encoder on every argument after the script's path, one line each.
ENCODE = {
    "bash": ["-c", 'source "$1"; shift; for a in "$@"; do _syncbadge_encode "$a"; printf "%s\\n" "$REPLY"; done',
             "bash"],
    "zsh": ["-f", "-c", 'source "$1"; shift; for a in "$@"; do _syncbadge_encode "$a"; print -r -- "$REPLY"; done',
            "zsh"],
    "fish": ["-N", "-c", "source $argv[1]; for a in $argv[2..-1]; _syncbadge_encode $a; end"],
}
# Each prints the script's socket path; fish is told the uid (it asks `id -u` otherwise).
SOCKET = {
    "bash": ["-c", 'source "$1"; _syncbadge_socket; printf "%s\\n" "$REPLY"', "bash"],
    "zsh": ["-f", "-c", 'source "$1"; _syncbadge_socket; print -r -- "$REPLY"', "zsh"],
    "fish": ["-N", "-c", "source $argv[1]; set -g _syncbadge_uid $argv[2]; _syncbadge_socket"],
}


def environment(**variables):
    env = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "SYNCBADGE_SOCKET", "XDG_RUNTIME_DIR")}
    env["LANG"] = "C.UTF-8"
    env.update({k: v for k, v in variables.items() if v is not None})
    return env


class ShellCodecs(unittest.TestCase):
    def shell(self, name):
        path = shutil.which(name)
        if path is None:
            self.skipTest("%s is not installed (apt-get install %s)" % (name, name))
        return path

    def note(self, text):
        sys.stderr.write("[%s] " % text)
        sys.stderr.flush()

    def check_encoder(self, name):
        exe = self.shell(name)
        script = os.path.join(PROMPT, "syncbadge." + name)
        cases = [c for c in CASES["encode"] if b"\x00" not in c.input]
        self.note("%d cases, %d with a NUL left out" % (len(cases), len(CASES["encode"]) - len(cases)))
        argv = [exe] + ENCODE[name] + [script] + [c.input for c in cases]
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment(), timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace"))
        got = r.stdout.split(b"\n")
        self.assertEqual(got[-1], b"", "output ends with a newline")
        got = got[:-1]
        self.assertEqual(len(got), len(cases), r.stderr.decode(errors="replace"))
        for c, out in zip(cases, got):
            with self.subTest(line=c.line, note=c.note):
                self.assertEqual(out, c.output)

    def check_socket(self, name):
        exe = self.shell(name)
        script = os.path.join(PROMPT, "syncbadge." + name)
        ran = skipped = 0
        for c in CASES["socket"]:
            # The uid matters only where the answer is the /tmp fallback.
            uses_uid = c.output == "/tmp/syncbadge-%d/daemon.sock" % c.uid
            if c.explicit or (name != "fish" and uses_uid and c.uid != os.getuid()):
                skipped += 1
                continue
            ran += 1
            env = environment(SYNCBADGE_SOCKET=c.syncbadge_socket, XDG_RUNTIME_DIR=c.xdg_runtime_dir)
            argv = [exe] + SOCKET[name] + [script, str(c.uid)]
            r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=60)
            with self.subTest(line=c.line, note=c.note):
                self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace"))
                self.assertEqual(r.stdout.decode(), c.output + "\n")
        self.note("%d cases, %d left out (explicit path%s)" % (ran, skipped, "" if name == "fish" else " or the fallback of another uid"))
        self.assertGreater(ran, 5)

    def test_bash_encoder(self):
        self.check_encoder("bash")

    def test_zsh_encoder(self):
        self.check_encoder("zsh")

    def test_fish_encoder(self):
        self.check_encoder("fish")

    def test_bash_socket(self):
        self.check_socket("bash")

    def test_zsh_socket(self):
        self.check_socket("zsh")

    def test_fish_socket(self):
        self.check_socket("fish")


if __name__ == "__main__":
    unittest.main()

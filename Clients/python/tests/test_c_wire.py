"""Benchmarks/scripts/wire.h (the C helpers' field encoder) against Tests/Vectors/wire.tsv, and
against the Python package on every field of one or two bytes. Skipped without a C compiler."""

import itertools
import os
import shutil
import subprocess
import tempfile
import unittest

import vectors
from syncbadge import codec

WIRE_H = os.path.join(vectors.REPO, "Benchmarks", "scripts", "wire.h")

# Reads lines of hex; writes each one's encoding in hex ("-" for nothing). With an argument,
# prints wire_request("t", "STATUS", argv[1..]) instead.
DRIVER = r"""
#include <stdio.h>
#include "WIRE_H"

int main(int argc, char **argv) {
    if (argc > 1) {
        size_t len = 0;
        char *line = wire_request("t", "STATUS", argv + 1, argc - 1, &len);
        if (!line) return 1;
        fwrite(line, 1, len, stdout);
        return 0;
    }
    static char text[1 << 16];
    static unsigned char in[1 << 15];
    static char out[3 << 15];
    while (fgets(text, sizeof text, stdin)) {
        size_t n = 0;
        for (char *p = text; p[0] && p[0] != '\n' && p[0] != '-'; p += 2) {
            unsigned v;
            sscanf(p, "%2x", &v);
            in[n++] = (unsigned char)v;
        }
        size_t m = wire_encode(in, n, out);
        if (m == 0) fputs("-", stdout);
        for (size_t i = 0; i < m; i++) printf("%02x", (unsigned char)out[i]);
        putchar('\n');
    }
    return 0;
}
"""


class CWire(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cc = shutil.which("cc") or shutil.which("gcc")
        if cc is None:
            raise unittest.SkipTest("no C compiler (apt-get install gcc)")
        cls.dir = tempfile.mkdtemp(prefix="sbwire-")
        src = os.path.join(cls.dir, "driver.c")
        with open(src, "w") as f:
            f.write(DRIVER.replace("WIRE_H", WIRE_H))
        cls.exe = os.path.join(cls.dir, "driver")
        r = subprocess.run([cc, "-O2", "-Wall", "-Wextra", "-Werror", "-o", cls.exe, src],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            shutil.rmtree(cls.dir, ignore_errors=True)     # tearDownClass does not run then
            raise AssertionError("compiling wire.h failed:\n" + r.stdout.decode(errors="replace"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def through_c(self, values):
        text = "".join((v.hex() or "-") + "\n" for v in values)
        r = subprocess.run([self.exe], input=text.encode(), stdout=subprocess.PIPE, check=True, timeout=60)
        return [b"" if line == b"-" else bytes.fromhex(line.decode()) for line in r.stdout.split(b"\n")[:-1]]

    def test_vectors(self):
        cases = vectors.load()["encode"]
        for c, out in zip(cases, self.through_c([c.input for c in cases])):
            with self.subTest(line=c.line, note=c.note):
                self.assertEqual(out, c.output)

    def test_every_field_of_one_or_two_bytes_as_python(self):
        values = [bytes([x]) for x in range(256)] + [bytes(p) for p in itertools.product(range(256), repeat=2)]
        got = self.through_c(values)
        self.assertEqual(len(got), len(values))
        wrong = [(v, g) for v, g in zip(values, got) if g != codec.encode(v)]
        self.assertEqual(wrong[:5], [])

    def test_request_lines(self):
        r = subprocess.run([self.exe, "/tmp/a b\n%", "message=x y", "\u00e9"], stdout=subprocess.PIPE, check=True)
        self.assertEqual(r.stdout, "t STATUS /tmp/a%20b%0A%25 message=x%20y \u00e9\n".encode())
        req = codec.parse_request(r.stdout[:-1])
        self.assertEqual((req.paths, req.opt("message")), ([b"/tmp/a b\n%"], "x y"))


if __name__ == "__main__":
    unittest.main()

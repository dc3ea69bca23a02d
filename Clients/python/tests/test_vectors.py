"""The Python codec and socket-path rule against every case of Tests/Vectors/wire.tsv."""

import unittest

import vectors
from syncbadge import ProtocolError, codec, socket_path

CASES = vectors.load()


class WireVectors(unittest.TestCase):
    def test_the_file_has_every_kind(self):
        self.assertGreaterEqual(len(CASES["encode"]), 256 + 40)
        self.assertGreaterEqual(len(CASES["decode"]), 30)
        self.assertGreaterEqual(len(CASES["socket"]), 15)
        alone = {c.input for c in CASES["encode"] if len(c.input) == 1}
        self.assertEqual(alone, {bytes([b]) for b in range(256)}, "every byte alone")

    def test_encode(self):
        for c in CASES["encode"]:
            with self.subTest(line=c.line, note=c.note):
                self.assertEqual(codec.encode(c.input), c.output)
                self.assertEqual(codec.decode(c.output), c.input)
                # A str that stands for the same bytes (os.fsdecode's surrogate escapes).
                self.assertEqual(codec.encode(c.input.decode("utf-8", "surrogateescape")), c.output)

    def test_decode(self):
        for c in CASES["decode"]:
            with self.subTest(line=c.line, note=c.note):
                if c.output is None:
                    with self.assertRaises(ProtocolError):
                        codec.decode(c.input)
                else:
                    self.assertEqual(codec.decode(c.input), c.output)

    def test_socket_path(self):
        for c in CASES["socket"]:
            env = {}
            if c.syncbadge_socket is not None:
                env["SYNCBADGE_SOCKET"] = c.syncbadge_socket
            if c.xdg_runtime_dir is not None:
                env["XDG_RUNTIME_DIR"] = c.xdg_runtime_dir
            with self.subTest(line=c.line, note=c.note):
                self.assertEqual(socket_path(c.explicit, env, c.uid), c.output)


if __name__ == "__main__":
    unittest.main()

"""The Python codec, line parsers and builder, and socket-path rule against every case of
Tests/Vectors/wire.tsv."""

import unittest

import vectors
from syncbadge import ProtocolError, codec, socket_path

CASES = vectors.load()


class WireVectors(unittest.TestCase):
    def test_the_file_has_every_kind(self):
        self.assertGreaterEqual(len(CASES["encode"]), 256 + 40)
        self.assertGreaterEqual(len(CASES["decode"]), 30)
        self.assertGreaterEqual(len(CASES["socket"]), 15)
        self.assertGreaterEqual(len(CASES["line"]), 15)
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

    def test_lines(self):
        for c in CASES["line"]:
            with self.subTest(line=c.line, note=c.note):
                m = codec.parse_message(c.raw)
                self.assertEqual((m.head, m.kind, m.fields, m.options), (c.head, c.word, c.fields, dict(c.options)))
                if c.head != "*":
                    r = codec.parse_request(c.raw)
                    self.assertEqual((r.tag, r.verb, r.fields, r.options), (c.head, c.word, c.fields, dict(c.options)))
                built = codec.format_line(c.head, c.word, c.fields, c.options)
                self.assertEqual(codec.parse_message(built[:-1]), m)
                raw_parts = c.raw.split(b" ")[2:]
                if [p for p in raw_parts if not codec._OPTION_START.match(p)] == raw_parts[:len(c.fields)]:
                    self.assertEqual(built, c.raw + b"\n")      # fields first: the very same line

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

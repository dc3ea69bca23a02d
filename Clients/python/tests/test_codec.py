"""Lines and fields beyond the vectors: the parsers (as Tests/SyncBadgeCoreTests/WireParserTests.swift),
line building, framing, ITEM lines, and properties over every 1- and 2-byte field."""

import itertools
import os
import random
import unittest

import vectors  # noqa: F401  (puts this checkout's package on sys.path)
from syncbadge import Item, LineBuffer, Message, ProtocolError, Request, codec


def b(text):
    return text.encode("utf-8")


class Fields(unittest.TestCase):
    def test_every_short_field_round_trips_and_escapes_what_it_must(self):
        singles = [bytes([x]) for x in range(256)]
        pairs = [bytes(p) for p in itertools.product(range(256), repeat=2)]
        rng = random.Random(0x5EED0001)
        alphabet = [0x00, 0x0A, 0x20, 0x25, 0x41, 0x7E, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0,
                    0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
        randoms = [bytes(rng.choice(alphabet) for _ in range(rng.randrange(9))) for _ in range(20000)]
        for value in singles + pairs + randoms:
            out = codec.encode(value)
            # Readable: valid UTF-8 with no control, space or DEL; and exact.
            text = out.decode("utf-8")
            self.assertFalse(any(ord(c) <= 0x20 or ord(c) == 0x7F for c in text), value)
            self.assertEqual(codec.decode(out), value)
            # Valid UTF-8 passes through unescaped, except for the ASCII escape set.
            try:
                value.decode("utf-8")
            except UnicodeDecodeError:
                pass
            else:
                self.assertEqual(out.count(b"%"), sum(1 for x in value if x <= 0x20 or x in (0x25, 0x7F)))

    def test_escapes_use_upper_case_hex(self):
        self.assertEqual(codec.encode(bytes([0xAB, 0x0A, 0xFF])), b"%AB%0A%FF")
        self.assertEqual(codec.encode("a b%c\x7f"), b"a%20b%25c%7F")

    def test_str_stands_for_its_bytes_with_surrogate_escapes(self):
        raw = b"/tmp/caf\xc3\xa9 \xff"
        self.assertEqual(codec.encode(os.fsdecode(raw)), codec.encode(raw))
        self.assertEqual(codec.encode(bytearray(raw)), codec.encode(raw))
        self.assertEqual(codec.encode(memoryview(raw)), codec.encode(raw))

    def test_non_fields_are_refused(self):
        with self.assertRaises(TypeError):
            codec.encode(5)
        with self.assertRaises(TypeError):
            codec.encode(None)

    def test_decode_errors_are_value_errors(self):
        with self.assertRaises(ValueError):
            codec.decode(b"%4")

    def test_tags_and_ids(self):
        for tag in ["a", "A-z_0.9", "x" * 32, "-", "."]:
            self.assertTrue(codec.is_tag(tag), tag)
        for tag in ["", "x" * 33, "a/b", "*", "a+b", "\u00e9", "a%20", "\x01x", "a b"]:
            self.assertFalse(codec.is_tag(tag), tag)
        self.assertTrue(codec.is_id("a" * 64))
        self.assertFalse(codec.is_id("a" * 65))
        self.assertFalse(codec.is_id(""))
        self.assertFalse(codec.is_id("a=b"))


class Requests(unittest.TestCase):
    def parse(self, line):
        r = codec.parse_request(b(line) if isinstance(line, str) else line)
        self.assertIsInstance(r, Request)
        return r

    def test_empty_lines(self):
        self.assertIsNone(codec.parse_request(b""))
        self.assertIsNone(codec.parse_request(b"\r"))

    def test_simple(self):
        self.assertEqual(self.parse("1 PING"), Request("1", "PING"))
        r = self.parse("t.1 STATUS /a\r")
        self.assertEqual((r.verb, r.fields), ("STATUS", [b"/a"]))

    def test_bad_tags(self):
        for line in ["x" * 33 + " PING", "a/b PING", "* PING", " PING", "a+b PING", "\u00e9 PING", "a%20 PING",
                     "\x01x PING"]:
            with self.assertRaises(ProtocolError) as cm:
                codec.parse_request(b(line))
            self.assertIsNone(cm.exception.tag, line)

    def test_malformed_lines_keep_their_tag(self):
        for line in ["1", "1 ", "1  PING", "1 PING ", "1 STATUS  /a", "1 STATUS /a  /b", "1 %ZZ", "1 STATUS /a%2",
                     "1 STATUS /a%", "1 SET pending /a message=%G0", "1 SET pending /a x=%"]:
            with self.assertRaises(ProtocolError) as cm:
                codec.parse_request(b(line))
            self.assertEqual(cm.exception.tag, "1", line)

    def test_only_one_trailing_cr_is_dropped(self):
        self.assertEqual(self.parse("1 STATUS /a\r\r").fields, [b"/a\r"])

    def test_options_by_form_anywhere_after_the_verb(self):
        r = self.parse("7 SET gen=5 pending /a%20b progress=50 message=hello%20world")
        self.assertEqual(r.fields, [b"pending", b"/a b"])
        self.assertEqual(r.options, {"gen": b"5", "progress": b"50", "message": b"hello world"})
        self.assertEqual(r.paths, [b"/a b"])
        self.assertEqual(r.opt("message"), "hello world")

    def test_option_key_form(self):
        r = self.parse("1 X a=1 x-1=2 k9=3 empty= Key=4 1a=5 a_b=6 =7 a.b=8 -a=9 %61=10")
        self.assertEqual(r.options, {"a": b"1", "x-1": b"2", "k9": b"3", "empty": b""})
        self.assertEqual(r.fields, [b"Key=4", b"1a=5", b"a_b=6", b"=7", b"a.b=8", b"-a=9", b"a=10"])

    def test_option_keys_read_again_from_what_was_learnt(self):
        # The second reading of each key comes from the keys already seen; the answer is the same.
        line = "1 X a=1 x-1=2 Key=4 a_b=6 =7 a.b=8"
        first, again = self.parse(line), self.parse(line)
        self.assertEqual((again.fields, again.options), (first.fields, first.options))
        self.assertEqual(again.options, {"a": b"1", "x-1": b"2"})

    def test_option_keys_learnt_are_bounded(self):
        # A peer sending ever new keys fills no memory; keys past the bound still parse.
        for i in range(codec._KNOWN_KEYS_MAX + 50):
            self.assertEqual(self.parse("1 X k%d=v" % i).options, {"k%d" % i: b"v"})
        self.assertLessEqual(len(codec._KNOWN_KEYS), codec._KNOWN_KEYS_MAX)

    def test_a_field_starting_with_slash_is_a_path(self):
        r = self.parse("1 STATUS /a=b /x/k=v")
        self.assertEqual(r.options, {})
        self.assertEqual(r.paths, [b"/a=b", b"/x/k=v"])

    def test_fields_are_decoded_the_verb_too(self):
        r = self.parse("1 ST%41TUS /a%0Ab%25 /%FF%fe /caf%C3%A9 /\u00e9 message=a=b")
        self.assertEqual(r.verb, "STATUS")
        self.assertEqual(r.paths, [b"/a\nb%", b"/\xff\xfe", b("/caf\u00e9"), b("/\u00e9")])
        self.assertEqual(r.opt("message"), "a=b")


class Messages(unittest.TestCase):
    def test_an_item_push(self):
        m = codec.parse_message(b"* ITEM /a%20b pending badge=pending kind=file gen=3")
        self.assertTrue(m.is_push)
        self.assertFalse(m.is_final)
        self.assertEqual((m.head, m.kind), ("*", "ITEM"))
        self.assertEqual(m.fields, [b"/a b", b"pending"])
        self.assertEqual((m.opt("badge"), m.opt("kind"), m.opt_int("gen")), ("pending", "file", 3))
        self.assertEqual(m.arg(1), "pending")
        self.assertIsNone(m.arg(2))
        self.assertEqual(m.opt("missing", "x"), "x")

    def test_a_tagged_answer(self):
        m = codec.parse_message(b"t1 OK proto=1 caps=observe,menus\r")
        self.assertEqual((m.head, m.kind, m.is_push, m.is_final, m.ok), ("t1", "OK", False, True, True))
        self.assertEqual(m.opt("caps"), "observe,menus")
        e = codec.parse_message(b"2 ERR not-found message=/a%20b")
        self.assertEqual((e.code, e.opt("message"), e.ok), ("not-found", "/a b", False))
        self.assertIsNone(m.code)

    def test_the_kind_is_taken_as_it_is(self):
        # WireMessage does not decode the kind (kinds never need escapes).
        self.assertEqual(codec.parse_message(b"* IT%45M /a").kind, "IT%45M")

    def test_malformed(self):
        for line in ["", "OK", "a/b OK", "** ITEM", "* ITEM  /a", "* ITEM /a%G0", "* ITEM /a ", "* ", "1 ",
                     "1  OK", "x" * 33 + " OK", "* ITEM /a message=%4"]:
            with self.assertRaises(ProtocolError, msg=line):
                codec.parse_message(b(line))

    def test_equality(self):
        self.assertEqual(codec.parse_message(b"* GONE /a"), Message("*", "GONE", [b"/a"]))
        self.assertNotEqual(codec.parse_message(b"* GONE /a"), Message("*", "GONE", [b"/b"]))


class Lines(unittest.TestCase):
    def test_fields_and_options_are_encoded(self):
        line = codec.format_line("1", "ITEM", [b"/a b\n%"], [("message", "x y"), ("raw", b"\xffA")])
        self.assertEqual(line, b"1 ITEM /a%20b%0A%25 message=x%20y raw=%FFA\n")

    def test_encoded_lines_parse_back_to_the_same_bytes(self):
        weird = bytes([0x2F, 0x61, 0x20, 0x0D, 0x0A, 0xFF, 0xC3, 0xA9, 0x25, 0x3D, 0x00])
        line = codec.format_line("42", "STATUS", [weird], {"message": "k=v and more"})
        r = codec.parse_request(line[:-1])
        self.assertEqual(r.paths, [weird])
        self.assertEqual(r.opt("message"), "k=v and more")
        m = codec.parse_message(codec.format_line("*", "ITEM", [weird, "pending"], {"gen": 3})[:-1])
        self.assertEqual(m.fields, [weird, b"pending"])

    def test_option_values(self):
        line = codec.format_line("1", "SET", ["synced", "/a"],
                                 {"gen": 12, "recursive": True, "enabled": False, "skip": None, "future_key": "v"})
        self.assertEqual(line, b"1 SET synced /a gen=12 recursive=1 enabled=0 future-key=v\n")
        self.assertEqual(codec.format_line("*", "BYE", ["shutdown"]), b"* BYE shutdown\n")

    def test_what_could_not_be_read_back_is_refused(self):
        for head, word, fields, options in [
                ("1 2", "PING", (), ()), ("", "PING", (), ()), ("1", "", (), ()), ("1", "P NG", (), ()),
                ("1", "STATUS", [""], ()), ("1", "STATUS", [b""], ()), ("1", "ACTION", ["a=b"], ()),
                ("1", "PING", (), [("Bad", "1")]), ("1", "PING", (), [("1a", "1")])]:
            with self.assertRaises(ValueError, msg=(head, word, fields, options)):
                codec.format_line(head, word, fields, options)
        # A path, or a key that is not of the option form, is positional and fine.
        self.assertEqual(codec.format_line("1", "X", ["/a=b", "A=b"]), b"1 X /a=b A=b\n")


class Framing(unittest.TestCase):
    def test_lines_cr_and_empty_lines(self):
        f = LineBuffer()
        self.assertEqual(f.feed(b"1 OK\r\n\n* GONE /a\n2 O"), [b"1 OK", b"* GONE /a"])
        self.assertEqual(f.pending, b"2 O")
        self.assertEqual(f.feed(b"K\r"), [])
        self.assertEqual(f.feed(b"\n"), [b"2 OK"])
        self.assertEqual(f.pending, b"")

    def test_only_one_cr(self):
        self.assertEqual(LineBuffer().feed(b"* GONE /a\r\r\n"), [b"* GONE /a\r"])

    def test_limit(self):
        f = LineBuffer(max_line=8)
        self.assertEqual(f.feed(b"12345678\n"), [b"12345678"])
        with self.assertRaises(ProtocolError):
            f.feed(b"123456789")
        with self.assertRaises(ProtocolError):
            LineBuffer(max_line=8).feed(b"123456789\n")


class Items(unittest.TestCase):
    def test_a_directory(self):
        m = codec.parse_message(b"3 ITEM /r/d%20d pending badge=pending kind=dir gen=9 counts=pending:2,synced:1")
        item = Item.from_message(m)
        self.assertEqual(item, Item(b"/r/d d", "pending", "pending", "dir", 9, None, None, {"pending": 2, "synced": 1}))

    def test_a_file(self):
        m = codec.parse_message(b"* ITEM /r/f syncing badge=mine kind=file progress=40 message=up%20load gen=3")
        item = Item.from_message(m)
        self.assertEqual((item.path, item.state, item.badge, item.progress, item.message, item.gen, item.counts),
                         (b"/r/f", "syncing", "mine", 40, "up load", 3, None))

    def test_what_is_left_out_or_malformed(self):
        # The badge is the state's without one; numbers that are not are left out; text is
        # decoded with invalid UTF-8 replaced, as opt() and opt_int() read them.
        item = Item.from_message(codec.parse_message(b"* ITEM /r/f %FFx gen=x progress=-1 message=%FF counts=a:1,b,:2,c:x"))
        self.assertEqual(item, Item(b"/r/f", "\ufffdx", "\ufffdx", None, None, None, "\ufffd", {"a": 1}))

    def test_not_an_item(self):
        self.assertIsNone(Item.from_message(codec.parse_message(b"* GONE /a")))
        self.assertIsNone(Item.from_message(codec.parse_message(b"* ITEM /a")))
        self.assertEqual(Item(b"/x", kind="dir").state, None)


if __name__ == "__main__":
    unittest.main()

"""The wire format (PROTOCOL.md "Framing"): fields, lines, options.

The one Python implementation of it, byte for byte the same as the daemon's
(Sources/SyncBadgeProtocol/PercentEncoding.swift and WireRequest.swift); Tests/Vectors/wire.tsv
holds the cases every implementation is checked against.

- encode(value) -> bytes: a field percent-encoded. The bytes 0x00-0x20, ``%`` (0x25), 0x7F and
  every byte that is not part of a valid UTF-8 sequence become ``%XX`` (upper-case hex);
  everything else is written as it is.
- decode(field) -> bytes: ``%XX`` in either case for any byte; a malformed escape (``%`` not
  followed by two hex digits) raises ProtocolError.
- parse_message(line) -> Message: a line a client receives, ``<tag>|* <KIND> fields...``.
- parse_request(line) -> Request: a line the daemon receives, ``<tag> <VERB> fields...``.
- format_line(head, word, fields, options) -> bytes: one line to send, ending in LF.
- LineBuffer: splits a byte stream into lines.

Values are bytes on the wire. Where a str is accepted it stands for the bytes
``value.encode("utf-8", "surrogateescape")``: on Linux that is ``os.fsencode``, so a file name
read as str (with its undecodable bytes as surrogate escapes) goes out as the bytes it is.
"""

import collections
import os
import re

__all__ = [
    "MAX_REQUEST_LINE", "ProtocolError", "encode", "decode", "is_tag", "is_id", "Message",
    "Request", "Item", "Root", "Badge", "parse_message", "parse_request", "format_line", "LineBuffer",
]

# The daemon's limit for one line it receives, without the LF (PROTOCOL.md "Framing").
MAX_REQUEST_LINE = 65536


class ProtocolError(ValueError):
    """A malformed escape, field or line. `tag` is the line's tag when it had a valid one
    (the daemon answers `<tag> ERR bad-request` then; without one, `* BYE bad-request`)."""

    def __init__(self, message, tag=None):
        ValueError.__init__(self, message)
        self.tag = tag


# ---------------------------------------------------------------------------------------
# Fields

# A byte that may need an escape: below 0x21, %, 0x7F, or not ASCII.
_MAYBE_ESCAPED = re.compile(rb"[\x00-\x20%\x7f-\xff]")
# After decoding with surrogateescape (strict UTF-8: no overlong forms, no surrogates, nothing
# above U+10FFFF, as PercentEncoding.validSequenceLength), each byte outside a valid sequence
# is one of U+DC80..U+DCFF; bytes of valid sequences are characters of their own.
_ESCAPED_CHAR = re.compile("[\x00-\x20%\x7f\udc80-\udcff]")
_HEX_DIGITS = frozenset(b"0123456789abcdefABCDEF")


def _escape(match):
    code = ord(match.group())
    if code >= 0xDC80:
        code -= 0xDC00          # the undecodable byte itself
    return "%%%02X" % code


def _bytes(value):
    """The bytes a field value stands for: bytes-like as they are, str (or a path object)
    as UTF-8 with surrogate escapes turned back into their bytes."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
        if isinstance(value, bytes):
            return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    raise TypeError("a field is bytes or str, not %s" % type(value).__name__)


def encode(value):
    """Percent-encodes one field (bytes or str); returns bytes."""
    data = _bytes(value)
    if not _MAYBE_ESCAPED.search(data):
        return data
    text = data.decode("utf-8", "surrogateescape")
    return _ESCAPED_CHAR.sub(_escape, text).encode("utf-8")


def decode(field):
    """Decodes ``%XX`` (either case) for any byte; raises ProtocolError on a malformed escape."""
    data = bytes(field)
    if b"%" not in data:
        return data
    parts = data.split(b"%")
    out = bytearray(parts[0])
    for part in parts[1:]:
        if len(part) < 2 or part[0] not in _HEX_DIGITS or part[1] not in _HEX_DIGITS:
            raise ProtocolError("malformed escape in %r" % (data[:200],))
        out.append(int(part[:2], 16))
        out += part[2:]
    return bytes(out)


_TAG = re.compile(rb"[A-Za-z0-9._-]{1,32}")
_ID = re.compile(rb"[A-Za-z0-9._-]{1,64}")
_OPTION_KEY = re.compile(rb"[a-z][a-z0-9-]*")
_OPTION_START = re.compile(rb"([a-z][a-z0-9-]*)=")


def is_tag(value):
    """A request tag: 1-32 bytes of ``[A-Za-z0-9._-]``."""
    return _TAG.fullmatch(_bytes(value)) is not None


def is_id(value):
    """A badge or action id: 1-64 bytes of ``[A-Za-z0-9._-]``."""
    return _ID.fullmatch(_bytes(value)) is not None


# Option keys seen well-formed, raw -> text: a daemon's lines repeat a handful (state=, gen=,
# kind=...), and looking one up costs less than matching _OPTION_START on every field of a
# 20,000-line listing (with no copies in Message._of, a pushed line into a follower went from
# 7.8 to 5.5 us: PERFORMANCE.md, "Where the file manager's CPU goes"). Bounded, as a peer may
# send any number of distinct keys.
_KNOWN_KEYS = {}
_KNOWN_KEYS_MAX = 256


def _decode_fields(parts, tag=None):
    """Positional fields and options of raw fields (WireParser.decodeFields): a field is an
    option by its raw form, ``key=`` with key ``[a-z][a-z0-9-]*``; anything else (a path starts
    with ``/``) is positional. An empty field or a malformed escape raises ProtocolError."""
    fields = []
    options = {}
    known = _KNOWN_KEYS
    for part in parts:
        if not part:
            raise ProtocolError("empty field", tag)
        # The key is what comes before the first "=": _OPTION_START's match, as key
        # characters exclude "=".
        key, eq, value = part.partition(b"=")
        name = known.get(key) if eq else None
        if name is None and eq and _OPTION_KEY.fullmatch(key):
            name = key.decode("ascii")
            if len(known) < _KNOWN_KEYS_MAX:
                known[key] = name
        try:
            if name is not None:
                options[name] = decode(value) if b"%" in value else value
            else:
                fields.append(decode(part) if b"%" in part else part)
        except ProtocolError as ex:
            raise ProtocolError(str(ex), tag)
    return fields, options


# ---------------------------------------------------------------------------------------
# Lines received

class _Line(object):
    """What a received line and a request share: options as text, equality by content."""

    __slots__ = ()

    def opt(self, key, default=None):
        """Option `key` as text (invalid UTF-8 replaced), or `default` when absent."""
        value = self.options.get(key)
        return default if value is None else value.decode("utf-8", "replace")

    def _key(self):
        raise NotImplementedError

    def __eq__(self, other):
        return isinstance(other, type(self)) and self._key() == other._key()

    def __ne__(self, other):
        return not self == other

    __hash__ = None


class Message(_Line):
    """A line a client receives (WireMessage): a response line ``<tag> <KIND> ...`` or a push
    ``* <EVENT> ...``. `fields` are the positional fields and `options` the ``key=value`` ones,
    decoded to bytes; `kind` is the second field as it came (kinds never need escapes)."""

    __slots__ = ("head", "kind", "fields", "options", "raw")

    def __init__(self, head, kind, fields=(), options=None, raw=b""):
        self.head = head
        self.kind = kind
        self.fields = list(fields)
        self.options = dict(options or {})
        self.raw = raw

    @classmethod
    def _of(cls, head, kind, fields, options, raw):
        """One that takes `fields` and `options` as they are, not copies: parse_message's,
        made for it alone."""
        m = cls.__new__(cls)
        m.head, m.kind, m.fields, m.options, m.raw = head, kind, fields, options, raw
        return m

    @property
    def is_push(self):
        return self.head == "*"

    @property
    def is_final(self):
        """The last line of an answer: ``<tag> OK`` or ``<tag> ERR``."""
        return self.head != "*" and self.kind in ("OK", "ERR")

    @property
    def ok(self):
        return self.kind == "OK"

    @property
    def code(self):
        """An ERR line's error code (``not-found``, ``bad-path``...), else None."""
        if self.kind != "ERR":
            return None
        return self.arg(0, "internal")

    def arg(self, index, default=None):
        """Positional field `index` as text (invalid UTF-8 replaced), or `default`."""
        if index < len(self.fields):
            return self.fields[index].decode("utf-8", "replace")
        return default

    def opt_int(self, key, default=None):
        """Option `key` as a non-negative integer, or `default` when absent or not a number."""
        value = self.options.get(key)
        if value is None or not value.isdigit():
            return default
        return int(value)

    def _key(self):
        return self.head, self.kind, self.fields, self.options

    def __repr__(self):
        if self.raw:
            return "Message(%r)" % (self.raw.decode("utf-8", "replace"),)
        return "Message(%r, %r, %r, %r)" % (self.head, self.kind, self.fields, self.options)


def parse_message(line):
    """Parses a received line without its LF (one trailing CR is dropped). Raises
    ProtocolError when it is not ``<tag>|* <KIND> fields...`` with well-formed fields."""
    data = bytes(line)
    if data.endswith(b"\r"):
        data = data[:-1]
    parts = data.split(b" ")
    head = parts[0]
    if len(parts) < 2 or not parts[1] or not (head == b"*" or _TAG.fullmatch(head)):
        raise ProtocolError("malformed line %r" % (data[:200],))
    fields, options = _decode_fields(parts[2:])
    return Message._of(head.decode("ascii"), parts[1].decode("utf-8", "replace"), fields, options, data)


class Request(_Line):
    """A line the daemon receives (WireRequest): tag, verb (decoded), fields, options."""

    __slots__ = ("tag", "verb", "fields", "options")

    def __init__(self, tag, verb, fields=(), options=None):
        self.tag = tag
        self.verb = verb
        self.fields = list(fields)
        self.options = dict(options or {})

    @property
    def paths(self):
        """The positional fields that are paths (start with ``/``)."""
        return [f for f in self.fields if f.startswith(b"/")]

    def _key(self):
        return self.tag, self.verb, self.fields, self.options

    def __repr__(self):
        return "Request(%r, %r, %r, %r)" % (self.tag, self.verb, self.fields, self.options)


def parse_request(line):
    """Parses a request line without its LF, as the daemon does (WireParser.parse): None for
    an empty line; ProtocolError with ``tag=None`` for a line without a valid tag, with the
    tag for any other malformed line."""
    data = bytes(line)
    if data.endswith(b"\r"):
        data = data[:-1]
    if not data:
        return None
    parts = data.split(b" ")
    if not _TAG.fullmatch(parts[0]):
        raise ProtocolError("no valid tag in %r" % (data[:200],))
    tag = parts[0].decode("ascii")
    if len(parts) < 2 or not parts[1]:
        raise ProtocolError("no verb", tag)
    try:
        verb = decode(parts[1])
    except ProtocolError as ex:
        raise ProtocolError(str(ex), tag)
    fields, options = _decode_fields(parts[2:], tag)
    return Request(tag, verb.decode("utf-8", "replace"), fields, options)


# ---------------------------------------------------------------------------------------
# Lines sent

def _option_value(value):
    if value is True or value is False:
        return b"1" if value else b"0"
    if isinstance(value, int):
        return str(value).encode("ascii")
    return _bytes(value)


def format_line(head, word, fields=(), options=()):
    """One line to send, ending in LF: `head` (a tag, or ``*`` for a push), `word` (a verb or
    kind, written as it is), each of `fields` encoded, then each option as ``key=value`` with
    the value encoded. `options` is a mapping or (key, value) pairs; a value None is left out,
    True/False are 1/0, ints are written in decimal; ``_`` in a key stands for ``-``.

    Raises ValueError for what the receiver could not read back as meant: an invalid head,
    key or word, an empty positional field, or one that would read as an option."""
    head_b = _bytes(head)
    if head_b != b"*" and not _TAG.fullmatch(head_b):
        raise ValueError("not a tag: %r" % (head,))
    word_b = _bytes(word)
    if not word_b or encode(word_b) != word_b:
        raise ValueError("not a verb or kind: %r" % (word,))
    out = [head_b, word_b]
    for value in fields:
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        field = encode(value)
        if not field:
            raise ValueError("an empty field cannot be sent")
        if _OPTION_START.match(field):
            raise ValueError("positional field %r would read as an option" % (value,))
        out.append(field)
    items = options.items() if hasattr(options, "items") else options
    for key, value in items:
        if value is None:
            continue
        key_b = key.replace("_", "-").encode("ascii")
        if not _OPTION_KEY.fullmatch(key_b):
            raise ValueError("not an option key: %r" % (key,))
        out.append(key_b + b"=" + encode(_option_value(value)))
    return b" ".join(out) + b"\n"


# ---------------------------------------------------------------------------------------
# Framing

class LineBuffer(object):
    """Splits a byte stream into lines: LF ends a line, a CR before it is dropped, empty lines
    are skipped (PROTOCOL.md "Framing"). With `max_line`, a line (complete or not) longer than
    that many bytes raises ProtocolError."""

    def __init__(self, max_line=None):
        self.max_line = max_line
        self._buf = b""

    @property
    def pending(self):
        """Bytes received after the last LF."""
        return self._buf

    def clear(self):
        self._buf = b""

    def feed(self, data):
        """Adds received bytes; returns the complete lines among them (without LF)."""
        if type(data) is not bytes:
            data = bytes(data)
        buf = self._buf + data if self._buf else data
        if b"\n" not in buf:
            self._buf = buf
            self._check(buf)
            return []
        *lines, self._buf = buf.split(b"\n")
        # The common case, line by line only when needed: the benchmarks time pushes read here.
        if (self.max_line is None or len(buf) <= self.max_line) and b"\r" not in buf and b"" not in lines:
            return lines
        self._check(self._buf)
        out = []
        for line in lines:
            if line.endswith(b"\r"):
                line = line[:-1]
            if line:
                self._check(line)
                out.append(line)
        return out

    def _check(self, line):
        if self.max_line is not None and len(line) > self.max_line:
            raise ProtocolError("a line longer than %d bytes" % self.max_line)


# ---------------------------------------------------------------------------------------
# What ITEM lines say

_ItemBase = collections.namedtuple("Item", "path state badge kind gen progress message counts")


class Item(_ItemBase):
    """An ``ITEM <path> <state> badge= kind= [gen=] [progress=] [message=] [counts=]`` line:
    path (bytes), state, badge, kind (``file``, ``dir``, ``link``, ``other``, ``gone``), gen,
    progress (ints or None), message (text or None) and counts ({state: n} for a directory,
    else None). Every field but `path` may be left out when building one."""

    __slots__ = ()

    def __new__(cls, path, state=None, badge=None, kind=None, gen=None, progress=None,
                message=None, counts=None):
        return _ItemBase.__new__(cls, path, state, badge, kind, gen, progress, message, counts)

    @classmethod
    def from_message(cls, message):
        """The Item of an ITEM response line or push, or None for any other line."""
        fields = message.fields
        if message.kind != "ITEM" or len(fields) < 2 or not fields[0].startswith(b"/"):
            return None
        # The options read here rather than through opt() and opt_int(), to the same effect: a
        # flip of 20,000 files is 20,000 of these in a file manager's main loop.
        get = message.options.get
        state = fields[1].decode("utf-8", "replace")
        badge, kind, gen, progress, text, raw = (get("badge"), get("kind"), get("gen"), get("progress"),
                                                 get("message"), get("counts"))
        counts = None
        if raw is not None:
            counts = {}
            for part in raw.decode("utf-8", "replace").split(","):
                name, _, n = part.partition(":")
                if name and n.isdigit():
                    counts[name] = int(n)
        return _ItemBase.__new__(cls, fields[0], state,
                                 state if badge is None else badge.decode("utf-8", "replace"),
                                 None if kind is None else kind.decode("utf-8", "replace"),
                                 int(gen) if gen is not None and gen.isdigit() else None,
                                 int(progress) if progress is not None and progress.isdigit() else None,
                                 None if text is None else text.decode("utf-8", "replace"), counts)


_RootBase = collections.namedtuple("Root", "path state provider watches scanning degraded message removed")


class Root(_RootBase):
    """A ``ROOT <path> <state> [provider=] [watches=] [scanning=1] [degraded=] [message=]`` line
    (a ROOTS data line or a ``* ROOT`` push), or ``* ROOT <path> removed`` (removed True, state
    None). path is bytes, watches an int or None, scanning a bool, the rest text or None."""

    __slots__ = ()

    @classmethod
    def from_message(cls, message):
        """The Root of a ROOT line, or None for any other line."""
        if message.kind != "ROOT" or len(message.fields) < 2 or not message.fields[0].startswith(b"/"):
            return None
        if message.arg(1) == "removed":
            return cls(message.fields[0], None, None, None, False, None, None, True)
        return cls(message.fields[0], message.arg(1), message.opt("provider"), message.opt_int("watches"),
                   message.opt("scanning") == "1", message.opt("degraded"), message.opt("message"), False)


_BadgeBase = collections.namedtuple("Badge", "id label glyph ascii color image")


class Badge(_BadgeBase):
    """A ``BADGE <id> label= glyph= ascii= color= [image=]`` line (a BADGES data line or a
    ``* BADGE`` push): text fields, image None without one."""

    __slots__ = ()

    @classmethod
    def from_message(cls, message):
        """The Badge of a BADGE line, or None for any other line."""
        if message.kind != "BADGE" or not message.fields:
            return None
        return cls(message.arg(0), message.opt("label"), message.opt("glyph"), message.opt("ascii"),
                   message.opt("color"), message.opt("image"))

"""Shared by the tests: the repository's paths, and Tests/Vectors/wire.tsv read into cases.

Importing it also puts Clients/python first on sys.path, so the tests use this checkout's
package whatever the current directory is.
"""

import collections
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.dirname(HERE)                        # Clients/python
REPO = os.path.dirname(os.path.dirname(CLIENT))
WIRE_TSV = os.path.join(REPO, "Tests", "Vectors", "wire.tsv")

if sys.path[0] != CLIENT:
    sys.path.insert(0, CLIENT)

Encode = collections.namedtuple("Encode", "line input output note")
Decode = collections.namedtuple("Decode", "line input output note")     # output None: an error
Socket = collections.namedtuple("Socket", "line explicit syncbadge_socket xdg_runtime_dir uid output note")
Line = collections.namedtuple("Line", "line raw head word fields options note")   # options: [(key, bytes)]


def _bytes(cell):
    return b"" if cell == "-" else bytes.fromhex(cell)


def _optional(cell):
    """None for unset, else the str the bytes stand for (the socket cases are ASCII)."""
    return None if cell == "unset" else _bytes(cell).decode("ascii")


def load(path=WIRE_TSV):
    """{"encode": [Encode], "decode": [Decode], "socket": [Socket], "line": [Line]}; kinds it
    does not know are skipped, as the README says."""
    cases = {"encode": [], "decode": [], "socket": [], "line": []}
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            line = raw.decode("ascii").rstrip("\n")
            if not line or line.startswith("#"):
                continue
            cells = line.split("\t")
            kind = cells[0]
            if kind == "encode":
                _, inp, out, note = cells
                cases[kind].append(Encode(number, _bytes(inp), _bytes(out), note))
            elif kind == "decode":
                _, inp, out, note = cells
                cases[kind].append(Decode(number, _bytes(inp), None if out == "error" else _bytes(out), note))
            elif kind == "socket":
                _, explicit, env_socket, env_runtime, uid, out, note = cells
                cases[kind].append(Socket(number, _optional(explicit), _optional(env_socket),
                                          _optional(env_runtime), int(uid), _bytes(out).decode("ascii"), note))
            elif kind == "line":
                _, raw, head, word, fields, options, note = cells
                fields = [] if fields == "-" else [_bytes(f) for f in fields.split(",")]
                options = [] if options == "-" else [(k, _bytes(v)) for k, _, v in
                                                     (o.partition("=") for o in options.split(","))]
                cases[kind].append(Line(number, _bytes(raw), _bytes(head).decode("ascii"),
                                        _bytes(word).decode("ascii"), fields, options, note))
    return cases

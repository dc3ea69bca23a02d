#!/usr/bin/env python3
"""What each dependency adds to a binary: the sizes of its symbols (nm -S) grouped by the Swift
module or C library they belong to, beside the file's size stripped. bloaty is not in Debian 12,
so this reads the unstripped release binary's symbol table instead.

    Tests/Packaging/sizes.py BINARY [BINARY...]     a table per binary, in MB
"""
import collections
import os
import re
import subprocess
import sys
import tempfile

SWIFT_MODULE = re.compile(r"^\$s(?:s|(\d+)([A-Za-z_][A-Za-z0-9_]*))")

# C and C++ symbols, by prefix or pattern: the first that matches names the group.
C_GROUPS = [
    ("ICU data (icudt*_dat)", re.compile(r"^icudt\d+_dat$")),
    ("ICU code", re.compile(r"^(_ZN\d*icu_\d+|_ZNK\d*icu_\d+|u[a-z]*_[a-zA-Z]+_\d+$|icu_\d+|_ZTVN\d*icu_|_ZTIN\d*icu_|_ZTSN\d*icu_)")),
    ("BoringSSL (swift-nio-ssl, swift-crypto)", re.compile(r"^(CNIOBoringSSL|CCryptoBoringSSL|_CNIOBoringSSL|_CCryptoBoringSSL)")),
    ("SQLite", re.compile(r"^sqlite3")),
    ("libinotifytools", re.compile(r"^inotifytools")),
    ("Swift runtime (C++: metadata, casting, Unicode tables)", re.compile(r"^(swift_|_swift_|_swift|_ZN5swift|_ZNK5swift|_ZL|__swift)")),
    ("libdispatch", re.compile(r"^(_?dispatch_|_dispatch|_os_)")),
    ("Foundation's C parts (CoreFoundation, _FoundationCShims)", re.compile(r"^(__?CF|CF[A-Z]|_NS|_Foundation|_CShims)")),
    ("NIO's C parts", re.compile(r"^(CNIO|c_nio_)")),
    ("libxml2/curl (FoundationXML/Networking)", re.compile(r"^(xml|curl_|Curl_|html)")),
]

# Swift modules grouped into the dependency a reader knows them by.
MODULE_GROUPS = [
    ("Foundation (full: Foundation + FoundationInternationalization)", re.compile(r"^(Foundation|FoundationInternationalization|_FoundationICU)$")),
    ("FoundationEssentials", re.compile(r"^(FoundationEssentials|_FoundationCollections|_FoundationUnicode)$")),
    ("GRDB", re.compile(r"^GRDB")),
    ("SwiftNIO", re.compile(r"^(NIO|_NIO)")),
    ("AsyncHTTPClient", re.compile(r"^AsyncHTTPClient")),
    ("swift-crypto, swift-certificates, swift-asn1", re.compile(r"^(Crypto|_Crypto|X509|SwiftASN1|_CertificateInternals)")),
    ("swift-argument-parser", re.compile(r"^ArgumentParser")),
    ("swift-log", re.compile(r"^Logging$")),
    ("swift-collections, swift-atomics, swift-algorithms", re.compile(r"^(DequeModule|OrderedCollections|Collections|InternalCollectionsUtilities|Atomics|_AtomicsShims|Algorithms|BasicContainers|HeapModule)")),
    ("SyncBadge (our own code)", re.compile(r"^(SyncBadge|syncbadge|Syncthing|GitAdapter)")),
    ("Swift standard library (Swift, _Concurrency, _StringProcessing...)", re.compile(r"^(Swift|_Concurrency|_StringProcessing|Synchronization|Dispatch|Glibc|SwiftGlibc|_RegexParser|_Volatile|Observation|Distributed)$")),
]


def group_of(name):
    m = SWIFT_MODULE.match(name)
    if m:
        if m.group(1) is None:
            return "Swift standard library (Swift, _Concurrency, _StringProcessing...)"
        module = m.group(2)[: int(m.group(1))]
        for label, pattern in MODULE_GROUPS:
            if pattern.match(module):
                return label
        return "Swift module " + module
    for label, pattern in C_GROUPS:
        if pattern.match(name):
            return label
    return "other C/C++ (glibc, libstdc++ pieces, unnamed)"


def stripped_size(path):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "s")
        subprocess.run(["strip", "-o", out, path], check=True)
        return os.path.getsize(out)




def swift_module(demangled):
    """The module a demangled Swift symbol belongs to: the extension's module, else the
    specialized or named entity's module."""
    m = re.search(r"\(extension in (\w+)\)", demangled)
    if m:
        return m.group(1)
    m = re.search(r" of (?:\([^)]*\) )?(\w+)\.", demangled)
    if m:
        return m.group(1)
    m = re.match(r"(?:[a-z ]+ (?:for|of) )?(?:\([^)]*\) )?(\w+)\.", demangled)
    return m.group(1) if m else None


def module_group(module):
    if module in ("Swift", "__C"):
        return "Swift standard library (Swift, _Concurrency, _StringProcessing...)"
    for label, pattern in MODULE_GROUPS:
        if pattern.match(module):
            return label
    return "Swift module " + module


def breakdown(path):
    nm = subprocess.run(["nm", "-S", "--size-sort", path], capture_output=True, text=True, check=True).stdout
    rows = []
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) != 4:
            continue
        size, kind, name = int(parts[1], 16), parts[2], parts[3]
        if kind.lower() in ("b",):  # .bss takes no room in the file
            continue
        rows.append((size, name))
    # Swift symbols by the module `swift demangle` names (extensions count for their module).
    swift = [name for _, name in rows if name.startswith("$s")]
    demangled = subprocess.run(["swift", "demangle", "--compact"], input="\n".join(swift), capture_output=True,
                               text=True, check=True).stdout.splitlines()
    modules = dict(zip(swift, demangled))
    sizes = collections.Counter()
    for size, name in rows:
        module = swift_module(modules[name]) if name in modules else None
        sizes[module_group(module) if module else group_of(name)] += size
    return sizes


def main(paths):
    for path in paths:
        stripped = stripped_size(path)
        sizes = breakdown(path)
        print(f"## {os.path.basename(path)}: {stripped / 1e6:.1f} MB stripped")
        print()
        print("| part | MB |")
        print("| --- | ---: |")
        for label, size in sizes.most_common():
            if size >= 50_000:
                print(f"| {label} | {size / 1e6:.2f} |")
        small = sum(s for s in sizes.values() if s < 50_000)
        attributed = sum(sizes.values())
        print(f"| smaller parts | {small / 1e6:.2f} |")
        print(f"| not in a sized symbol (metadata, unwind tables, headers) | {max(0, stripped - attributed) / 1e6:.2f} |")
        print()


if __name__ == "__main__":
    main(sys.argv[1:])

import Testing
@testable import SyncBadgeCore
@testable import SyncBadgeProtocol

/// The allocation-free STATUS path (StateTree+Lookup.swift) gives exactly what the general
/// one does: the same node for every path, the same ITEM line for every node.
@Suite struct StateTreeLookupTests {
    static func tree() -> StateTree {
        var t = StateTree(lastGen: 41)
        t.addRoot(path: b("/r/root"), scan: scan(["a", "d/", "d/x", "d/y", "d/e/", "d/e/z", "two words", "pct%", "tab\tname"]), rules: IgnoreRules(fileContents: nil, defaults: true))
        var oddScan = ScanTree()
        oddScan.append(parent: -1, name: b("caf") + [0xFF, 0x65], kind: .file)
        oddScan.append(parent: -1, name: b("é.txt"), kind: .file)
        t.addRoot(path: b("/other"), scan: oddScan, rules: IgnoreRules(fileContents: nil, defaults: true))
        _ = t.set(b("/r/root/a"), SetRequest(state: .syncing, progress: 40, message: "up to the cloud, 40%"), identify: { _ in nil })
        _ = t.set(b("/r/root/d/x"), SetRequest(state: .error, message: "disk\nfull", badge: "custom.badge"), identify: { _ in nil })
        _ = t.set(b("/r/root/d/y"), SetRequest(state: .synced), identify: { _ in nil })
        t.deleted(b("/r/root/d/e/z"))
        t.localChange(b("/r/root/new"), kind: .file, identity: nil, subtree: nil)
        _ = t.drainChanges()
        return t
    }

    static let paths: [[UInt8]] = [
        "/r/root", "/r/root/a", "/r/root/d", "/r/root/d/x", "/r/root/d/y", "/r/root/d/e", "/r/root/d/e/z",
        "/r/root/two words", "/r/root/pct%", "/r/root/tab\tname", "/r/root/new", "/other", "/other/é.txt",
    ].map(b) + [b("/other/caf") + [0xFF, 0x65]]

    @Test func findsWhatFindFinds() {
        let t = Self.tree()
        for p in Self.paths {
            #expect(t.find(slice: p[...]) == t.find(p) && t.find(p) != nil, "\(text(p))")
        }
        for p in ["/r", "/r/roo", "/r/rootx", "/r/root/nope", "/r/root/a/b", "/elsewhere", "/"].map(b) {
            #expect(t.find(slice: p[...]) == t.find(p), "\(text(p))")
        }
        // A slice of a longer buffer, as a received line gives it.
        let line = b("1 STATUS /r/root/d/x /other")
        #expect(t.find(slice: line[9..<20]) == t.find(b("/r/root/d/x")))
    }

    @Test func writesTheLineWireLineWrites() {
        let t = Self.tree()
        for p in Self.paths {
            guard let id = t.find(p) else { Issue.record("no \(text(p))"); continue }
            var out: [UInt8] = Array("stale".utf8)
            t.appendItemLine(id, path: p[...], head: b("tag-7")[...], into: &out)
            let expected = Array("stale".utf8) + t.view(id, path: p).wireLine(head: "tag-7").terminated()
            #expect(out == expected, "\(text(out)) vs \(text(expected))")
        }
    }

    /// `.ascii` promises the field is its own encoding, so the answer may repeat it as it came;
    /// any field it lets through must be a path the general way would accept.
    @Test func plainPathKeepsItsPromises() {
        var fields: [[UInt8]] = Self.paths
        fields += ["/", "//", "/a/", "/a//b", "/./a", "/a/..", "/a/.b", "/..c", "/a/b.", "relative", "", "/a b", "/a%20b",
                   "/a\u{7F}", "/a\rb"].map(b)
        // Arbitrary bytes, drawn from a fixed sequence: slashes and dots often, so that
        // normalised paths come up too.
        var seed: UInt64 = 0x5EED
        let alphabet: [UInt8] = [0x2F, 0x2F, 0x2E, 0x2E, 0x61, 0x62, 0x25, 0x20, 0x09, 0x7F, 0x80, 0xC3, 0xA9, 0xFF, 0x00, 0x7E]
        for _ in 0..<4000 {
            var f: [UInt8] = [0x2F]
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            for k in 0..<Int(seed >> 60) { f.append(alphabet[Int((seed >> UInt64(4 * k)) & 15)]) }
            fields.append(f)
        }
        for f in fields {
            let form = PathBytes.plainPath(f[...])
            let printable = f.allSatisfy { $0 > 0x20 && $0 != 0x25 && $0 != 0x7F }
            #expect((form != nil) == (PathBytes.isNormalizedAbsolute(f) && printable), "\(f)")
            if form == .ascii { #expect(PercentEncoding.encode(f) == f, "\(f)") }
            if form != nil { #expect((form == .ascii) == f.allSatisfy { $0 < 0x80 }, "\(f)") }
        }
        // A slice of a longer line, as the daemon hands it over.
        let line = b("1 STATUS /r/root/d/x /other")
        #expect(PathBytes.plainPath(line[9..<20]) == .ascii && PathBytes.plainPath(line[8..<20]) == nil)
    }

    /// A whole plain `STATUS` answered in place gives the general way's lines, in order; any
    /// field the general way must see makes it say no.
    @Test func plainStatusAnswersAsTheGeneralWay() {
        var t = Self.tree()
        let plain = Self.paths.filter { PathBytes.plainPath($0[...]) != nil }
        #expect(plain.contains(b("/other/é.txt")) && plain.contains(b("/other/caf") + [0xFF, 0x65]))
        #expect(!plain.contains(b("/r/root/pct%")) && !plain.contains(b("/r/root/two words")))
        var line = b("tag-7 STATUS")
        var expected: [UInt8] = []
        for p in plain {
            line += [0x20] + p
            expected += t.view(t.find(p)!, path: p).wireLine(head: "tag-7").terminated()
        }
        var found: [(id: StateTree.NodeID, start: Int, end: Int, ascii: Bool)] = []
        var out: [UInt8] = []
        #expect(t.appendPlainStatus(line[...], tag: 0..<5, fieldsFrom: 13, found: &found, into: &out))
        #expect(out == expected, "\(text(out)) vs \(text(expected))")
        for bad in ["/r/root/nope", "/elsewhere", "/r/root/a/", "/r/root/a%20", "/r/root/a ", ""] {
            out = []
            #expect(!t.appendPlainStatus(b("t STATUS /r/root/a \(bad)")[...], tag: 0..<1, fieldsFrom: 9, found: &found, into: &out), "\(bad)")
        }
    }

    @Test func decimalsOfEveryLength() {
        for v: UInt64 in [0, 7, 10, 99, 100, 12345, UInt64(UInt32.max), UInt64.max] {
            var out: [UInt8] = []
            ItemLine.appendDecimal(v, &out)
            #expect(out == Array(String(v).utf8))
        }
    }
}

import Testing
@testable import SyncBadgeCore

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

    @Test func decimalsOfEveryLength() {
        for v: UInt64 in [0, 7, 10, 99, 100, 12345, UInt64(UInt32.max), UInt64.max] {
            var out: [UInt8] = []
            ItemLine.appendDecimal(v, &out)
            #expect(out == Array(String(v).utf8))
        }
    }
}

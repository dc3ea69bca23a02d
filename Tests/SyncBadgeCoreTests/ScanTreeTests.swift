import Testing
@testable import SyncBadgeCore

/// A scan keeps every name in one buffer; each entry gives back exactly its own bytes.
@Suite struct ScanTreeTests {
    @Test func namesComeBackAsTheyWentIn() {
        let names: [[UInt8]] = [b("a"), b("dir"), [0xFF, 0x0A, 0x25], Array(repeating: 0x78, count: 255), b("é.txt"), b("a")]
        var s = ScanTree()
        var parent: Int32 = -1
        for (i, n) in names.enumerated() {
            let index = s.append(parent: parent, name: n, kind: i == 1 ? .dir : .file)
            #expect(index == Int32(i))
            if i == 1 { parent = index }
        }
        #expect(s.count == names.count)
        #expect(s.names.count == names.reduce(0) { $0 + $1.count })
        for (i, n) in names.enumerated() { #expect(Array(s.name(i)) == n, "entry \(i)") }
        #expect(s.entries[2].parent == 1 && s.entries[1].kind == .dir)
        // Equal scans compare equal; a different name does not.
        var t = ScanTree()
        for (i, n) in names.enumerated() { t.append(parent: i > 1 ? 1 : -1, name: n, kind: i == 1 ? .dir : .file) }
        #expect(s == t)
        var u = ScanTree()
        for (i, n) in names.enumerated() { u.append(parent: i > 1 ? 1 : -1, name: i == 4 ? b("e.txt") : n, kind: i == 1 ? .dir : .file) }
        #expect(s != u)
    }
}

import Testing
@testable import SyncBadgeCore

/// A batch keeps its upserts' paths in one buffer: each row gives back its own root, path and
/// record, in order, through appends, removals and the tree's drain.
@Suite struct StoreChangesTests {
    static func record(_ gen: UInt64) -> EntryRecord { EntryRecord(kind: .file, state: .pending, gen: gen) }

    @Test func rowsComeBackAsTheyWentIn() {
        let rows: [([UInt8], [UInt8])] = [(b("/r"), []), (b("/r"), b("a")), (b("/s"), b("x/y")), (b("/r"), [0xFF, 0x0A]), (b("/s"), b("z"))]
        var u = StoreChanges.Upserts()
        for (i, (root, path)) in rows.enumerated() { u.append(.init(root: root, relativePath: path, record: Self.record(UInt64(i)))) }
        #expect(u.count == rows.count && u.roots.count == 2)
        for (i, (root, path)) in rows.enumerated() {
            #expect(u[i].root == root && Array(u[i].relativePath) == path && u[i].record.gen == UInt64(i), "row \(i)")
        }
        u.removeAll { $0.root == b("/r") }
        #expect(u.map { Array($0.relativePath) } == [b("x/y"), b("z")] && u.map(\.record.gen) == [2, 4])
        let literal: StoreChanges.Upserts = [.init(root: b("/r"), relativePath: b("q"), record: Self.record(9))]
        #expect(literal.count == 1 && Array(literal[0].relativePath) == b("q"))
    }

    @Test func theDrainWritesEachEntrysRelativePath() {
        var t = StateTree()
        t.addRoot(path: b("/r/root"), scan: scan(["a", "d/", "d/x", "d/e/", "d/e/z"]), rules: IgnoreRules())
        let changes = t.drainStoreChanges()
        var got = Set<[UInt8]>()
        for u in changes.upserts {
            #expect(u.root == b("/r/root"))
            let id = u.relativePath.isEmpty ? t.find(b("/r/root")) : t.find(b("/r/root/") + u.relativePath)
            #expect(id != nil && t.relativePath(id!) == Array(u.relativePath))
            // Each path with its own record.
            #expect(id.map { t.record($0) } == u.record, "\(text(Array(u.relativePath)))")
            got.insert(Array(u.relativePath))
        }
        #expect(got == Set([[], b("a"), b("d"), b("d/x"), b("d/e"), b("d/e/z")]))
    }
}

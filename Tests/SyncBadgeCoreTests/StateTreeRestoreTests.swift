import Testing
@testable import SyncBadgeCore

/// `restoreRoot` against the tree whose rows were stored: the same answers, whatever order the
/// store's byte sort gives (`a`, `a b`, `a-b`, `a/x`: a directory's entries need not follow it
/// at once).
@Suite struct StateTreeRestoreTests {
    static let root = b("/r")

    /// What the store gives back: the rows in byte order, as SQLite sorts BLOB paths.
    static func stored(_ tree: inout StateTree) -> (StoredEntries, [[UInt8]]) {
        let rows = tree.drainStoreChanges().upserts
            .map { (relativePath: Array($0.relativePath), record: $0.record) }
            .sorted { $0.relativePath.lexicographicallyPrecedes($1.relativePath) }
        return (StoredEntries(rows), rows.map(\.relativePath))
    }

    static func absolute(_ rel: [UInt8]) -> [UInt8] { rel.isEmpty ? root : root + [PathBytes.slash] + rel }

    @Test func aRestoredRootAnswersAsTheStoredOne() throws {
        var tree = StateTree()
        _ = tree.addRoot(path: Self.root, scan: scan([
            "a/", "a b/", "a b/in.txt", "a-b/", "a-b/c", "a/x/", "a/x/y.txt", "a/x/deep/", "a/x/deep/er/",
            "a/x/deep/er/f", "a/\u{e9}.txt", "z",
        ]), rules: IgnoreRules())
        tree.localChange(b("/r/a/x/y.txt"), kind: .file)
        tree.localChange(b("/r/a b/in.txt"), kind: .file)
        _ = tree.drainChanges()
        let (entries, paths) = Self.stored(&tree)
        #expect(paths.count == 13)
        var restored = StateTree()
        restored.restoreRoot(path: Self.root, entries: entries, rules: IgnoreRules())
        for rel in paths {
            let p = Self.absolute(rel)
            let id = try #require(restored.find(p), "\(text(p)) was not restored")
            let want = try #require(tree.find(p))
            #expect(restored.view(id) == tree.view(want), "\(text(p))")
        }
        #expect(restored.children(restored.find(Self.root)!).count == tree.children(tree.find(Self.root)!).count)
    }

    /// The daemon restores in chunks while the store reads the next (`Roots.restore`):
    /// any split gives the tree that one chunk gives, the chain of directories crossing chunks.
    @Test func aRestoreInChunksBuildsTheSameTree() throws {
        var tree = StateTree()
        _ = tree.addRoot(path: Self.root, scan: scan([
            "a/", "a b/", "a b/in.txt", "a-b/", "a-b/c", "a/x/", "a/x/y.txt", "a/x/deep/", "a/x/deep/er/",
            "a/x/deep/er/f", "a/\u{e9}.txt", "a/x/deep/er/g", "a/x/z", "z",
        ]), rules: IgnoreRules())
        tree.localChange(b("/r/a/x/deep/er/g"), kind: .file)
        tree.localChange(b("/r/a b/in.txt"), kind: .file)
        _ = tree.drainChanges()
        let rows = tree.drainStoreChanges().upserts
            .map { (relativePath: Array($0.relativePath), record: $0.record) }
            .sorted { $0.relativePath.lexicographicallyPrecedes($1.relativePath) }
        #expect(rows.count == 15)
        for size in 1...rows.count {
            var restored = StateTree()
            var restore = restored.beginRestore(path: Self.root, rules: IgnoreRules(), entries: rows.count)
            for start in stride(from: 0, to: rows.count, by: size) {
                restored.restore(StoredEntries(Array(rows[start..<min(start + size, rows.count)])), into: &restore)
            }
            restored.finishRestore(restore)
            for rel in rows.map(\.relativePath) {
                let p = Self.absolute(rel)
                let id = try #require(restored.find(p), "chunks of \(size): \(text(p)) was not restored")
                #expect(restored.view(id) == tree.view(try #require(tree.find(p))), "chunks of \(size): \(text(p))")
            }
            #expect(restored.liveCount == tree.liveCount, "chunks of \(size)")
        }
    }

    @Test func aRowWhoseParentWasNotStoredIsLeftOut() throws {
        var rows: [(relativePath: [UInt8], record: EntryRecord)] = [
            ([], EntryRecord(kind: .dir, state: .unknown, gen: 1)),
            (b("a"), EntryRecord(kind: .dir, state: .unknown, gen: 1)),
            (b("a/f"), EntryRecord(kind: .file, state: .pending, gen: 4)),
            (b("q/r"), EntryRecord(kind: .file, state: .pending, gen: 2)),
        ]
        rows.sort { $0.relativePath.lexicographicallyPrecedes($1.relativePath) }
        var restored = StateTree()
        restored.restoreRoot(path: Self.root, entries: StoredEntries(rows), rules: IgnoreRules())
        #expect(restored.find(b("/r/q/r")) == nil)
        let f = try #require(restored.find(b("/r/a/f")))
        #expect(restored.record(f).state == .pending)
        #expect(restored.view(restored.find(Self.root)!).counts?[.pending] == 1)
    }
}

extension StateTree {
    /// The daemon's chunked restore (`Roots.restore`: begin, a chunk at a time, finish)
    /// in one call. Here, not in Core: only these tests restore a root from one chunk.
    mutating func restoreRoot(path: [UInt8], entries: StoredEntries, rules: IgnoreRules) {
        var restore = beginRestore(path: path, rules: rules, entries: entries.count)
        self.restore(entries, into: &restore)
        finishRestore(restore)
    }
}

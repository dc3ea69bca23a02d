import Foundation
import Logging
import Testing
@testable import SyncBadgeStore
import SyncBadgeCore

@Suite struct EntryStoreTests {
    let logger = Logger(label: "test")

    func dir() -> String {
        let d = NSTemporaryDirectory() + "syncbadge-entries-\(UUID().uuidString)"
        return d
    }

    func record(_ state: SyncState, gen: UInt64, kind: EntryKind = .file) -> EntryRecord {
        EntryRecord(kind: kind, state: state, gen: gen)
    }

    @Test func entriesRoundTripWithIdentitiesAndSubtreeDeletes() async throws {
        let d = dir()
        defer { try? FileManager.default.removeItem(atPath: d) }
        let root: [UInt8] = Array("/r".utf8)
        let store = try Store(directory: d, logger: logger)
        var synced = record(.synced, gen: 7)
        synced.syncedIdentity = FileIdentity(inode: 42, size: 3, mtimeNs: 1_700_000_000_123_456_789, ctimeNs: 5).digest
        synced.message = "ok"
        synced.badge = "custom-é"
        var tomb = record(.pending, gen: 9, kind: .gone)
        tomb.progress = 10
        var ignored = record(.ignored, gen: 3)
        ignored.ruleIgnored = true
        var changes = StoreChanges()
        changes.upserts = [
            .init(root: root, relativePath: [], record: record(.unknown, gen: 1, kind: .dir)),
            .init(root: root, relativePath: Array("a".utf8), record: record(.unknown, gen: 1, kind: .dir)),
            .init(root: root, relativePath: Array("a/x".utf8), record: synced),
            .init(root: root, relativePath: Array("a-b".utf8), record: ignored),
            .init(root: root, relativePath: [0xFF, 0x0A], record: tomb),
        ]
        changes.lastGen = 9
        // Entries may arrive before the root row: the commit creates it.
        try store.commit(changes)
        try store.addRoot(StoredRoot(path: root, ignoreDefaults: false))
        let reopened = try Store(directory: d, logger: logger)
        #expect(try reopened.roots() == [StoredRoot(path: root, ignoreDefaults: false)])
        #expect(try reopened.lastGen() == 9)
        let entries = try reopened.entries(root: root)
        #expect(entries.map { Array($0.relativePath) } == [[], Array("a".utf8), Array("a-b".utf8), Array("a/x".utf8), [0xFF, 0x0A]])
        #expect(entries[2].record == ignored)
        #expect(entries[3].record == synced)
        #expect(entries[4].record == tomb)

        // Deleting "a" takes "a/x" with it but not its sibling "a-b".
        var del = StoreChanges()
        del.deletions = [.init(root: root, relativePath: Array("a".utf8))]
        del.lastGen = 9
        try reopened.commit(del)
        #expect(try reopened.entries(root: root).map { Array($0.relativePath) } == [[], Array("a-b".utf8), [0xFF, 0x0A]])
        try reopened.removeRoot(root)
        #expect(try reopened.entries(root: root).isEmpty)
    }

    /// The restore at start reads in chunks: every entry once, in path order, none bigger than
    /// asked, whatever the split.
    @Test(arguments: [1, 2, 3, 5, 6, 100])
    func entriesComeInChunksInPathOrder(_ chunk: Int) throws {
        let d = dir()
        defer { try? FileManager.default.removeItem(atPath: d) }
        let root: [UInt8] = Array("/r".utf8)
        let store = try Store(directory: d, logger: logger)
        var changes = StoreChanges()
        // In byte order, as the store gives them: `-` (0x2D) before `/` (0x2F).
        let paths = ["", "a", "a-b", "a/x", "b", "b/y"].map { Array($0.utf8) }
        // Written in reverse: the order read back is the store's, by path.
        for (i, p) in paths.enumerated().reversed() {
            changes.upserts.append(.init(root: root, relativePath: p, record: record(.pending, gen: UInt64(i + 1))))
        }
        try store.commit(changes)
        var sizes: [Int] = []
        var read: [([UInt8], UInt64)] = []
        try store.entries(root: root, chunk: chunk) { part in
            sizes.append(part.count)
            read += part.map { (Array($0.relativePath), $0.record.gen) }
        }
        #expect(read.map(\.0) == paths)
        #expect(read.map(\.1) == Array(1...6).map(UInt64.init))
        #expect(sizes.allSatisfy { $0 <= chunk } && sizes.dropLast().allSatisfy { $0 == chunk })
        #expect(sizes.count == (paths.count + chunk - 1) / chunk)
        #expect(try store.entryCount(root: root) == paths.count)
    }

    /// A store written before digests (schema v1, four identity columns) opens with each synced
    /// entry's digest, so its files stay `synced` across the upgrade when nobody touched them.
    @Test func aV1StoreKeepsItsIdentitiesAsDigests() throws {
        let d = dir()
        defer { try? FileManager.default.removeItem(atPath: d) }
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        let identity = FileIdentity(inode: 1 << 63 | 42, size: 3, mtimeNs: 1_700_000_000_123_456_789, ctimeNs: -5)
        do {
            let v1 = try Database(path: d + "/state.sqlite")
            try Store.migrate(v1, upTo: "v1", logger: logger)
            try v1.execute("INSERT INTO root (id, path, ignoreDefaults, addedAt) VALUES (1, X'2F72', 1, CURRENT_TIMESTAMP)")
            let insert = try v1.prepare("""
                INSERT INTO entry (rootId, path, kind, state, gen, inode, size, mtimeNs, ctimeNs) VALUES
                  (1, X'', ?, ?, 1, NULL, NULL, NULL, NULL),
                  (1, X'78', ?, ?, 7, ?, ?, ?, ?)
                """)
            defer { insert.finalize() }
            for (i, v) in [Int64(EntryKind.dir.rawValue), Int64(SyncState.unknown.rawValue),
                           Int64(EntryKind.file.rawValue), Int64(SyncState.synced.rawValue),
                           Int64(bitPattern: identity.inode), identity.size, identity.mtimeNs, identity.ctimeNs].enumerated() {
                insert.bind(Int32(i + 1), v)
            }
            try insert.run()
            #expect(try v1.columns(in: "entry").contains("inode"))
        }
        let store = try Store(directory: d, logger: logger)
        let entries = try store.entries(root: Array("/r".utf8))
        #expect(entries.map { Array($0.relativePath) } == [[], Array("x".utf8)])
        #expect(entries[0].record.syncedIdentity == nil)
        #expect(entries[1].record.syncedIdentity == identity.digest)
        #expect(entries[1].record.state == .synced && entries[1].record.gen == 7)
        let columns = try store.db.withLock { try $0.columns(in: "entry") }
        #expect(!columns.contains("inode") && columns.contains("identity"))
        // The old table's pages are back with the file system, not on SQLite's free list.
        #expect(try store.db.withLock { try $0.int("PRAGMA freelist_count") } == 0)
        // The table was replaced: its rows still go with their root.
        try store.removeRoot(Array("/r".utf8))
        #expect(try store.db.withLock { try $0.int("SELECT count(*) FROM entry") } == 0)
    }
}

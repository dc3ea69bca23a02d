import Foundation
import Logging
import Testing
@testable import SyncBadgeStore
import SyncBadgeCore

/// Databases written by the store's earlier GRDB-based version open with today's store, keep
/// their roots, entries and generation, and take the migrations they lack: GRDB's
/// `grdb_migrations` table is read and written on (Fixtures/, read through #filePath).
@Suite struct GRDBMigrationTests {
    let logger = Logger(label: "grdb-migration-tests")

    /// A directory holding `state.sqlite` made from a fixture's SQL.
    func directory(from fixture: String) throws -> String {
        let d = NSTemporaryDirectory() + "syncbadge-grdb-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        let sql = try String(contentsOfFile: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/\(fixture)").path, encoding: .utf8)
        let db = try Database(path: d + "/state.sqlite")
        try db.execute(sql)
        return d
    }

    func migrations(_ store: Store) throws -> [String] {
        try store.db.withLock { db in
            let s = try db.prepare("SELECT identifier FROM grdb_migrations ORDER BY identifier")
            defer { s.finalize() }
            var ids: [String] = []
            while try s.step() { ids.append(s.text(0) ?? "") }
            return ids
        }
    }

    @Test func aDatabaseWrittenThroughGRDBOpensWithItsStates() throws {
        let d = try directory(from: "grdb-v2.sql")
        defer { try? FileManager.default.removeItem(atPath: d) }
        let root = Array("/tmp/grdbfx/root".utf8)
        do {
            let store = try Store.open(directory: d, logger: logger)
            #expect(try store.roots() == [StoredRoot(path: root, ignoreDefaults: true)])
            #expect(try store.lastGen() == 1)
            let entries = try store.entries(root: root)
            #expect(entries.map { String(decoding: $0.relativePath, as: UTF8.self) } == ["", "a.txt", "sub", "sub/b.txt"])
            #expect(entries.map(\.record.state) == [.unknown, .synced, .error, .pending])
            #expect(entries.map(\.record.kind) == [.dir, .file, .dir, .file])
            #expect(entries[1].record.syncedIdentity == FileIdentity.Digest(bits: UInt64(bitPattern: -4844736972293674353)))
            #expect(entries[2].record.message == "disk full")
            #expect(try migrations(store) == ["v1", "v2-identity-digest", "v3-leases"])
            // And it takes new writes, leases included.
            var changes = StoreChanges()
            changes.upserts = [.init(root: root, relativePath: Array("c".utf8), record: EntryRecord(kind: .file, state: .syncing, gen: 2))]
            changes.leases = [.init(root: root, relativePath: Array("c".utf8), untilMs: 1_800_000_000_000)]
            changes.lastGen = 2
            try store.commit(changes)
        }
        let again = try Store.open(directory: d, logger: logger)
        #expect(try again.lastGen() == 2)
        #expect(try again.entryCount(root: root) == 5)
        #expect(try again.leases() == [.init(root: root, relativePath: Array("c".utf8), untilMs: 1_800_000_000_000)])
        // Nothing was moved aside as corrupt.
        #expect(try FileManager.default.contentsOfDirectory(atPath: d).allSatisfy { !$0.contains("corrupt") })
        // A root's rows still go with it (the foreign keys are on).
        try again.removeRoot(root)
        #expect(try again.db.withLock { try $0.int("SELECT count(*) FROM entry") } == 0)
        #expect(try again.leases().isEmpty)
    }

    @Test func aV1DatabaseWrittenThroughGRDBIsMigratedToDigests() throws {
        let d = try directory(from: "grdb-v1.sql")
        defer { try? FileManager.default.removeItem(atPath: d) }
        let store = try Store.open(directory: d, logger: logger)
        #expect(try store.roots() == [StoredRoot(path: Array("/r".utf8), ignoreDefaults: false)])
        #expect(try store.lastGen() == 7)
        let entries = try store.entries(root: Array("/r".utf8))
        #expect(entries.map { Array($0.relativePath) } == [[], Array("x".utf8)])
        let identity = FileIdentity(inode: 42, size: 3, mtimeNs: 1_700_000_000_123_456_789, ctimeNs: 5)
        #expect(entries[1].record.syncedIdentity == identity.digest)
        #expect(entries[1].record.badge == "custom" && entries[1].record.state == .synced)
        #expect(try migrations(store) == ["v1", "v2-identity-digest", "v3-leases"])
        #expect(try store.db.withLock { try $0.columns(in: "entry") }.contains("identity"))
        #expect(try store.db.withLock { try $0.int("PRAGMA freelist_count") } == 0)
    }

    /// A database from a newer daemon (a migration this version does not know) still opens.
    @Test func anUnknownMigrationIsKeptAndTheStoreOpens() throws {
        let d = try directory(from: "grdb-v2.sql")
        defer { try? FileManager.default.removeItem(atPath: d) }
        try Database(path: d + "/state.sqlite").execute("INSERT INTO grdb_migrations VALUES ('v99-future')")
        let store = try Store.open(directory: d, logger: logger)
        #expect(try migrations(store) == ["v1", "v2-identity-digest", "v3-leases", "v99-future"])
        #expect(try store.roots().count == 1)
    }

    /// The WAL and `synchronous = FULL` are set on every open, as with GRDB.
    @Test func theJournalIsWALAndSyncIsFull() throws {
        let d = try directory(from: "grdb-v2.sql")
        defer { try? FileManager.default.removeItem(atPath: d) }
        let store = try Store.open(directory: d, logger: logger)
        #expect(try store.db.withLock { try $0.text("PRAGMA journal_mode") } == "wal")
        #expect(try store.db.withLock { try $0.int("PRAGMA synchronous") } == 2)
        #expect(try store.db.withLock { try $0.int("PRAGMA foreign_keys") } == 1)
    }
}

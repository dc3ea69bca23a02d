import Foundation
import GRDB
import Logging
import SyncBadgeCore

/// A registered root as stored.
public struct StoredRoot: Sendable, Equatable {
    public var path: [UInt8]
    /// Whether the built-in ignore patterns (editor swap and backup files) apply.
    public var ignoreDefaults: Bool

    public init(path: [UInt8], ignoreDefaults: Bool) {
        self.path = path
        self.ignoreDefaults = ignoreDefaults
    }
}

/// Durable state in SQLite through GRDB: roots now, per-path states next (the `entry` table is
/// laid out for them). Every call is synchronous: the daemon makes them on its own store thread,
/// never the event loop. (GRDB's async API would run them on libdispatch's worker pool, whose
/// monitor timer then wakes the process every second for good.)
public final class Store: Sendable {
    let db: DatabaseQueue
    let logger: Logger

    /// Opens (creating) `<directory>/state.sqlite`.
    public init(directory: String, logger: Logger) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        var config = Configuration()
        config.label = "syncbadge-store"
        config.prepareDatabase { db in
            // WAL: readers never block the writer; FULL: an acknowledged write survives power loss.
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        self.db = try DatabaseQueue(path: directory + "/state.sqlite", configuration: config)
        self.logger = logger
        let applied = try db.read { try Self.migrator.appliedIdentifiers($0) }
        try Self.migrator.migrate(db)
        if applied.contains("v1") && !applied.contains("v2-identity-digest") {
            // The v1 table's pages went to the free list: give them back to the file system
            // once (a million entries: about 45 MB, a second or two). Not inside a migration,
            // which runs in a transaction.
            try db.vacuum()
        }
    }

    /// Opens the store, moving a corrupt database aside (with a log line) and starting fresh:
    /// a daemon that cannot read its own file must not crash-loop over it. The roots and states
    /// in the bad file are lost; the rescan at start finds every file again as `unknown`.
    public static func open(directory: String, logger: Logger) throws -> Store {
        do {
            let store = try Store(directory: directory, logger: logger)
            try store.check()
            return store
        } catch let e as DatabaseError where e.resultCode == .SQLITE_CORRUPT || e.resultCode == .SQLITE_NOTADB {
            let file = directory + "/state.sqlite"
            let aside = file + ".corrupt-\(Int(Date().timeIntervalSince1970))"
            // The WAL and shared-memory files belong to the bad database: keep them beside it.
            for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: file + suffix) {
                try FileManager.default.moveItem(atPath: file + suffix, toPath: aside + suffix)
            }
            logger.error("the state database is corrupt: moved it aside and starting with an empty one",
                         metadata: ["file": "\(file)", "movedTo": "\(aside)", "error": "\(e)"])
            return try Store(directory: directory, logger: logger)
        }
    }

    /// Reads every page once (`quick_check`): a corrupt file fails here, at start, rather than
    /// in the middle of serving.
    func check() throws {
        try db.read { db in
            let result = try String.fetchOne(db, sql: "PRAGMA quick_check(1)") ?? "ok"
            if result != "ok" { throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: result) }
        }
    }

    static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("v1") { db in
            try db.create(table: "meta") { t in
                t.primaryKey("key", .text)
                t.column("value", .integer).notNull()
            }
            try db.create(table: "root") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("path", .blob).notNull().unique()
                t.column("ignoreDefaults", .boolean).notNull().defaults(to: true)
                t.column("addedAt", .datetime).notNull()
            }
            // One row per path under a root (the root itself has path ''), tombstones included.
            try db.create(table: "entry", options: [.withoutRowID]) { t in
                t.column("rootId", .integer).notNull().references("root", onDelete: .cascade)
                t.column("path", .blob).notNull()
                t.column("kind", .integer).notNull()
                t.column("state", .integer).notNull()
                t.column("gen", .integer).notNull()
                t.column("progress", .integer)
                t.column("message", .text)
                t.column("badge", .text)
                // Identity recorded when the entry became `synced`.
                t.column("inode", .integer)
                t.column("size", .integer)
                t.column("mtimeNs", .integer)
                t.column("ctimeNs", .integer)
                t.column("ruleIgnored", .boolean).notNull().defaults(to: false)
                t.primaryKey(["rootId", "path"])
            }
        }
        // The tree keeps a digest of a synced file's identity, not the four fields
        // (`FileIdentity.Digest`): the store keeps the same, computed here for a v1 file. The
        // table is copied once (an UPDATE then four DROP COLUMNs would rewrite it five times,
        // and a million rows that often grow the WAL by as much). GRDB's migrator defers the
        // foreign key checks to the end, which lets the table be replaced.
        m.registerMigration("v2-identity-digest") { db in
            db.add(function: DatabaseFunction("syncbadge_identity_digest", argumentCount: 4, pure: true) { v in
                guard let inode = Int64.fromDatabaseValue(v[0]), let size = Int64.fromDatabaseValue(v[1]),
                      let m = Int64.fromDatabaseValue(v[2]), let c = Int64.fromDatabaseValue(v[3]) else { return nil }
                let identity = FileIdentity(inode: UInt64(bitPattern: inode), size: size, mtimeNs: m, ctimeNs: c)
                return Int64(bitPattern: identity.digest.bits)
            })
            try db.create(table: "entry_v2", options: [.withoutRowID]) { t in
                t.column("rootId", .integer).notNull().references("root", onDelete: .cascade)
                t.column("path", .blob).notNull()
                t.column("kind", .integer).notNull()
                t.column("state", .integer).notNull()
                t.column("gen", .integer).notNull()
                t.column("progress", .integer)
                t.column("message", .text)
                t.column("badge", .text)
                // The digest of the identity recorded when the entry became `synced`.
                t.column("identity", .integer)
                t.column("ruleIgnored", .boolean).notNull().defaults(to: false)
                t.primaryKey(["rootId", "path"])
            }
            try db.execute(sql: """
                INSERT INTO entry_v2 (rootId, path, kind, state, gen, progress, message, badge, identity, ruleIgnored)
                SELECT rootId, path, kind, state, gen, progress, message, badge,
                       syncbadge_identity_digest(inode, size, mtimeNs, ctimeNs), ruleIgnored
                FROM entry
                """)
            try db.drop(table: "entry")
            try db.rename(table: "entry_v2", to: "entry")
        }
        return m
    }

    public func roots() throws -> [StoredRoot] {
        try db.read { db in
            try Row.fetchAll(db, sql: "SELECT path, ignoreDefaults FROM root ORDER BY id").map { row in
                let data: Data = row["path"]
                return StoredRoot(path: Array(data), ignoreDefaults: row["ignoreDefaults"])
            }
        }
    }

    public func addRoot(_ root: StoredRoot) throws {
        // The time from SQLite, not a `Date`: GRDB formats a `Date` with a DateFormatter, whose
        // ICU code and data (4.7 MB of pages) a registration otherwise first touches
        // (PERFORMANCE.md, "Memory per entry").
        try db.write { db in
            try db.execute(
                sql: "INSERT INTO root (path, ignoreDefaults, addedAt) VALUES (?, ?, CURRENT_TIMESTAMP) ON CONFLICT(path) DO UPDATE SET ignoreDefaults = excluded.ignoreDefaults",
                arguments: [Data(root.path), root.ignoreDefaults])
        }
    }

    public func removeRoot(_ path: [UInt8]) throws {
        try db.write { db in
            try db.execute(sql: "DELETE FROM root WHERE path = ?", arguments: [Data(path)])
        }
    }

    /// The last generation handed out, so generations keep growing across restarts.
    public func lastGen() throws -> UInt64 {
        try db.read { db in
            try UInt64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'lastGen'") ?? 0
        }
    }

    public func saveLastGen(_ gen: UInt64) throws {
        try db.write { db in
            try db.execute(
                sql: "INSERT INTO meta (key, value) VALUES ('lastGen', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                arguments: [Int64(bitPattern: gen)])
        }
    }
}

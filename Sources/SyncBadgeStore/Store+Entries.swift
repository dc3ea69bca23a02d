import Foundation
import GRDB
import GRDBSQLite
import SyncBadgeCore

/// Per-path states: written in batches (group commit), read back at start.
extension Store {
    /// Writes a batch in one transaction: one fsync however many entries it holds.
    public func commit(_ changes: StoreChanges) throws {
        try commit([changes])
    }

    /// Writes batches in order, all in one transaction: batches that failed before (a full
    /// disk) are retried together with the newer ones, and nothing lands half-way.
    public func commit(_ batches: [StoreChanges]) throws {
        try db.write { db in
            for changes in batches { try Self.write(changes, db) }
        }
    }

    static func write(_ changes: StoreChanges, _ db: Database) throws {
        var rootIDs: [[UInt8]: Int64?] = [:]
        func rootID(_ path: [UInt8], create: Bool) throws -> Int64? {
            if let cached = rootIDs[path], cached != nil || !create { return cached }
            if create {
                // Entries can come without a root row when storing that row failed (its
                // ADD-ROOT was answered with an error); a later row sets the real settings.
                try db.execute(sql: "INSERT INTO root (path, ignoreDefaults, addedAt) VALUES (?, 1, CURRENT_TIMESTAMP) ON CONFLICT(path) DO NOTHING",
                               arguments: [Data(path)])
            }
            let id = try Int64.fetchOne(db, sql: "SELECT id FROM root WHERE path = ?", arguments: [Data(path)])
            rootIDs[path] = id
            return id
        }
        // Two statements, not one with `OR`: SQLite answers `path = ? OR (range)` with a scan of
        // the whole root, which made every deletion cost as much as the root is large.
        let deleteOne = try db.cachedStatement(sql: "DELETE FROM entry WHERE rootId = ? AND path = ?")
        let deleteBelow = try db.cachedStatement(sql: "DELETE FROM entry WHERE rootId = ? AND path >= ? AND path < ?")
        for d in changes.deletions {
            guard let root = try rootID(d.root, create: false) else { continue }
            if d.relativePath.isEmpty {
                try db.execute(sql: "DELETE FROM entry WHERE rootId = ?", arguments: [root])
            } else {
                try deleteOne.execute(arguments: [root, Data(d.relativePath)])
                // Everything below it: paths between "p/" and "p0" ('0' follows '/').
                try deleteBelow.execute(arguments: [root, Data(d.relativePath + [0x2F]), Data(d.relativePath + [0x30])])
            }
        }
        let upsert = try db.cachedStatement(sql: """
            INSERT INTO entry (rootId, path, kind, state, gen, progress, message, badge, identity, ruleIgnored)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(rootId, path) DO UPDATE SET kind = excluded.kind, state = excluded.state, gen = excluded.gen,
              progress = excluded.progress, message = excluded.message, badge = excluded.badge,
              identity = excluded.identity, ruleIgnored = excluded.ruleIgnored
            """)
        for u in changes.upserts {
            guard let root = try rootID(u.root, create: true) else { continue }
            let r = u.record
            try upsert.execute(arguments: [
                root, Data(u.relativePath), Int(r.kind.rawValue), Int(r.state.rawValue), Int64(bitPattern: r.gen),
                r.progress.map { Int($0) }, r.message, r.badge,
                r.syncedIdentity.map { Int64(bitPattern: $0.bits) }, r.ruleIgnored,
            ])
        }
        try db.execute(
            sql: "INSERT INTO meta (key, value) VALUES ('lastGen', ?) ON CONFLICT(key) DO UPDATE SET value = max(value, excluded.value)",
            arguments: [Int64(bitPattern: changes.lastGen)])
    }

    /// A root's entries in path order (a directory before what is under it): paths in one
    /// buffer, no array per row.
    public func entries(root: [UInt8]) throws -> StoredEntries {
        var all = StoredEntries()
        try entries(root: root, chunk: .max) { all = $0 }
        return all
    }

    /// How many entries a root has stored.
    public func entryCount(root: [UInt8]) throws -> Int {
        try db.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM entry JOIN root ON root.id = entry.rootId WHERE root.path = ?",
                             arguments: [Data(root)]) ?? 0
        }
    }

    /// A root's entries in path order, handed to `body` in chunks of at most `chunk` entries,
    /// for the restore at start: the caller fills the tree with one chunk while this reads the
    /// next. The columns are read with SQLite's own API on the row GRDB's cursor has stepped
    /// to: GRDB's `Row` subscripts and a `Data` per path cost more than the query itself at a
    /// million rows (PERFORMANCE.md, "Start-up").
    public func entries(root: [UInt8], chunk: Int, _ body: (StoredEntries) throws -> Void) throws {
        try db.read { db in
            guard let rootID = try Int64.fetchOne(db, sql: "SELECT id FROM root WHERE path = ?", arguments: [Data(root)]) else { return }
            let statement = try db.makeStatement(sql: """
                SELECT path, kind, state, gen, progress, message, badge, identity, ruleIgnored
                FROM entry WHERE rootId = ? ORDER BY path
                """)
            let rows = try Row.fetchCursor(statement, arguments: [rootID])
            let s = statement.sqliteStatement
            func isNull(_ column: Int32) -> Bool { sqlite3_column_type(s, column) == SQLITE_NULL }
            func text(_ column: Int32) -> String? {
                guard let p = sqlite3_column_text(s, column) else { return nil }
                return String(decoding: UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(s, column))), as: UTF8.self)
            }
            var out = StoredEntries()
            out.reserveCapacity(min(chunk, 1 << 16))
            while try rows.next() != nil {
                guard let k = UInt8(exactly: sqlite3_column_int64(s, 1)), let kind = EntryKind(rawValue: k),
                      let st = UInt8(exactly: sqlite3_column_int64(s, 2)), let state = SyncState(rawValue: st) else { continue }
                var r = EntryRecord(kind: kind, state: state, gen: UInt64(bitPattern: sqlite3_column_int64(s, 3)))
                if !isNull(4) { r.progress = UInt8(clamping: sqlite3_column_int64(s, 4)) }
                if !isNull(5) { r.message = text(5) }
                if !isNull(6) { r.badge = text(6) }
                if !isNull(7) { r.syncedIdentity = FileIdentity.Digest(bits: UInt64(bitPattern: sqlite3_column_int64(s, 7))) }
                r.ruleIgnored = sqlite3_column_int64(s, 8) != 0
                // The blob's pointer comes before its length, as SQLite asks; an empty blob is NULL.
                let path = sqlite3_column_blob(s, 0)
                out.append(relativePath: UnsafeRawBufferPointer(start: path, count: Int(sqlite3_column_bytes(s, 0))), record: r)
                if out.count >= chunk {
                    try body(out)
                    out = StoredEntries()
                    out.reserveCapacity(chunk)
                }
            }
            if !out.isEmpty { try body(out) }
        }
    }
}

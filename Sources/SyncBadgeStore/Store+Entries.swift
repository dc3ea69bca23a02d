import Foundation
import GRDB
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

    /// A root's stored entries, parents before children.
    /// A root's entries in path order (a directory before what is under it), for the restore
    /// at start: paths in one buffer, no array per row.
    public func entries(root: [UInt8]) throws -> StoredEntries {
        try db.read { db in
            var out = StoredEntries()
            guard let rootID = try Int64.fetchOne(db, sql: "SELECT id FROM root WHERE path = ?", arguments: [Data(root)]) else { return out }
            let rows = try Row.fetchCursor(db, sql: """
                SELECT path, kind, state, gen, progress, message, badge, identity, ruleIgnored
                FROM entry WHERE rootId = ? ORDER BY path
                """, arguments: [rootID])
            while let row = try rows.next() {
                guard let kind = EntryKind(rawValue: UInt8(row[1] as Int)), let state = SyncState(rawValue: UInt8(row[2] as Int)) else { continue }
                var r = EntryRecord(kind: kind, state: state, gen: UInt64(bitPattern: row[3] as Int64))
                if !row.hasNull(atIndex: 4) { r.progress = UInt8(clamping: row[4] as Int) }
                if !row.hasNull(atIndex: 5) { r.message = row[5] as String }
                if !row.hasNull(atIndex: 6) { r.badge = row[6] as String }
                if !row.hasNull(atIndex: 7) { r.syncedIdentity = FileIdentity.Digest(bits: UInt64(bitPattern: row[7] as Int64)) }
                r.ruleIgnored = row[8]
                // The path's bytes straight from SQLite's buffer: no Data, no array per row.
                try row.withUnsafeData(atIndex: 0) { data in
                    out.append(relativePath: data ?? Data(), record: r)
                }
            }
            return out
        }
    }
}

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
        try db.withLock { db in
            try db.transaction {
                for changes in batches { try Self.write(changes, db) }
            }
        }
    }

    static func write(_ changes: StoreChanges, _ db: Database) throws {
        var rootIDs: [[UInt8]: Int64?] = [:]
        func rootID(_ path: [UInt8], create: Bool) throws -> Int64? {
            if let cached = rootIDs[path], cached != nil || !create { return cached }
            if create {
                // Entries can come without a root row when storing that row failed (its
                // ADD-ROOT was answered with an error); a later row sets the real settings.
                let insert = try db.cached("INSERT INTO root (path, ignoreDefaults, addedAt) VALUES (?, 1, CURRENT_TIMESTAMP) ON CONFLICT(path) DO NOTHING")
                insert.bind(blob: 1, path)
                try insert.run()
            }
            let id = try db.int("SELECT id FROM root WHERE path = ?") { $0.bind(blob: 1, path) }
            rootIDs[path] = id
            return id
        }
        // Two statements, not one with `OR`: SQLite answers `path = ? OR (range)` with a scan of
        // the whole root, which made every deletion cost as much as the root is large.
        for d in changes.deletions {
            guard let root = try rootID(d.root, create: false) else { continue }
            if d.relativePath.isEmpty {
                let all = try db.cached("DELETE FROM entry WHERE rootId = ?")
                all.bind(1, root)
                try all.run()
            } else {
                let one = try db.cached("DELETE FROM entry WHERE rootId = ? AND path = ?")
                one.bind(1, root)
                one.bind(blob: 2, d.relativePath)
                try one.run()
                // Everything below it: paths between "p/" and "p0" ('0' follows '/').
                let below = try db.cached("DELETE FROM entry WHERE rootId = ? AND path >= ? AND path < ?")
                below.bind(1, root)
                below.bind(blob: 2, d.relativePath + [0x2F])
                below.bind(blob: 3, d.relativePath + [0x30])
                try below.run()
            }
        }
        if !changes.upserts.isEmpty {
            let upsert = try db.cached("""
                INSERT INTO entry (rootId, path, kind, state, gen, progress, message, badge, identity, ruleIgnored)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(rootId, path) DO UPDATE SET kind = excluded.kind, state = excluded.state, gen = excluded.gen,
                  progress = excluded.progress, message = excluded.message, badge = excluded.badge,
                  identity = excluded.identity, ruleIgnored = excluded.ruleIgnored
                """)
            for u in changes.upserts {
                guard let root = try rootID(u.root, create: true) else { continue }
                let r = u.record
                upsert.reset()
                upsert.bind(1, root)
                upsert.bind(blob: 2, u.relativePath)
                upsert.bind(3, Int64(r.kind.rawValue))
                upsert.bind(4, Int64(r.state.rawValue))
                upsert.bind(5, Int64(bitPattern: r.gen))
                upsert.bind(6, r.progress.map { Int64($0) })
                upsert.bind(7, r.message)
                upsert.bind(8, r.badge)
                upsert.bind(9, r.syncedIdentity.map { Int64(bitPattern: $0.bits) })
                upsert.bind(10, r.ruleIgnored)
                try upsert.run()
            }
        }
        for l in changes.leases {
            guard let root = try rootID(l.root, create: l.untilMs != nil) else { continue }
            if let until = l.untilMs {
                let put = try db.cached("""
                    INSERT INTO lease (rootId, path, untilMs) VALUES (?, ?, ?)
                    ON CONFLICT(rootId, path) DO UPDATE SET untilMs = excluded.untilMs
                    """)
                put.bind(1, root)
                put.bind(blob: 2, l.relativePath)
                put.bind(3, until)
                try put.run()
            } else {
                let drop = try db.cached("DELETE FROM lease WHERE rootId = ? AND path = ?")
                drop.bind(1, root)
                drop.bind(blob: 2, l.relativePath)
                try drop.run()
            }
        }
        let gen = try db.cached("INSERT INTO meta (key, value) VALUES ('lastGen', ?) ON CONFLICT(key) DO UPDATE SET value = max(value, excluded.value)")
        gen.bind(1, Int64(bitPattern: changes.lastGen))
        try gen.run()
    }

    /// Every stored lease (protocol 1.2): the daemon releases at start those that ran out while
    /// it was down, and times the others.
    public func leases() throws -> [StoreChanges.Lease] {
        try db.withLock { db in
            let s = try db.cached("SELECT root.path, lease.path, untilMs FROM lease JOIN root ON root.id = lease.rootId ORDER BY lease.rootId, lease.path")
            var leases: [StoreChanges.Lease] = []
            while try s.step() {
                leases.append(StoreChanges.Lease(root: Array(s.blob(0)), relativePath: Array(s.blob(1)), untilMs: s.int(2)))
            }
            return leases
        }
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
        try db.withLock { db in
            Int(try db.int("SELECT count(*) FROM entry JOIN root ON root.id = entry.rootId WHERE root.path = ?") { $0.bind(blob: 1, root) } ?? 0)
        }
    }

    /// A root's entries in path order, handed to `body` in chunks of at most `chunk` entries,
    /// for the restore at start: the caller fills the tree with one chunk while this reads the
    /// next. Columns are read with SQLite's column API, the path appended from SQLite's own
    /// buffer in one copy (PERFORMANCE.md, "Start-up").
    public func entries(root: [UInt8], chunk: Int, _ body: (StoredEntries) throws -> Void) throws {
        try db.withLock { db in
            guard let rootID = try db.int("SELECT id FROM root WHERE path = ?", { $0.bind(blob: 1, root) }) else { return }
            let s = try db.cached("""
                SELECT path, kind, state, gen, progress, message, badge, identity, ruleIgnored
                FROM entry WHERE rootId = ? ORDER BY path
                """)
            s.bind(1, rootID)
            // The statement stays open across the chunks: reset it, whatever way this ends, so
            // that it holds no read snapshot afterwards.
            defer { s.reset() }
            var out = StoredEntries()
            out.reserveCapacity(min(chunk, 1 << 16))
            while try s.step() {
                guard let k = UInt8(exactly: s.int(1)), let kind = EntryKind(rawValue: k),
                      let st = UInt8(exactly: s.int(2)), let state = SyncState(rawValue: st) else { continue }
                var r = EntryRecord(kind: kind, state: state, gen: UInt64(bitPattern: s.int(3)))
                if !s.isNull(4) { r.progress = UInt8(clamping: s.int(4)) }
                if !s.isNull(5) { r.message = s.text(5) }
                if !s.isNull(6) { r.badge = s.text(6) }
                if !s.isNull(7) { r.syncedIdentity = FileIdentity.Digest(bits: UInt64(bitPattern: s.int(7))) }
                r.ruleIgnored = s.int(8) != 0
                out.append(relativePath: s.blob(0), record: r)
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

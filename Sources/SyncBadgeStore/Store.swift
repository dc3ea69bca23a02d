#if canImport(Glibc)
import Glibc
#endif
import CSQLite
import Logging
import Synchronization
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

/// Durable state in SQLite, through SQLite's own C API on the system's libsqlite3: roots,
/// per-path states and leases. Every call is synchronous: the daemon makes them on its own
/// store thread, never the event loop. One connection, used by one thread at a time (the
/// mutex); no Foundation, so the daemon carries neither Foundation's internationalization nor
/// ICU's data (docs/PACKAGING.md, "Binary size").
public final class Store: Sendable {
    let db: Mutex<Database>
    let logger: Logger

    /// Opens (creating) `<directory>/state.sqlite`.
    public init(directory: String, logger: Logger) throws {
        try Self.makeDirectory(directory)
        let connection = try Database(path: directory + "/state.sqlite")
        // WAL: readers never block the writer; FULL: an acknowledged write survives power loss.
        // The first statement reads the file's header: a file that is not a database fails here.
        try connection.execute("PRAGMA journal_mode = WAL")
        try connection.execute("PRAGMA synchronous = FULL")
        // A root's entries and leases go with it (ON DELETE CASCADE).
        try connection.execute("PRAGMA foreign_keys = ON")
        let applied = try Self.migrate(connection, logger: logger)
        if applied.contains("v1") && !applied.contains("v2-identity-digest") {
            // The v1 table's pages went to the free list: give them back to the file system
            // once (a million entries: about 45 MB, a second or two). Not inside a migration,
            // which runs in a transaction.
            try connection.execute("VACUUM")
        }
        self.db = Mutex(connection)
        self.logger = logger
    }

    /// Opens the store, moving a corrupt database aside (with a log line) and starting fresh:
    /// a daemon that cannot read its own file must not crash-loop over it. The roots and states
    /// in the bad file are lost; the rescan at start finds every file again as `unknown`.
    public static func open(directory: String, logger: Logger) throws -> Store {
        do {
            let store = try Store(directory: directory, logger: logger)
            try store.check()
            return store
        } catch let e as StoreError where e.primaryCode == SQLITE_CORRUPT || e.primaryCode == SQLITE_NOTADB {
            let file = directory + "/state.sqlite"
            let aside = file + ".corrupt-\(time(nil))"
            // The WAL and shared-memory files belong to the bad database: keep them beside it.
            for suffix in ["", "-wal", "-shm"] where access(file + suffix, F_OK) == 0 {
                guard rename(file + suffix, aside + suffix) == 0 else {
                    throw StoreError(code: SQLITE_CANTOPEN, message: "cannot move \(file + suffix) aside: errno \(errno)", sql: nil)
                }
            }
            logger.error("the state database is corrupt: moved it aside and starting with an empty one",
                         metadata: ["file": "\(file)", "movedTo": "\(aside)", "error": "\(e)"])
            return try Store(directory: directory, logger: logger)
        }
    }

    /// `mkdir -p` with mode 0700 for what it creates: the state is the user's alone.
    static func makeDirectory(_ path: String) throws {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            prefix += component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                throw StoreError(code: SQLITE_CANTOPEN, message: "cannot create \(prefix): errno \(errno)", sql: nil)
            }
            prefix += "/"
        }
    }

    /// Reads every page once (`quick_check`): a corrupt file fails here, at start, rather than
    /// in the middle of serving.
    func check() throws {
        try db.withLock { db in
            let result = try db.text("PRAGMA quick_check(1)") ?? "ok"
            if result != "ok" { throw StoreError(code: SQLITE_CORRUPT, message: result, sql: "PRAGMA quick_check(1)") }
        }
    }

    // MARK: Migrations

    /// A step of the schema, applied once, in order, each in its own transaction.
    struct Migration: Sendable {
        let identifier: String
        let apply: @Sendable (Database) throws -> Void
    }

    /// The applied migrations are listed in `grdb_migrations`, the table GRDB's migrator kept
    /// when the store was written through GRDB: a database from that version opens here and
    /// goes on from where it was.
    static let migrationsTable = "grdb_migrations"

    static let migrations: [Migration] = [
        Migration(identifier: "v1") { db in
            try db.execute("""
                CREATE TABLE "meta" ("key" TEXT PRIMARY KEY NOT NULL, "value" INTEGER NOT NULL);
                CREATE TABLE "root" ("id" INTEGER PRIMARY KEY AUTOINCREMENT, "path" BLOB NOT NULL UNIQUE,
                  "ignoreDefaults" BOOLEAN NOT NULL DEFAULT 1, "addedAt" DATETIME NOT NULL);
                -- One row per path under a root (the root itself has path ''), tombstones included.
                CREATE TABLE "entry" ("rootId" INTEGER NOT NULL REFERENCES "root"("id") ON DELETE CASCADE,
                  "path" BLOB NOT NULL, "kind" INTEGER NOT NULL, "state" INTEGER NOT NULL, "gen" INTEGER NOT NULL,
                  "progress" INTEGER, "message" TEXT, "badge" TEXT,
                  "inode" INTEGER, "size" INTEGER, "mtimeNs" INTEGER, "ctimeNs" INTEGER,
                  "ruleIgnored" BOOLEAN NOT NULL DEFAULT 0,
                  PRIMARY KEY ("rootId", "path")) WITHOUT ROWID;
                """)
        },
        // The tree keeps a digest of a synced file's identity, not the four fields
        // (`FileIdentity.Digest`): the store keeps the same, computed here for a v1 file. The
        // table is copied once (an UPDATE then four DROP COLUMNs would rewrite it five times,
        // and a million rows that often grow the WAL by as much). Foreign keys are off while a
        // migration runs and checked before it commits, which lets the table be replaced.
        Migration(identifier: "v2-identity-digest") { db in
            try registerIdentityDigest(db)
            try db.execute("""
                CREATE TABLE "entry_v2" ("rootId" INTEGER NOT NULL REFERENCES "root"("id") ON DELETE CASCADE,
                  "path" BLOB NOT NULL, "kind" INTEGER NOT NULL, "state" INTEGER NOT NULL, "gen" INTEGER NOT NULL,
                  "progress" INTEGER, "message" TEXT, "badge" TEXT,
                  "identity" INTEGER,
                  "ruleIgnored" BOOLEAN NOT NULL DEFAULT 0,
                  PRIMARY KEY ("rootId", "path")) WITHOUT ROWID;
                INSERT INTO entry_v2 (rootId, path, kind, state, gen, progress, message, badge, identity, ruleIgnored)
                SELECT rootId, path, kind, state, gen, progress, message, badge,
                       syncbadge_identity_digest(inode, size, mtimeNs, ctimeNs), ruleIgnored
                FROM entry;
                DROP TABLE entry;
                ALTER TABLE entry_v2 RENAME TO entry;
                """)
        },
        // Protocol 1.2's leases: the wall-clock deadline of a `syncing` that outlives its
        // connection, beside its entry.
        Migration(identifier: "v3-leases") { db in
            try db.execute("""
                CREATE TABLE "lease" ("rootId" INTEGER NOT NULL REFERENCES "root"("id") ON DELETE CASCADE,
                  "path" BLOB NOT NULL, "untilMs" INTEGER NOT NULL,
                  PRIMARY KEY ("rootId", "path")) WITHOUT ROWID;
                """)
        },
    ]

    /// Applies the migrations not yet applied (all of them, or those up to `target`), and
    /// returns those that were applied before.
    @discardableResult
    static func migrate(_ db: Database, upTo target: String? = nil, logger: Logger) throws -> Set<String> {
        try db.execute("CREATE TABLE IF NOT EXISTS \(migrationsTable) (identifier TEXT NOT NULL PRIMARY KEY)")
        var applied = Set<String>()
        let read = try db.prepare("SELECT identifier FROM \(migrationsTable)")
        while try read.step() { if let id = read.text(0) { applied.insert(id) } }
        read.finalize()
        let known = Set(migrations.map(\.identifier))
        if !applied.isSubset(of: known) {
            // A newer daemon's database: its tables are a superset of ours.
            logger.warning("the state database has migrations this version does not know",
                           metadata: ["unknown": "\(applied.subtracting(known).sorted())"])
        }
        for m in migrations where !applied.contains(m.identifier) {
            try db.execute("PRAGMA foreign_keys = OFF")
            defer { try? db.execute("PRAGMA foreign_keys = ON") }
            try db.transaction {
                try m.apply(db)
                let check = try db.prepare("PRAGMA foreign_key_check")
                defer { check.finalize() }
                if try check.step() {
                    throw StoreError(code: SQLITE_CONSTRAINT | (3 << 8), message: "migration \(m.identifier) broke a foreign key",
                                     sql: nil)
                }
                let mark = try db.cached("INSERT INTO \(migrationsTable) (identifier) VALUES (?)")
                mark.bind(1, m.identifier)
                try mark.run()
            }
            if m.identifier == target { break }
        }
        return applied
    }

    /// `syncbadge_identity_digest(inode, size, mtimeNs, ctimeNs)`: the v2 migration's digest of
    /// a v1 row's identity; NULL when any field is.
    static func registerIdentityDigest(_ db: Database) throws {
        let rc = sqlite3_create_function_v2(
            db.handle, "syncbadge_identity_digest", 4, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil,
            { context, count, values in
                guard count == 4, let values else { sqlite3_result_null(context); return }
                var fields: [Int64] = []
                for i in 0..<4 {
                    guard sqlite3_value_type(values[i]) != SQLITE_NULL else { sqlite3_result_null(context); return }
                    fields.append(sqlite3_value_int64(values[i]))
                }
                let identity = FileIdentity(inode: UInt64(bitPattern: fields[0]), size: fields[1], mtimeNs: fields[2], ctimeNs: fields[3])
                sqlite3_result_int64(context, Int64(bitPattern: identity.digest.bits))
            }, nil, nil, nil)
        guard rc == SQLITE_OK else { throw db.error(rc, "syncbadge_identity_digest") }
    }

    // MARK: Roots and generations

    public func roots() throws -> [StoredRoot] {
        try db.withLock { db in
            let s = try db.cached("SELECT path, ignoreDefaults FROM root ORDER BY id")
            var roots: [StoredRoot] = []
            while try s.step() { roots.append(StoredRoot(path: Array(s.blob(0)), ignoreDefaults: s.int(1) != 0)) }
            return roots
        }
    }

    public func addRoot(_ root: StoredRoot) throws {
        try db.withLock { db in
            try db.transaction {
                let s = try db.cached("INSERT INTO root (path, ignoreDefaults, addedAt) VALUES (?, ?, CURRENT_TIMESTAMP) ON CONFLICT(path) DO UPDATE SET ignoreDefaults = excluded.ignoreDefaults")
                s.bind(blob: 1, root.path)
                s.bind(2, root.ignoreDefaults)
                try s.run()
            }
        }
    }

    public func removeRoot(_ path: [UInt8]) throws {
        try db.withLock { db in
            try db.transaction {
                let s = try db.cached("DELETE FROM root WHERE path = ?")
                s.bind(blob: 1, path)
                try s.run()
            }
        }
    }

    /// The last generation handed out, so generations keep growing across restarts.
    public func lastGen() throws -> UInt64 {
        try db.withLock { db in
            try UInt64(bitPattern: db.int("SELECT value FROM meta WHERE key = 'lastGen'") ?? 0)
        }
    }
}

import CSQLite

/// An SQLite failure: its extended result code, SQLite's message, and the statement.
public struct StoreError: Error, CustomStringConvertible, Sendable {
    /// SQLite's extended result code (`SQLITE_IOERR_FSYNC`, ...).
    public let code: Int32
    public let message: String
    public let sql: String?

    /// The primary result code (`SQLITE_CORRUPT`, `SQLITE_NOTADB`, `SQLITE_FULL`, ...).
    public var primaryCode: Int32 { code & 0xFF }

    public var description: String {
        "SQLite error \(code): \(message)" + (sql.map { " - while executing `\($0)`" } ?? "")
    }
}

/// `SQLITE_TRANSIENT`: SQLite copies a bound buffer before the call returns. The C macro is a
/// cast that Swift does not import.
private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// One connection to SQLite: not thread-safe by itself (opened `SQLITE_OPEN_NOMUTEX`); `Store`
/// keeps it in a `Mutex`, so one thread at a time uses it, which is what SQLite's multi-thread
/// mode asks.
final class Database {
    let handle: OpaquePointer
    /// Prepared once per connection: the group commit runs the same few statements per batch.
    private var cache: [String: Statement] = [:]

    init(path: String) throws {
        var h: OpaquePointer?
        let rc = sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let h else {
            let message = h.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(path)"
            sqlite3_close_v2(h)
            throw StoreError(code: rc, message: message, sql: nil)
        }
        handle = h
        sqlite3_extended_result_codes(h, 1)
    }

    deinit {
        for statement in cache.values { statement.finalize() }
        sqlite3_close_v2(handle)
    }

    func error(_ code: Int32, _ sql: String?) -> StoreError {
        StoreError(code: sqlite3_extended_errcode(handle) == SQLITE_OK ? code : sqlite3_extended_errcode(handle),
                   message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }

    /// Runs one or more statements that return nothing the caller reads.
    func execute(_ sql: String) throws {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc, sql) }
    }

    func prepare(_ sql: String) throws -> Statement {
        var s: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, 0, &s, nil)
        guard rc == SQLITE_OK, let s else { throw error(rc, sql) }
        return Statement(s, database: self, sql: sql)
    }

    /// A statement prepared on first use and kept, reset and cleared for this use.
    func cached(_ sql: String) throws -> Statement {
        if let s = cache[sql] {
            s.reset()
            return s
        }
        let s = try prepare(sql)
        cache[sql] = s
        return s
    }

    /// `body` in one write transaction, rolled back when it throws or when the commit fails
    /// (a full disk): nothing lands half-way.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            if sqlite3_get_autocommit(handle) == 0 { try? execute("ROLLBACK") }
            throw error
        }
    }

    /// The first column of the first row, as an integer; nil for no row or NULL.
    func int(_ sql: String, _ bind: (Statement) -> Void = { _ in }) throws -> Int64? {
        let s = try cached(sql)
        // Reset after reading: a statement left at a row holds a read snapshot open.
        defer { s.reset() }
        bind(s)
        guard try s.step() else { return nil }
        return s.isNull(0) ? nil : s.int(0)
    }

    /// The first column of the first row, as text.
    func text(_ sql: String) throws -> String? {
        let s = try cached(sql)
        defer { s.reset() }
        guard try s.step() else { return nil }
        return s.text(0)
    }

    /// The names of a table's columns.
    func columns(in table: String) throws -> [String] {
        let s = try prepare("SELECT name FROM pragma_table_info(?) ORDER BY cid")
        defer { s.finalize() }
        s.bind(1, table)
        var names: [String] = []
        while try s.step() { names.append(s.text(0) ?? "") }
        return names
    }
}

/// A prepared statement: bind by 1-based index, step, read columns by 0-based index.
final class Statement {
    private var handle: OpaquePointer?
    // Unowned: a statement never outlives its database, which finalizes the cached ones.
    private unowned let database: Database
    let sql: String

    init(_ handle: OpaquePointer, database: Database, sql: String) {
        self.handle = handle
        self.database = database
        self.sql = sql
    }

    deinit { finalize() }

    func finalize() {
        if let h = handle { sqlite3_finalize(h) }
        handle = nil
    }

    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    func bind(_ i: Int32, _ v: Int64) { sqlite3_bind_int64(handle, i, v) }
    func bind(_ i: Int32, _ v: Int64?) {
        if let v { sqlite3_bind_int64(handle, i, v) } else { sqlite3_bind_null(handle, i) }
    }
    func bind(_ i: Int32, _ v: Bool) { sqlite3_bind_int64(handle, i, v ? 1 : 0) }
    func bind(_ i: Int32, _ v: String?) {
        guard let v else { sqlite3_bind_null(handle, i); return }
        v.withCString { _ = sqlite3_bind_text(handle, i, $0, -1, transient) }
    }
    /// A blob; an empty one as a zero-length blob, not NULL (the root's own entry has path '').
    func bind<C: Collection<UInt8>>(blob i: Int32, _ bytes: C) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { b in
            if b.isEmpty {
                sqlite3_bind_zeroblob(handle, i, 0)
            } else {
                sqlite3_bind_blob(handle, i, b.baseAddress, Int32(b.count), transient)
            }
        }
        if done == nil { bind(blob: i, Array(bytes)) }
    }

    /// Runs the statement to its next row: true at a row, false when done.
    @discardableResult
    func step() throws -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let rc:
            // The statement's own error; reset so that a cached statement does not keep it.
            let e = database.error(rc, sql)
            sqlite3_reset(handle)
            throw e
        }
    }

    /// Runs a statement that returns no row.
    func run() throws {
        while try step() {}
    }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    func int(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    func text(_ column: Int32) -> String? {
        guard let p = sqlite3_column_text(handle, column) else { return nil }
        return String(decoding: UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(handle, column))), as: UTF8.self)
    }
    /// A blob column in SQLite's own buffer, valid until the next step or reset. The pointer is
    /// asked before the length, as SQLite requires; an empty blob has a nil pointer.
    func blob(_ column: Int32) -> UnsafeRawBufferPointer {
        let p = sqlite3_column_blob(handle, column)
        return UnsafeRawBufferPointer(start: p, count: Int(sqlite3_column_bytes(handle, column)))
    }
}

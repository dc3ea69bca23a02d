/// A root's stored entries as the store reads them at start: paths relative to the root, back
/// to back in one buffer, in byte order (so a directory comes before everything under it). One
/// allocation per column rather than one array per row: a million entries are restored without a
/// million small arrays (PERFORMANCE.md, "Start-up").
public struct StoredEntries: Sendable, RandomAccessCollection {
    public struct Entry: Sendable {
        public var relativePath: ArraySlice<UInt8>
        public var record: EntryRecord
    }

    var pathBytes: [UInt8] = []
    /// Where each path ends in `pathBytes`; it starts where the previous one ends.
    var pathEnds: [Int] = []
    var records: [EntryRecord] = []
    /// The bytes of every path's last component: what the tree's name buffer needs.
    var nameBytes = 0

    public init() {}

    public init(_ entries: [(relativePath: [UInt8], record: EntryRecord)]) {
        for e in entries { append(relativePath: e.relativePath, record: e.record) }
    }

    public mutating func reserveCapacity(_ n: Int) {
        pathEnds.reserveCapacity(n)
        records.reserveCapacity(n)
        pathBytes.reserveCapacity(n * 16)
    }

    public mutating func append(relativePath: some Sequence<UInt8>, record: EntryRecord) {
        let start = pathBytes.count
        pathBytes.append(contentsOf: relativePath)
        appended(from: start, record: record)
    }

    /// The same for bytes in place (SQLite's buffer at start): one copy, not a generic
    /// iteration per byte across the module boundary.
    public mutating func append(relativePath: UnsafeRawBufferPointer, record: EntryRecord) {
        let start = pathBytes.count
        pathBytes.append(contentsOf: relativePath)
        appended(from: start, record: record)
    }

    private mutating func appended(from start: Int, record: EntryRecord) {
        var nameStart = pathBytes.count
        while nameStart > start && pathBytes[nameStart - 1] != PathBytes.slash { nameStart -= 1 }
        nameBytes += pathBytes.count - nameStart
        pathEnds.append(pathBytes.count)
        records.append(record)
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { records.count }

    public subscript(i: Int) -> Entry {
        Entry(relativePath: relativePath(i), record: records[i])
    }

    public func relativePath(_ i: Int) -> ArraySlice<UInt8> {
        pathBytes[(i == 0 ? 0 : pathEnds[i - 1])..<pathEnds[i]]
    }
}

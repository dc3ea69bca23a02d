/// What must be written to durable storage since the last drain.
public struct StoreChanges: Sendable {
    public struct Upsert: Sendable {
        public var root: [UInt8]
        /// Below the root, `/`-separated; empty for the root itself.
        public var relativePath: ArraySlice<UInt8>
        public var record: EntryRecord

        public init(root: [UInt8], relativePath: ArraySlice<UInt8>, record: EntryRecord) {
            self.root = root
            self.relativePath = relativePath
            self.record = record
        }

        public init(root: [UInt8], relativePath: [UInt8], record: EntryRecord) {
            self.init(root: root, relativePath: relativePath[...], record: record)
        }
    }

    /// The upserts of a batch, their paths back to back in one buffer and each root once: not
    /// an array per path. A registration's batch of 110,000 paths, allocated on the event loop
    /// and freed by the store's thread, left a 7 MB hole its arena could not give back
    /// (PERFORMANCE.md, "Memory per entry"); one buffer this size is mapped and unmapped whole.
    public struct Upserts: RandomAccessCollection, ExpressibleByArrayLiteral, Sendable {
        struct Row: Sendable {
            var root: Int32
            var pathEnd: Int
            var record: EntryRecord
        }

        var roots: [[UInt8]] = []
        var rows: [Row] = []
        var pathBytes: [UInt8] = []

        public init() {}

        public init(arrayLiteral elements: Upsert...) {
            for e in elements { append(e) }
        }

        public var startIndex: Int { 0 }
        public var endIndex: Int { rows.count }

        public subscript(i: Int) -> Upsert {
            let row = rows[i]
            let start = i == 0 ? 0 : rows[i - 1].pathEnd
            return Upsert(root: roots[Int(row.root)], relativePath: pathBytes[start..<row.pathEnd], record: row.record)
        }

        public mutating func append(_ u: Upsert) {
            append(root: u.root, record: u.record) { $0.append(contentsOf: u.relativePath) }
        }

        /// One row; `writePath` appends its relative path to the shared buffer.
        mutating func append(root: [UInt8], record: EntryRecord, writePath: (inout [UInt8]) -> Void) {
            // Batches name few roots, mostly the one of the row before.
            let r: Int
            if let last = rows.last, roots[Int(last.root)] == root {
                r = Int(last.root)
            } else if let known = roots.firstIndex(of: root) {
                r = known
            } else {
                r = roots.count
                roots.append(root)
            }
            writePath(&pathBytes)
            rows.append(Row(root: Int32(r), pathEnd: pathBytes.count, record: record))
        }

        mutating func reserveRows(_ n: Int) { rows.reserveCapacity(n) }

        public mutating func removeAll(where drop: (Upsert) -> Bool) {
            // A kept batch of a whole registration is copied only when it has rows to drop.
            guard contains(where: drop) else { return }
            var kept = Upserts()
            for u in self where !drop(u) { kept.append(u) }
            self = kept
        }
    }

    /// An entry and everything below it.
    public struct Deletion: Sendable {
        public var root: [UInt8]
        public var relativePath: [UInt8]

        public init(root: [UInt8], relativePath: [UInt8]) {
            self.root = root
            self.relativePath = relativePath
        }
    }

    /// A `syncing` held by a lease (protocol 1.2, `lease`): its wall-clock deadline, or nil
    /// when the lease ended. Kept beside the entry, not in it: leases are few, entries many.
    public struct Lease: Sendable, Equatable {
        public var root: [UInt8]
        public var relativePath: [UInt8]
        /// Milliseconds since the Unix epoch; nil: the lease is gone.
        public var untilMs: Int64?

        public init(root: [UInt8], relativePath: [UInt8], untilMs: Int64?) {
            self.root = root
            self.relativePath = relativePath
            self.untilMs = untilMs
        }
    }

    public init() {}

    /// Applied first, so that an entry deleted and re-created in one batch ends up stored.
    public var deletions: [Deletion] = []
    public var upserts = Upserts()
    /// Applied after the upserts, in order.
    public var leases: [Lease] = []
    public var lastGen: UInt64 = 0

    public var isEmpty: Bool { deletions.isEmpty && upserts.isEmpty && leases.isEmpty }
}

/// Persistence support: the tree says what changed; the store writes it.
extension StateTree {
    /// The path below its root, `/`-separated (empty for a root).
    public func relativePath(_ id: NodeID) -> [UInt8] {
        var out: [UInt8] = []
        var chain: [NodeID] = []
        appendRelativePath(id, to: &out, chain: &chain)
        return out
    }

    /// The same, appended to `out`; `chain` is scratch space the caller keeps.
    func appendRelativePath(_ id: NodeID, to out: inout [UInt8], chain: inout [NodeID]) {
        chain.removeAll(keepingCapacity: true)
        var cur = id
        while nodes[Int(cur)].parent >= 0 {
            chain.append(cur)
            cur = nodes[Int(cur)].parent
        }
        for (k, n) in chain.reversed().enumerated() {
            if k > 0 { out.append(PathBytes.slash) }
            out.append(contentsOf: nameSlice(n))
        }
    }

    public var hasStoreChanges: Bool { !storeLog.isEmpty }

    public mutating func drainStoreChanges() -> StoreChanges {
        let (dirty, deleted) = storeLog.drain()
        var changes = StoreChanges()
        changes.deletions = deleted
        changes.upserts.reserveRows(dirty.count)
        var chain: [NodeID] = []
        for id in dirty where nodes[Int(id)].live {
            guard let r = rootIndex(of: id) else { continue }
            changes.upserts.append(root: roots[r].path, record: nodes[Int(id)].record) {
                appendRelativePath(id, to: &$0, chain: &chain)
            }
        }
        changes.lastGen = lastGen
        return changes
    }

    /// A root being rebuilt from stored entries that come in chunks, so that the store can read
    /// the next chunk while the tree takes this one (`Roots.restore`).
    public struct Restore: Sendable {
        let root: NodeID
        /// The directories from the root down to the last one restored: each one's relative
        /// path is a prefix of `chainPath`, `end` bytes long. In byte order an entry's parent
        /// is nearly always on this chain: no split, no lookup from the root, no hashing. The
        /// path is a copy, not a place in a chunk, because the chain outlives its chunk.
        var chainPath: [UInt8] = []
        var chain: [(end: Int, node: NodeID)]
        var added: [NodeID] = []
        var maxGen: UInt64

        mutating func setChainPath(_ path: ArraySlice<UInt8>) {
            chainPath.removeAll(keepingCapacity: true)
            chainPath.append(contentsOf: path)
        }

        init(root: NodeID, gen: UInt64, entries: Int) {
            self.root = root
            chain = [(0, root)]
            maxGen = gen
            added.reserveCapacity(entries)
        }
    }

    /// Starts a root's restore. `entries`, how many are stored, only sizes the reservations.
    /// Until `finishRestore`, the root's counts are not filled in: nothing may read the tree.
    public mutating func beginRestore(path: [UInt8], rules: IgnoreRules, entries: Int) -> Restore {
        storeLog.recording = false
        // Only the root's name is known yet; each chunk reserves its own names.
        reserve(nodes: entries + 1, nameBytes: path.count)
        let rootID = allocate(parent: -1, name: path, record: EntryRecord(kind: .dir, state: .unknown, gen: lastGen))
        roots.append(Root(node: rootID, path: path, rules: rules))
        storeLog.recording = true
        return Restore(root: rootID, gen: lastGen, entries: entries)
    }

    /// Adds the next chunk of a root's entries, in byte order after the chunks before it.
    public mutating func restore(_ entries: StoredEntries, into r: inout Restore) {
        storeLog.recording = false
        defer { storeLog.recording = true }
        reserve(nodes: entries.count, nameBytes: entries.nameBytes)
        let bytes = entries.pathBytes
        var start = 0
        for i in entries.indices {
            let end = entries.pathEnds[i]
            defer { start = end }
            let record = entries.records[i]
            r.maxGen = max(r.maxGen, record.gen)
            guard end > start else {  // the root's own row
                nodes[Int(r.root)].record = record
                continue
            }
            var nameStart = end
            while nameStart > start && bytes[nameStart - 1] != PathBytes.slash { nameStart -= 1 }
            let parentLength = nameStart > start ? nameStart - 1 - start : 0  // the parent's path: start..<start+parentLength
            // Drop chain entries that are not an ancestor directory of this path.
            while r.chain.count > 1 {
                let len = r.chain[r.chain.count - 1].end
                if len <= parentLength && (len == parentLength || bytes[start + len] == PathBytes.slash)
                    && r.chainPath[0..<len].elementsEqual(bytes[start..<(start + len)]) { break }
                r.chain.removeLast()
            }
            var parent = r.chain[r.chain.count - 1].node
            let known = r.chain[r.chain.count - 1].end
            if known < parentLength {
                // An ancestor the chain left behind (`a`, `a b`, `a/x`): look the rest up.
                var ok = true
                var k = start + known + (known == 0 ? 0 : 1)
                let parentEnd = start + parentLength
                while k < parentEnd {
                    var j = k
                    while j < parentEnd && bytes[j] != PathBytes.slash { j += 1 }
                    if j > k {
                        guard let c = child(parent, bytes[k..<j]) else { ok = false; break }
                        parent = c
                        // On the chain again, so its next children need no lookup.
                        r.setChainPath(bytes[start..<j])
                        r.chain.append((j - start, c))
                    }
                    k = j + 1
                }
                guard ok else { continue }  // its parent was not stored: nothing to hang it on
            }
            let id = allocate(parent: parent, name: bytes[nameStart..<end], record: record)
            r.added.append(id)
            if record.kind == .dir {
                r.setChainPath(bytes[start..<end])
                r.chain.append((end - start, id))
            }
        }
    }

    /// Ends a root's restore: every entry's counts into its ancestors.
    public mutating func finishRestore(_ r: Restore) {
        // Bottom-up: every entry was added after its parent.
        for id in r.added.reversed() {
            addCounts(nodes[Int(id)].parent, contribution(id))
        }
        lastGen = max(lastGen, r.maxGen)
        _ = drainChanges()
    }
}

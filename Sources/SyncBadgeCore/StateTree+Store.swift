/// What must be written to durable storage since the last drain.
public struct StoreChanges: Sendable {
    public struct Upsert: Sendable {
        public var root: [UInt8]
        /// Below the root, `/`-separated; empty for the root itself.
        public var relativePath: [UInt8]
        public var record: EntryRecord

        public init(root: [UInt8], relativePath: [UInt8], record: EntryRecord) {
            self.root = root
            self.relativePath = relativePath
            self.record = record
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

    public init() {}

    /// Applied first, so that an entry deleted and re-created in one batch ends up stored.
    public var deletions: [Deletion] = []
    public var upserts: [Upsert] = []
    public var lastGen: UInt64 = 0

    public var isEmpty: Bool { deletions.isEmpty && upserts.isEmpty }
}

/// Persistence support: the tree says what changed; the store writes it.
extension StateTree {
    /// The path below its root, `/`-separated (empty for a root).
    public func relativePath(_ id: NodeID) -> [UInt8] {
        var out: [UInt8] = []
        for c in relativeComponents(id) {
            if !out.isEmpty { out.append(PathBytes.slash) }
            out.append(contentsOf: c)
        }
        return out
    }

    public var hasStoreChanges: Bool { !storeDirty.isEmpty || !storeDeleted.isEmpty }

    public mutating func drainStoreChanges() -> StoreChanges {
        var changes = StoreChanges()
        changes.deletions = storeDeleted
        changes.upserts.reserveCapacity(storeDirty.count)
        for id in storeDirty where nodes[Int(id)].live {
            guard let r = rootIndex(of: id) else { continue }
            changes.upserts.append(.init(root: roots[r].path, relativePath: relativePath(id), record: nodes[Int(id)].record))
        }
        changes.lastGen = lastGen
        storeDirty.removeAll(keepingCapacity: false)
        storeDeleted.removeAll()
        return changes
    }

    /// Rebuilds a root from stored entries (root first, parents before children, as sorted
    /// paths are). Nothing is recorded for the store or for pushes.
    public mutating func restoreRoot(path: [UInt8], entries: [(relativePath: [UInt8], record: EntryRecord)], rules: IgnoreRules) {
        recordsForStore = false
        defer { recordsForStore = true }
        let rootRecord = entries.first { $0.relativePath.isEmpty }?.record ?? EntryRecord(kind: .dir, state: .unknown, gen: lastGen)
        // Each stored path's last component is its node's name.
        let nameBytes = entries.reduce(0) { total, e in
            total + e.relativePath.count - ((e.relativePath.lastIndex(of: PathBytes.slash) ?? -1) + 1)
        }
        reserve(nodes: entries.count + 1, nameBytes: path.count + nameBytes)
        let rootID = allocate(parent: -1, name: path, record: rootRecord)
        roots.append(Root(node: rootID, path: path, rules: rules))
        var added: [NodeID] = []
        for e in entries where !e.relativePath.isEmpty {
            var parent = rootID
            let comps = e.relativePath.split(separator: PathBytes.slash, omittingEmptySubsequences: true)
            var ok = true
            for c in comps.dropLast() {
                guard let child = child(parent, c) else { ok = false; break }
                parent = child
            }
            guard ok, let last = comps.last else { continue }
            let name = Array(last)
            let id = allocate(parent: parent, name: name, record: e.record)
            added.append(id)
        }
        // Counts bottom-up: every entry was added after its parent.
        for id in added.reversed() {
            let c = contribution(id)
            addCounts(nodes[Int(id)].parent, c)
        }
        lastGen = max(lastGen, entries.map(\.record.gen).max() ?? 0)
        _ = drainChanges()
    }
}

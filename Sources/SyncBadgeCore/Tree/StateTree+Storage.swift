/// How the tree keeps its nodes compact (PERFORMANCE.md, "Memory per entry"): no per-entry
/// heap object and no per-directory dictionary.
///
/// - Names are interned in one byte arena (`names`); a node holds an offset and a length.
///   Freed names are holes, and the arena is compacted once the holes are half of it, so
///   churn cannot grow it without bound.
/// - Children are found through one open-addressing table for the whole tree, keyed by
///   (parent, name) and holding only the child's id; the key is read back from the node.
/// - A directory's children are enumerated through a doubly linked sibling list (its first
///   child in its `DirData`, `next`/`prev` in each node), so unlinking is O(1).
extension StateTree {
    static let emptySlot: NodeID = -1
    static let deletedSlot: NodeID = -2

    // MARK: Names

    func nameRange(_ id: NodeID) -> Range<Int> {
        let n = nodes[Int(id)]
        return Int(n.nameStart)..<Int(n.nameStart) + Int(n.nameCount)
    }

    public func name(_ id: NodeID) -> [UInt8] { Array(names[nameRange(id)]) }

    /// A child's path from its parent's, straight from the arena (no copy of the name).
    public func childPath(_ child: NodeID, under parentPath: [UInt8]) -> [UInt8] {
        PathBytes.join(parentPath, nameSlice(child))
    }

    /// A view into the arena: keep it short-lived, since it pins the arena (an append while one
    /// is alive copies the whole arena).
    func nameSlice(_ id: NodeID) -> ArraySlice<UInt8> { names[nameRange(id)] }

    func nameEquals(_ id: NodeID, _ other: ArraySlice<UInt8>) -> Bool {
        let r = nameRange(id)
        guard r.count == other.count else { return false }
        return PathBytes.same(names[r], other)
    }

    func nameLess(_ a: NodeID, _ b: NodeID) -> Bool {
        names[nameRange(a)].lexicographicallyPrecedes(names[nameRange(b)])
    }

    mutating func storeName(_ name: ArraySlice<UInt8>) -> (start: UInt32, count: UInt16) {
        precondition(name.count <= Int(UInt16.max), "a path component longer than any file system allows")
        let start = names.count
        names.append(contentsOf: name)
        return (UInt32(start), UInt16(name.count))
    }

    /// Forgets a freed node's name (a hole until the next compaction).
    mutating func freeName(_ id: NodeID) {
        namesFree += Int(nodes[Int(id)].nameCount)
        nodes[Int(id)].nameStart = 0
        nodes[Int(id)].nameCount = 0
    }

    /// Compacts the arena once holes are half of it: called after a batch of frees, not
    /// per node, so freeing a big subtree compacts at most once.
    mutating func compactNamesIfSparse() {
        if namesFree >= 64 * 1024 && namesFree * 2 >= names.count {
            compactNames()
        }
    }

    mutating func compactNames() {
        var fresh: [UInt8] = []
        fresh.reserveCapacity(names.count - namesFree)
        for i in nodes.indices where nodes[i].live {
            let r = nameRange(NodeID(i))
            nodes[i].nameStart = UInt32(fresh.count)
            fresh.append(contentsOf: names[r])
        }
        names = fresh
        namesFree = 0
    }

    // MARK: The child table

    /// The child `name` of `parent`, tombstones included.
    func child(_ parent: NodeID, _ name: ArraySlice<UInt8>) -> NodeID? {
        guard !childTable.slots.isEmpty else { return nil }
        let mask = childTable.slots.count - 1
        var i = childTable.hash(parent, name) & mask
        while true {
            let c = childTable.slots[i]
            if c == Self.emptySlot { return nil }
            if c >= 0 && nodes[Int(c)].parent == parent && nameEquals(c, name) { return c }
            i = (i + 1) & mask
        }
    }

    func child(_ parent: NodeID, _ name: [UInt8]) -> NodeID? { child(parent, name[...]) }

    /// Makes room for `more` children without a rehash on the way (load factor at most 2/3:
    /// with linear probing and a mixing hash, about two probes to find a name).
    mutating func reserveSlots(_ more: Int) {
        let needed = (childTable.used + childTable.deleted + more) * 3 / 2
        guard needed > childTable.slots.count else { return }
        var capacity = max(childTable.slots.count, 16)
        // Mostly deleted slots: a rehash at the same size is enough. At most half full
        // afterwards, so the next rehash is a sixth of the table's links or frees away, never
        // one event away. (A third full, as before, doubled the table for 110,000 entries:
        // 19 B per entry where 10 do; PERFORMANCE.md, "Memory per entry".)
        while capacity < (childTable.used + more) * 2 { capacity *= 2 }
        rehash(capacity)
    }

    mutating func rehash(_ capacity: Int) {
        let old = childTable.slots
        childTable.slots = [NodeID](repeating: Self.emptySlot, count: capacity)
        childTable.deleted = 0
        let mask = capacity - 1
        for c in old where c >= 0 {
            var i = childTable.hash(nodes[Int(c)].parent, nameSlice(c)) & mask
            while childTable.slots[i] != Self.emptySlot { i = (i + 1) & mask }
            childTable.slots[i] = c
        }
    }

    /// Links a new node under its parent: into the child table and the parent's sibling list.
    mutating func link(_ id: NodeID) {
        let parent = nodes[Int(id)].parent
        reserveSlots(1)
        let mask = childTable.slots.count - 1
        var i = childTable.hash(parent, nameSlice(id)) & mask
        while childTable.slots[i] >= 0 { i = (i + 1) & mask }
        if childTable.slots[i] == Self.deletedSlot { childTable.deleted -= 1 }
        childTable.slots[i] = id
        childTable.used += 1
        let d = dirSlot(parent)
        let first = dirs[d].firstChild
        nodes[Int(id)].next = first
        nodes[Int(id)].prev = -1
        if first >= 0 { nodes[Int(first)].prev = id }
        dirs[d].firstChild = id
    }

    /// Takes a node out of the child table only: for the descendants of a detached node,
    /// whose sibling lists go with them.
    mutating func removeSlot(_ id: NodeID) {
        let parent = nodes[Int(id)].parent
        guard parent >= 0 else { return }
        let mask = childTable.slots.count - 1
        var i = childTable.hash(parent, nameSlice(id)) & mask
        while childTable.slots[i] != id {
            precondition(childTable.slots[i] != Self.emptySlot, "unlinking a node that is not linked")
            i = (i + 1) & mask
        }
        childTable.slots[i] = Self.deletedSlot
        childTable.used -= 1
        childTable.deleted += 1
    }

    /// Takes a node out of the child table and its parent's sibling list.
    mutating func unlink(_ id: NodeID) {
        let parent = nodes[Int(id)].parent
        guard parent >= 0 else { return }
        removeSlot(id)
        let (prev, next) = (nodes[Int(id)].prev, nodes[Int(id)].next)
        if prev >= 0 {
            nodes[Int(prev)].next = next
        } else {
            dirs[Int(nodes[Int(parent)].dir)].firstChild = next
        }
        if next >= 0 { nodes[Int(next)].prev = prev }
        nodes[Int(id)].prev = -1
        nodes[Int(id)].next = -1
    }

    /// A node's children (tombstones included), in no particular order.
    func childIDs(_ id: NodeID) -> [NodeID] {
        let d = nodes[Int(id)].dir
        guard d >= 0 else { return [] }
        var out: [NodeID] = []
        var c = dirs[Int(d)].firstChild
        while c >= 0 {
            out.append(c)
            c = nodes[Int(c)].next
        }
        return out
    }

    // MARK: Directory slots

    public func counts(_ id: NodeID) -> StateCounts {
        let d = nodes[Int(id)].dir
        return d < 0 ? StateCounts() : dirs[Int(d)].counts
    }

    func rollupCounts(_ id: NodeID) -> StateCounts {
        let d = nodes[Int(id)].dir
        return d < 0 ? StateCounts() : dirs[Int(d)].rollup
    }

    /// The node's slot in `dirs`, taken on first use.
    mutating func dirSlot(_ id: NodeID) -> Int {
        let d = nodes[Int(id)].dir
        if d >= 0 { return Int(d) }
        let slot: Int32
        if let reused = freeDirs.popLast() {
            slot = reused
        } else {
            dirs.append(DirData())
            slot = Int32(dirs.count - 1)
        }
        nodes[Int(id)].dir = slot
        return Int(slot)
    }

    mutating func addCounts(_ id: NodeID, _ t: Tally) {
        if nodes[Int(id)].dir < 0 && t == Tally() { return }
        let d = dirSlot(id)
        dirs[d].counts.add(t.own)
        dirs[d].rollup.add(t.roll)
    }

    /// Gives the node's slot back, when the node is freed.
    mutating func releaseDir(_ id: NodeID) {
        let d = nodes[Int(id)].dir
        guard d >= 0 else { return }
        dirs[Int(d)] = DirData()
        freeDirs.append(d)
        nodes[Int(id)].dir = -1
    }
}

/// What changed in a `StateTree` since the last `StateTree.drainChanges`, for the caller to turn
/// into pushes: each node touched with what a viewer saw of it before (in touch order), and each
/// path that went away. The tree records into it; it knows nothing of nodes but their ids.
struct TreeChangeLog: Sendable {
    /// Touched nodes → their view before the first touch (nil: viewers saw nothing of it).
    private(set) var before: [StateTree.NodeID: Item?] = [:]
    private(set) var order: [StateTree.NodeID] = []
    private(set) var removals: [StateTree.Removal] = []

    func isTouched(_ id: StateTree.NodeID) -> Bool { before[id] != nil }

    /// The first touch of a node in this batch (the caller asked `isTouched` first, so as to
    /// build the view only then), with what viewers saw of it then. One hash update, not a
    /// lookup and an insert: every event touches each of its ancestors.
    mutating func touched(_ id: StateTree.NodeID, before view: Item?) {
        let old = before.updateValue(view, forKey: id)
        assert(old == nil, "a node's view before the batch is recorded once")
        order.append(id)
    }

    /// A node created in this batch: viewers saw nothing of it before, whatever was recorded.
    mutating func created(_ id: StateTree.NodeID) {
        if before[id] == nil { order.append(id) }
        before[id] = .some(nil)
    }

    mutating func removed(_ removal: StateTree.Removal) {
        removals.append(removal)
    }

    /// Everything recorded, in touch order, then nothing.
    mutating func drain() -> (touched: [(id: StateTree.NodeID, before: Item?)], removals: [StateTree.Removal]) {
        var out: [(id: StateTree.NodeID, before: Item?)] = []
        out.reserveCapacity(order.count)
        for id in order {
            guard let b = before[id] else { continue }
            out.append((id, b))
        }
        let r = removals
        before.removeAll(keepingCapacity: true)
        order.removeAll(keepingCapacity: true)
        removals.removeAll(keepingCapacity: true)
        return (out, r)
    }
}

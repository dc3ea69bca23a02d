/// What a `StateTree` must still write to the store: nodes whose record changed, and subtrees
/// to delete. Drained into a `StoreChanges` by `StateTree.drainStoreChanges`.
struct StoreChangeLog: Sendable {
    private(set) var dirty = Set<StateTree.NodeID>()
    private(set) var deleted: [StoreChanges.Deletion] = []
    /// Off while restoring from the store: what is loaded needs no writing back.
    var recording = true

    var isEmpty: Bool { dirty.isEmpty && deleted.isEmpty }

    mutating func changed(_ id: StateTree.NodeID) {
        if recording { dirty.insert(id) }
    }

    /// A freed node: nothing of it is written (its subtree's deletion is recorded instead).
    mutating func freed(_ id: StateTree.NodeID) {
        dirty.remove(id)
    }

    mutating func deleted(_ deletion: StoreChanges.Deletion) {
        if recording { deleted.append(deletion) }
    }

    /// Everything recorded, then nothing. The dirty set's memory goes too: a registration
    /// makes it as big as the root, once.
    mutating func drain() -> (dirty: Set<StateTree.NodeID>, deleted: [StoreChanges.Deletion]) {
        defer {
            dirty.removeAll(keepingCapacity: false)
            deleted.removeAll()
        }
        return (dirty, deleted)
    }
}

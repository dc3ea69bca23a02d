import SyncBadgeCore

/// What holds `syncing` states after the SET that made them (PROTOCOL.md 1.2, "Released
/// states"): who holds each (its connection, a lease, or the hold after a restart:
/// `SyncingReleases`), the lease rows for the next group commit, and the one timer, for the
/// earliest lease or hold to run out. Its transitions read the tree for the rows' paths and
/// change nothing else: the hub releases what they return (`StateTree.releaseSyncing`), pushes
/// and commits.
struct HeldStates {
    var releases: SyncingReleases
    private(set) var leaseRows: [StoreChanges.Lease] = []
    /// At the wall-clock millisecond the earliest lease or hold runs out.
    var timer = Alarm<Int64>()

    init(holdMs: Int64) {
        releases = SyncingReleases(holdMs: holdMs)
    }

    /// The lease rows not stored yet, for the commit starting now.
    mutating func takeLeaseRows() -> [StoreChanges.Lease] {
        defer { leaseRows = [] }
        return leaseRows
    }

    /// A SET applied: `changed` are the entries it reached (a recursive one skips stale and
    /// ignored entries, which keep their holder), held now by its connection or a lease; any SET
    /// ends the lease or the restart hold they had. `dropped` are tombstones its `synced` removed,
    /// and whatever held them goes with them.
    mutating func set(_ changed: [StateTree.NodeID], dropped: [(StateTree.NodeID, [UInt8])], state: SyncState, by client: Int,
                      leaseMs: Int64?, nowMs: Int64, tree: inout StateTree) {
        for (node, path) in dropped where releases.dropped(node) != nil {
            guard let root = tree.root(containing: path)?.path, let rel = PathBytes.relativeComponents(path, under: root) else { continue }
            leaseRows.append(StoreChanges.Lease(root: root, relativePath: Array(rel.joined(separator: [PathBytes.slash])), untilMs: nil))
        }
        for change in releases.set(changed, state: state, by: client, leaseMs: leaseMs, nowMs: nowMs) { store(change, &tree) }
        // Paths that left `syncing` by a local change, or were removed, meanwhile.
        releases.prune { tree.isLive($0) && tree.record($0).state == .syncing }
    }

    /// At start, once the stored states are in: leases that ran out while the daemon was down
    /// are returned, to release now; the others are timed, and every other stored `syncing` is
    /// held for a while. Rows of leases on entries gone or no longer leased are dropped.
    mutating func restore(_ stored: [StoreChanges.Lease], nowMs: Int64, tree: inout StateTree) -> [StateTree.NodeID] {
        var leases: [StateTree.NodeID: Int64] = [:]
        for l in stored {
            let path = l.relativePath.isEmpty ? l.root : PathBytes.join(l.root, l.relativePath)
            if let id = tree.find(path), let until = l.untilMs {
                leases[id] = until
            } else {
                leaseRows.append(StoreChanges.Lease(root: l.root, relativePath: l.relativePath, untilMs: nil))
            }
        }
        let (expired, forget) = releases.restored(syncing: tree.syncingEntries(), leases: leases, nowMs: nowMs)
        for node in forget + expired { store(.init(node: node, untilMs: nil), &tree) }
        return expired
    }

    /// The timer fired: the leases that ran out and the holds that ended, to release now.
    mutating func fired(nowMs: Int64, tree: inout StateTree) -> (leased: [StateTree.NodeID], held: [StateTree.NodeID]) {
        let due = releases.fired(nowMs: nowMs)
        for (node, reason) in due where reason == .leaseRanOut { store(.init(node: node, untilMs: nil), &tree) }
        return (due.filter { $0.reason == .leaseRanOut }.map(\.node), due.filter { $0.reason == .providerDidNotComeBack }.map(\.node))
    }

    /// The root is removed: what held its entries, and its lease rows, go with them.
    mutating func rootRemoved(_ root: [UInt8], tree: inout StateTree) {
        releases.forget { !tree.isLive($0) }
        leaseRows.removeAll { $0.root == root }
    }

    /// A lease row for the next group commit.
    private mutating func store(_ change: SyncingReleases.LeaseChange, _ tree: inout StateTree) {
        guard tree.isLive(change.node), let root = tree.root(containing: tree.path(change.node))?.path else { return }
        leaseRows.append(StoreChanges.Lease(root: root, relativePath: tree.relativePath(change.node), untilMs: change.untilMs))
    }
}

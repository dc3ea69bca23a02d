import SyncBadgeCore

/// When a `syncing` ends without its provider saying so (protocol 1.1 and 1.2, "Released
/// states"): who holds each `syncing` and until when.
/// - a `syncing` set without a lease belongs to its connection, and is released when that
///   connection closes or unclaims the root;
/// - one set with `lease=` is released when the lease runs out (wall-clock time, stored, so it
///   survives a restart);
/// - one found stored at start without a lease is held for `holdAfterStart`, then released,
///   unless a provider reports on the path first.
/// Any later `SET` on the path ends what held it before. No I/O: the hub applies the
/// releases to the tree, stores the lease changes, and arms one timer for `nextDeadline`,
/// only while a lease or a hold is outstanding.
public struct SyncingReleases {
    typealias NodeID = StateTree.NodeID

    /// Why a `syncing` was released: its `message=`.
    enum Reason: Equatable {
        case providerGone(name: String)
        case unclaimed(name: String)
        case leaseRanOut
        case providerDidNotComeBack

        var message: String {
            switch self {
            case .providerGone(let name): "\(name) stopped before this finished syncing"
            case .unclaimed(let name): "\(name) gave up this root before this finished syncing"
            case .leaseRanOut: "the sync engine's lease ran out before it reported this path again"
            case .providerDidNotComeBack: "the sync engine did not report this path again after syncbadged restarted"
            }
        }
    }

    /// A lease to store (`untilMs`) or to forget (nil).
    struct LeaseChange: Equatable {
        var node: NodeID
        var untilMs: Int64?
    }

    /// The contract's 30 seconds.
    public static let defaultHoldMs: Int64 = 30_000

    let holdMs: Int64
    /// Connection id of each `syncing` set without a lease.
    private(set) var owners: [NodeID: Int] = [:]
    /// Wall-clock deadline (ms since the epoch) of each leased `syncing`.
    private(set) var leases: [NodeID: Int64] = [:]
    /// What was found `syncing` without a lease at start, and when the hold ends.
    private(set) var held: Set<NodeID> = []
    private(set) var holdUntilMs: Int64?
    /// `owners` is pruned of entries that left `syncing` once it doubles.
    private var prunedAt = 64

    init(holdMs: Int64 = SyncingReleases.defaultHoldMs) {
        self.holdMs = holdMs
    }

    /// The earliest deadline: a lease's or the hold's. Nil when there is none (no timer).
    var nextDeadlineMs: Int64? {
        let lease = leases.values.min()
        guard let hold = held.isEmpty ? nil : holdUntilMs else { return lease }
        return lease.map { min($0, hold) } ?? hold
    }

    // MARK: Events

    /// At start, after the stored states are loaded: the stored leases (those already run out
    /// are returned, to release now) and every other stored `syncing`, which is held.
    mutating func restored(syncing: [NodeID], leases stored: [NodeID: Int64], nowMs: Int64) -> (expired: [NodeID], forget: [NodeID]) {
        var expired: [NodeID] = []
        let syncingSet = Set(syncing)
        // Leases of entries no longer `syncing` (set otherwise, or gone) are stale rows.
        let forget = stored.keys.filter { !syncingSet.contains($0) }.sorted()
        for node in syncing {
            if let until = stored[node] {
                if until <= nowMs { expired.append(node) } else { leases[node] = until }
            } else {
                held.insert(node)
            }
        }
        if !held.isEmpty { holdUntilMs = nowMs + holdMs }
        return (expired.sorted(), forget)
    }

    /// A `SET` changed (or re-stated) these entries: whatever held them before ends, and a
    /// `syncing` gets its new holder. Returns the leases to store or forget.
    mutating func set(_ nodes: [NodeID], state: SyncState, by client: Int, leaseMs: Int64?, nowMs: Int64) -> [LeaseChange] {
        var changes: [LeaseChange] = []
        for node in nodes {
            held.remove(node)
            let hadLease = leases.removeValue(forKey: node) != nil
            owners.removeValue(forKey: node)
            if state == .syncing, let leaseMs {
                let until = nowMs + leaseMs
                leases[node] = until
                changes.append(LeaseChange(node: node, untilMs: until))
            } else {
                if state == .syncing { owners[node] = client }
                if hadLease { changes.append(LeaseChange(node: node, untilMs: nil)) }
            }
        }
        if held.isEmpty { holdUntilMs = nil }
        return changes
    }

    /// A tombstone's deletion was synced and the entry goes: nothing holds it any more. Its
    /// lease, if it had one, to forget.
    mutating func dropped(_ node: NodeID) -> LeaseChange? {
        owners.removeValue(forKey: node)
        held.remove(node)
        if held.isEmpty { holdUntilMs = nil }
        return leases.removeValue(forKey: node).map { _ in LeaseChange(node: node, untilMs: nil) }
    }

    /// A connection closed: the `syncing` it set without a lease, to release.
    mutating func connectionClosed(_ client: Int) -> [NodeID] {
        let mine = owners.filter { $0.value == client }.map(\.key).sorted()
        for node in mine { owners.removeValue(forKey: node) }
        return mine
    }

    /// `UNCLAIM`: the `syncing` this connection set without a lease under the root, to release.
    mutating func unclaimed(_ client: Int, under: (NodeID) -> Bool) -> [NodeID] {
        let mine = owners.filter { $0.value == client && under($0.key) }.map(\.key).sorted()
        for node in mine { owners.removeValue(forKey: node) }
        return mine
    }

    /// The timer fired: leases run out by `nowMs`, and, once the hold is over, what it held.
    /// Leases returned here are forgotten (their rows go with the release).
    mutating func fired(nowMs: Int64) -> [(node: NodeID, reason: Reason)] {
        var out: [(NodeID, Reason)] = leases.filter { $0.value <= nowMs }.keys.sorted().map { ($0, .leaseRanOut) }
        for (node, _) in out { leases.removeValue(forKey: node) }
        if let until = holdUntilMs, until <= nowMs {
            out += held.sorted().map { ($0, .providerDidNotComeBack) }
            held.removeAll()
            holdUntilMs = nil
        }
        return out
    }

    /// The entries removed from the tree (a root removed): nothing holds them any more. Their
    /// ids may be reused; lease rows go with their root.
    mutating func forget(where gone: (NodeID) -> Bool) {
        owners = owners.filter { !gone($0.key) }
        leases = leases.filter { !gone($0.key) }
        held = held.filter { !gone($0) }
        if held.isEmpty { holdUntilMs = nil }
    }

    /// Drops owners of entries that left `syncing` by a local change meanwhile, once the table
    /// has doubled since it was last pruned (releases skip them anyway).
    mutating func prune(stillSyncing: (NodeID) -> Bool) {
        guard owners.count > 2 * prunedAt else { return }
        owners = owners.filter { stillSyncing($0.key) }
        prunedAt = max(64, owners.count)
    }
}

import SyncBadgeCore

/// What holds `syncing` states after the SET that made them (PROTOCOL.md 1.2, "Released
/// states"): who holds each (its connection, a lease, or the hold after a restart:
/// `SyncingReleases`), the lease rows for the next group commit, and the one timer, for the
/// earliest lease or hold to run out.
struct HeldStates {
    var releases: SyncingReleases
    var leaseRows: [StoreChanges.Lease] = []
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
}

import NIOCore
import SyncBadgeCore

/// What waits for time or for another client: who holds each `syncing` and until when (its
/// connection, a lease, or the hold after a restart; protocol 1.2, "Released states"), the
/// answers awaited for `ACTION ... reply=1`, the lease rows for the next group commit, and
/// the timers. Each timer is armed only while something is outstanding.
struct Outstanding {
    var releases: SyncingReleases
    /// The releases' timer, and when it fires.
    var releaseTimer: (task: Scheduled<Void>, atMs: Int64)?
    var replies: ActionReplies
    var replyTimer: (task: Scheduled<Void>, at: NIODeadline)?
    var leaseRows: [StoreChanges.Lease] = []
    /// The retry of a failed group commit.
    var commitRetry: Scheduled<Void>?
    /// Set by `shutdown()`: nothing is armed any more, and connections closing release
    /// nothing (states are stored as they are and survive the restart).
    var shuttingDown = false
}

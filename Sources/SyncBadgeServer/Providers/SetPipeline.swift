import NIOCore
import SyncBadgeCore
import SyncBadgeStore

/// A provider's `SET`s on their way to being applied and made durable (PROTOCOL.md, "The state
/// rules"), as a state machine with no I/O: the hub feeds it events and performs what it
/// returns (ask the watcher for a barrier, apply a group of SETs, write batches to the store,
/// arm the retry timer).
///
/// - **Barrier.** Every watcher event already queued when a `SET` arrives is applied before
///   it, so a user's write that landed first bumps the gen and the `SET` comes back stale. SETs
///   that arrive while a barrier is out share the next one.
/// - **Settling.** A file just set `synced` had its identity recorded at the `SET`; a write
///   that landed between the barrier and that stat is already in the identity while its event
///   is still queued. Until one more barrier comes back, any event makes such a file pending
///   whatever its identity.
/// - **Group commit.** One store transaction at a time; SETs answered once a commit holding
///   their change is done. A failed transaction (a full disk) is kept and written again first,
///   by a timer with backoff (250 ms doubling to 30 s); new waiters also try at once.
///
/// `Group` is what the hub applies together (a client and its pipelined requests),
/// `Waiter` what it calls when a commit ends.
struct SetPipeline<Group, Waiter> {
    static var firstRetry: TimeAmount { .milliseconds(250) }
    static var longestRetry: TimeAmount { .seconds(30) }

    private var nextToken: UInt64 = 1
    private var waiting: [Group] = []
    private var atBarrier: [Group] = []
    private var outstanding: UInt64?
    /// Entries just set synced → the barrier that ends their settling window.
    private var settling: [StateTree.NodeID: UInt64] = [:]

    /// One transaction at a time: none, or one being written (`begin` to `finished`).
    private enum Transaction: Equatable {
        case idle
        case inFlight

        /// A second begin while one is written, or an end of none, is a bug in the caller.
        mutating func begin() {
            precondition(self == .idle, "a commit began while another was written")
            self = .inFlight
        }

        mutating func end() {
            precondition(self == .inFlight, "a commit ended that had not begun")
            self = .idle
        }
    }
    private var transaction = Transaction.idle
    /// New roots whose row is being stored: no group commit starts until it is (their `OK`
    /// goes first; the drain of 110,000 new entries alone takes 170 ms).
    private var rootRowsPending = 0
    private var waiters: [Waiter] = []
    /// Batches of a failed transaction, written again first.
    private var unstored: [StoreChanges] = []
    /// The retry of a failed transaction: none; due (`finished` said to arm it); armed (the
    /// hub's timer, kept here so that a stop can cancel it).
    private enum Retry {
        case none, due, armed(Scheduled<Void>)
    }
    private var retry = Retry.none
    private var retryDelay = Self.firstRetry
    /// Transactions started with something to write (`STATS commits`).
    private(set) var commits = 0
    /// Of those, the ones that ended, stored or not (`STATS commits-done`): equal to `commits`
    /// once nothing is being written.
    private(set) var commitsDone = 0

    // MARK: Barrier

    /// SETs arrived. Returns the barrier token to ask the watcher for, if one is due now.
    mutating func arrived(_ group: Group) -> UInt64? {
        waiting.append(group)
        return outstanding == nil ? takeWaiting() : nil
    }

    /// Moves what waits behind a new barrier; its token.
    private mutating func takeWaiting() -> UInt64? {
        guard !waiting.isEmpty else { return nil }
        let t = nextToken
        nextToken += 1
        outstanding = t
        atBarrier = waiting
        waiting = []
        return t
    }

    /// A barrier came back. When it is the SETs' barrier: the groups to apply now, in order,
    /// and the token of the next barrier if more SETs wait.
    mutating func barrierReached(_ token: UInt64) -> (apply: [Group], next: UInt64?)? {
        if !settling.isEmpty { settling = settling.filter { $0.value > token } }
        guard token == outstanding else { return nil }
        outstanding = nil
        let groups = atBarrier
        atBarrier = []
        return (groups, takeWaiting())
    }

    /// The groups the barrier `token` would hand over (`barrierReached`), without taking them.
    func groups(releasedBy token: UInt64) -> [Group]? {
        token == outstanding && !atBarrier.isEmpty ? atBarrier : nil
    }

    /// Entries just set synced start settling; returns the barrier token that ends it (to ask
    /// the watcher for), or nil when there are none.
    mutating func settle(_ nodes: [StateTree.NodeID]) -> UInt64? {
        guard !nodes.isEmpty else { return nil }
        let t = nextToken
        nextToken += 1
        for n in nodes { settling[n] = t }
        return t
    }

    /// Whether an event for this entry changes it whatever its identity says.
    func isSettling(_ node: StateTree.NodeID) -> Bool { settling[node] != nil }

    // MARK: Group commit

    /// A root's row is being stored / was stored.
    mutating func rootRowStarted() { rootRowsPending += 1 }
    mutating func rootRowStored() { rootRowsPending -= 1 }

    /// A commit is wanted: changes were made (`hasChanges`), or a waiter needs the next
    /// commit. True when the hub must start one now (`begin`).
    mutating func commitWanted(_ waiter: Waiter?, hasChanges: Bool) -> Bool {
        if let waiter { waiters.append(waiter) }
        return transaction == .idle && rootRowsPending == 0 && (hasChanges || !waiters.isEmpty || !unstored.isEmpty)
    }

    /// Starts a commit with the changes drained from the tree: the batches to write (the kept
    /// ones first) and whom to tell when it ends.
    mutating func begin(fresh: StoreChanges) -> (batches: [StoreChanges], waiters: [Waiter]) {
        let batches = unstored + (fresh.isEmpty ? [] : [fresh])
        let told = waiters
        waiters = []
        transaction.begin()
        if !batches.isEmpty { commits += 1 }
        return (batches, told)
    }

    enum AfterCommit: Equatable {
        /// Look for more changes now (`commitWanted(nil, …)`).
        case commitAgain
        /// Arm the retry timer; call `retryFired` when it does.
        case retry(after: TimeAmount)
        /// The retry timer is armed already: it will try.
        case waitForRetry
    }

    /// What a commit's end means for the store's health, for the log.
    enum Health: Equatable { case unchanged, failing, recovered }

    /// The commit of `batches` ended.
    mutating func finished(_ batches: [StoreChanges], succeeded: Bool) -> (next: AfterCommit, health: Health) {
        transaction.end()
        if !batches.isEmpty { commitsDone += 1 }
        var health = Health.unchanged
        if succeeded {
            if !unstored.isEmpty { health = .recovered }
            unstored = []
            retryDelay = Self.firstRetry
        } else {
            if unstored.isEmpty { health = .failing }
            unstored = batches
            if case .none = retry {
                retry = .due
                let delay = retryDelay
                retryDelay = min(retryDelay * 2, Self.longestRetry)
                return (.retry(after: delay), health)
            }
        }
        if case .none = retry { return (.commitAgain, health) }
        return (.waitForRetry, health)
    }

    /// A root was removed (or its first scan failed): batches kept from a failed commit no
    /// longer write anything of it, or the retry would store its entries, and with them its
    /// row, again.
    mutating func forgetRoot(_ path: [UInt8]) {
        for i in unstored.indices {
            unstored[i].upserts.removeAll { $0.root == path }
            unstored[i].deletions.removeAll { $0.root == path }
            // A lease row would store the root's row again (Store.write creates it).
            unstored[i].leases.removeAll { $0.root == path }
        }
    }

    /// The hub armed the retry timer `finished` asked for. Only then: a timer armed twice
    /// would retry twice.
    mutating func retryArmed(_ timer: Scheduled<Void>) {
        guard case .due = retry else {
            timer.cancel()
            return
        }
        retry = .armed(timer)
    }

    /// The retry timer fired: look for a commit to start (`commitWanted(nil, …)`).
    mutating func retryFired() {
        retry = .none
    }

    /// The daemon stops: the retry's wait ends now, so that the final commit does not wait for
    /// a timer that will never fire.
    mutating func cancelRetry() {
        if case .armed(let timer) = retry { timer.cancel() }
        retry = .none
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore
import NIOPosix
import SyncBadgeCore
import SyncBadgeStore
import SyncBadgeWatchEvents

/// The contract's times (PROTOCOL.md, 1.2), which tests may shorten.
struct Timers {
    /// How long a client waits for a provider's `ANSWER`.
    var answer = ActionReplies.defaultTimeout
    /// How long a `syncing` stored without a lease is held after a start.
    var restartHoldMs = SyncingReleases.defaultHoldMs
}

/// Wall-clock time in milliseconds since the Unix epoch: leases run in it, across restarts.
protocol WallClock: Sendable {
    func nowMs() -> Int64
}

struct SystemWallClock: WallClock {
    func nowMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}

/// The daemon's business logic: the state tree, roots, sessions and who observes what.
///
/// Everything here runs on one event loop, the one that serves every connection, so requests
/// and watcher events are applied one at a time without locks and a request sees every event
/// delivered before it. Slow work (scans, database writes) runs elsewhere and comes back
/// to this loop.
final class Engine {
    static let serverName = "syncbadge/\(SyncBadgeVersion.string)"
    /// Protocol 1.0's, then 1.1's and 1.2's (PROTOCOL.md, "Capabilities of version 1.1" and "1.2").
    static let capabilities = "observe,menus,changes,observe-nolist,roots-optout,badge-push,provider-address,action-reply,lease,unclaim,toolbar-push"

    let loop: EventLoop
    let logger: Logger
    let store: any StateStore
    /// The one thread that writes to the store.
    let storeRunner: any StoreRunner
    let files: any FileInspector
    var badges: [Badge]
    let epoch: String
    /// Paths the daemon writes itself (its state directory): ignored inside any root.
    let privatePaths: [[UInt8]]
    var watcher: (any WatcherControl)?

    var tree: StateTree
    /// The roots, their scans and claims (RootRegistry).
    var roots = RootRegistry<Session>()
    var sessions: [Int: Session] = [:]
    var nextSessionID = 1
    var observerIndex = ObserverIndex<Session>()
    var dirty: [Int: Session] = [:]
    /// Root path → connections subscribed to its change feed.
    var changeSubscribers: [[UInt8]: [Int: Session]] = [:]
    /// SETs behind their barrier, settling files, and the group commit (SetPipeline).
    var sets = SetPipeline<(Session, [WireRequest]), (Result<Void, Error>) -> Void>()
    var commitRetry: Scheduled<Void>?
    /// Who holds each `syncing` and until when: its connection, a lease, or the hold after a
    /// restart (protocol 1.2, "Released states").
    var releases: SyncingReleases
    /// Its timer, armed only while a lease or a hold is outstanding, and when it fires.
    var releaseTimer: (task: Scheduled<Void>, atMs: Int64)?
    /// Lease rows for the next group commit.
    var leaseRows: [StoreChanges.Lease] = []
    /// Answers awaited for `ACTION ... reply=1` (protocol 1.2), and their one timer.
    var replies: ActionReplies
    var replyTimer: (task: Scheduled<Void>, at: NIODeadline)?
    /// The providers' toolbar items, and which changes are pushed.
    var toolbars = ToolbarSet()
    /// Wall-clock time, for leases.
    let clock: any WallClock
    /// Scratch buffers of `fastStatus`, kept between requests so that it allocates nothing.
    var plainStatus = PlainStatus()
    /// The same for `LIST` and `OBSERVE`'s listings.
    var listOut: [UInt8] = []
    /// Set by `shutdown()`: connections closing then release nothing (states are stored as
    /// they are and survive the restart).
    var shuttingDown = false
    /// The stored root being restored at start, between its chunks (`restoreStoredRoots`).
    var restoring: StateTree.Restore?

    init(loop: EventLoop, store: any StateStore, storeRunner: any StoreRunner, files: any FileInspector = DiskFiles(),
         badges: [Badge], privatePaths: [[UInt8]], timers: Timers = Timers(), clock: any WallClock = SystemWallClock(),
         logger: Logger) throws {
        self.loop = loop
        self.store = store
        self.storeRunner = storeRunner
        self.files = files
        self.badges = badges
        self.privatePaths = privatePaths
        self.logger = logger
        self.replies = ActionReplies(timeout: timers.answer)
        self.releases = SyncingReleases(holdMs: timers.restartHoldMs)
        self.clock = clock
        self.epoch = String(UInt32.random(in: 0...UInt32.max), radix: 16).leftPadded(to: 8)
        self.tree = StateTree(lastGen: try store.lastGen())
    }

    /// Runs store I/O on the store thread; the result comes back on the event loop.
    func storeWork<T: Sendable>(_ body: @escaping @Sendable () throws -> T) -> EventLoopFuture<T> {
        storeRunner.run(on: loop, body)
    }

    func makeSessionID() -> Int {
        defer { nextSessionID += 1 }
        return nextSessionID
    }

    // MARK: Sessions and pushes

    func sessionOpened(_ s: Session) {
        sessions[s.id] = s
    }

    func sessionClosed(_ s: Session) {
        sessions.removeValue(forKey: s.id)
        dirty.removeValue(forKey: s.id)
        observerIndex.closed(s.id)
        for root in s.subscriptions {
            changeSubscribers[root]?.removeValue(forKey: s.id)
            if changeSubscribers[root]?.isEmpty == true { changeSubscribers.removeValue(forKey: root) }
        }
        // A provider's claims go with it; the states it set stay, but for `syncing`.
        for root in roots.closed(s) { pushRoot(root) }
        if let push = toolbars.closed(s.id) { pushToolbar(push) }
        // Answers it owed are `ERR no-provider`; answers it waited for are nobody's.
        sendReplies(replies.providerClosed(s.id))
        replies.clientClosed(s.id)
        armReplyTimer()
        releaseSyncing(of: s)
        flushDirty()
    }

    func markDirty(_ s: Session) {
        dirty[s.id] = s
    }

    func flushDirty() {
        for s in dirty.values { s.flush() }
        dirty.removeAll(keepingCapacity: true)
    }

    func writeReset(_ node: StateTree.NodeID, to s: Session) {
        var line = WireLine("*")
        line.word("RESET")
        line.field(tree.path(node))
        s.write(line)
    }

    /// Turns what changed in the tree into pushes: `GONE` for what disappeared, then `ITEM`
    /// for every entry whose visible state changed, to the observers of it and of its parent.
    func publishChanges() {
        let (changes, removals) = tree.drainChanges()
        for r in removals {
            var targets = observerIndex.observers(of: r.parent) ?? [:]
            if r.wasDirectory {
                for (id, s) in observerIndex.removed(r.node) {
                    targets[id] = s
                    s.backpressure.removed(r.node)
                }
            }
            guard !targets.isEmpty else { continue }
            var line = WireLine("*")
            line.word("GONE")
            line.field(r.path)
            for (id, s) in targets { s.push(line, .observed(observerIndex.isObserving(id, r.parent) ? r.parent : nil)) }
        }
        var rootsChanged: [[UInt8]] = []
        for c in changes {
            let rec = tree.record(c.node)
            guard rec.kind != .gone else { continue }
            let isRoot = tree.isRoot(c.node)
            let parentObs = c.parent >= 0 ? observerIndex.observers(of: c.parent) : nil
            let ownObs = rec.kind == .dir ? observerIndex.observers(of: c.node) : nil
            guard parentObs != nil || ownObs != nil || isRoot else { continue }
            let after = tree.view(c.node)
            if var before = c.before {
                before.gen = after.gen
                if before == after { continue }
            }
            // A new root was announced when it was added.
            if isRoot, let before = c.before, before.state != after.state { rootsChanged.append(after.path) }
            guard parentObs != nil || ownObs != nil else { continue }
            let line = after.wireLine(head: "*")
            var targets = parentObs ?? [:]
            if let ownObs { targets.merge(ownObs) { a, _ in a } }
            for s in targets.values {
                s.push(line, .observed(ownObs?[s.id] != nil ? c.node : c.parent))
            }
        }
        for p in rootsChanged { pushRoot(p) }
    }

    /// A badge as a `* BADGE` line, if it is defined.
    func badgeLine(_ id: String) -> WireLine? {
        badges.first { $0.id == id }?.wireLine(tag: "*")
    }

    /// Ends every connection with `* BYE shutdown`.
    func shutdown() {
        shuttingDown = true
        // The retry's wait ends now: the final commit at stop (Daemon.run) must not wait for a
        // timer that will never fire.
        if let retry = commitRetry {
            retry.cancel()
            commitRetry = nil
            sets.retryFired()
        }
        releaseTimer?.task.cancel()
        releaseTimer = nil
        replyTimer?.task.cancel()
        replyTimer = nil
        for s in sessions.values { s.bye("shutdown") }
    }
}

extension String {
    func leftPadded(to n: Int) -> String {
        count >= n ? self : String(repeating: "0", count: n - count) + self
    }
}

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

/// The daemon's business logic: the state tree, roots, clients and who observes what.
///
/// Everything here runs on one event loop, the one that serves every connection, so requests
/// and watcher events are applied one at a time without locks and a request sees every event
/// delivered before it. Slow work (scans, database writes) runs elsewhere and comes back
/// to this loop.
///
/// Data flows one way: the hub knows clients by id (Clients), appends what it has to say
/// to the outbox, and hands that to each connection at the end of a read or an event batch
/// (`deliver`); a connection hands lines in (`received`) and never reads the hub's state.
final class Hub {
    static let serverName = "syncbadge/\(SyncBadgeVersion.string)"
    /// Protocol 1.0's, then 1.1's and 1.2's (PROTOCOL.md, "Capabilities of version 1.1" and "1.2").
    static let capabilities = ["observe", "menus", "changes", "observe-nolist", "roots-optout", "badge-push", "provider-address",
                               "action-reply", "lease", "unclaim", "toolbar-push"]

    let loop: EventLoop
    let logger: Logger
    /// The edges: the store and its thread, the file system, the wall clock, the watcher.
    var ports: Ports
    /// The server's epoch, its private paths, and the badges.
    var settings: Settings
    var tree: StateTree
    /// The roots, their scans and claims (RootRegistry).
    var roots = RootRegistry()
    /// Every client by id: role, name, what it follows, its requests (Clients).
    var clients = Clients()
    /// Who follows which root's changes (ChangeFeed).
    var feed = ChangeFeed()
    /// What each client is to be sent (Outbox), and the connections it goes to (Delivery).
    var outbox = Outbox()
    var delivery = Delivery()
    /// SETs behind their barrier, settling files, and the group commit (SetPipeline).
    var sets = SetPipeline<SetGroup, (Result<Void, Error>) -> Void>()
    /// Protocol 1.2's held `syncing` states, their lease rows and their timer (HeldStates).
    var held: HeldStates
    /// Finder Sync's menus, toolbar items and the actions awaiting an answer (Menus).
    var menus: Menus
    /// Set by `shutdown()`: nothing is armed any more, and connections closing release
    /// nothing (states are stored as they are and survive the restart).
    var stopping = false
    /// Watcher events not applied yet, and the identities read for them (EventQueue).
    var ingest = EventQueue()
    /// Buffers of the answers built in place, kept between requests.
    var scratch = Scratch()

    /// The watcher, once it runs (the daemon starts it after the hub).
    var watcher: (any WatcherControl)? {
        get { ports.watcher }
        set { ports.watcher = newValue }
    }

    init(loop: EventLoop, store: any StateStore, storeThread: any WorkerThread, fileThread: any WorkerThread,
         files: any FileInspector = DiskFiles(), badges: [Badge], privatePaths: [[UInt8]], timers: Timers = Timers(),
         clock: any WallClock = SystemWallClock(), logger: Logger) throws {
        self.loop = loop
        self.logger = logger
        self.ports = Ports(store: store, storeThread: storeThread, fileThread: fileThread, files: files, clock: clock)
        self.held = HeldStates(holdMs: timers.restartHoldMs)
        self.menus = Menus(answerTimeout: timers.answer)
        self.settings = Settings(epoch: String(UInt32.random(in: 0...UInt32.max), radix: 16).leftPadded(to: 8), privatePaths: privatePaths, badges: badges)
        self.tree = StateTree(lastGen: try store.lastGen())
    }

    /// Runs store I/O on the store thread; the result comes back on the event loop.
    func storeWork<T: Sendable>(_ body: @escaping @Sendable () throws -> T) -> EventLoopFuture<T> {
        ports.storeThread.run(on: loop, body)
    }

    /// Runs file-system work (`lstat`, the ignore file) off the event loop; the result comes
    /// back on it.
    func fileWork<T: Sendable>(_ body: @escaping @Sendable () throws -> T) -> EventLoopFuture<T> {
        ports.fileThread.run(on: loop, body)
    }

    /// Reads the tree with the access held across the call. A method called on `tree` itself
    /// runs on a copy of it, a retain and a release of each of its arrays: a struct stored in a
    /// class is copied out unless nothing can change it during the call, which a call into
    /// Core does not prove, while nothing else may touch an `inout` one. The paths taken for
    /// every watcher event, SET and push read it here (PERFORMANCE.md, "Session 13"). `body`
    /// must not use `self.tree`.
    func withTree<T>(_ body: (inout StateTree) -> T) -> T { body(&tree) }

    // MARK: Clients and their output

    /// A connection opened: its output goes to `connection`. Returns its client id.
    func opened(peerPID: Int32, connection: any ClientConnection) -> Clients.ID {
        let id = clients.opened(peerPID: peerPID)
        outbox.open(id)
        delivery.connections[id] = connection
        return id
    }

    func closed(_ id: Clients.ID) {
        delivery.connections.removeValue(forKey: id)
        outbox.closed(id)
        guard let client = clients.closed(id) else { return }
        feed.closed(id)
        // A provider's claims go with it; the states it set stay, but for `syncing`.
        for root in roots.closed(id) { pushRoot(root) }
        // Its menus and toolbar item go; answers it owed are `ERR no-provider`, answers it
        // waited for are nobody's.
        let (toolbar, owed) = menus.closed(id)
        if let toolbar { pushToolbar(toolbar) }
        sendReplies(owed)
        armReplyTimer()
        if client.role == .provider { releaseSyncing(of: id, name: client.name) }
        deliver()
    }

    /// Hands each connection what the outbox holds for it, and closes those told `BYE`.
    func deliver() {
        // A write that fails closes its connection, which comes back here (`closed`); what
        // that adds is handed over by this loop.
        guard !delivery.busy else { return }
        delivery.busy = true
        defer { delivery.busy = false }
        while outbox.hasReady {
            outbox.takeReady(into: &delivery.batch)
            for id in delivery.batch {
                let (chunk, close) = outbox.take(id)
                guard let connection = delivery.connections[id] else { continue }
                if let chunk { connection.write(chunk) }
                if close { connection.close() }
            }
            delivery.batch.removeAll(keepingCapacity: true)
        }
    }

    /// A push: written, or for a slow reader dropped and made up for once it catches up
    /// (Backpressure). Every client gets `* ROOT` and `* BADGE`, so a client that never reads
    /// would otherwise hold them all.
    func push(_ line: WireLine, _ what: Backpressure.Push, to id: Clients.ID) {
        guard clients.admit(what, to: id, held: outbox.heldBytes(id)) else { return }
        outbox.write(id, line)
    }

    /// The client's connection takes output again, or stops taking it. Once it does, what it
    /// missed meanwhile is made up for.
    func writabilityChanged(_ id: Clients.ID, writable: Bool) {
        guard let client = clients[id], clients[id]?.writabilityChanged(writable) == true else { return }
        guard writable, client.backpressure.hasMissed else { return }
        var missed = client.backpressure
        let catchUp = missed.caughtUp(observing: { clients.observers.isObserving(id, $0) },
                                      subscribed: { feed.isSubscribed(id, to: $0) })
        clients[id]?.backpressure = missed
        for missed in catchUp {
            switch missed {
            case .root(let root): outbox.write(id, currentRootLine(root).wireLine(head: "*"))
            case .badge(let badge): if let line = badgeLine(badge) { outbox.write(id, line) }
            case .toolbar(let name): outbox.write(id, menus.toolbars.current(named: name).toolbar.wireLine(head: "*"))
            case .reset(let node): writeReset(node, to: id)
            case .resetChanges(let root): outbox.write(id, ResetChanges(root).wireLine(head: "*"))
            }
        }
        deliver()
    }

    /// `* BYE <reason>`, then the connection closes.
    func bye(_ id: Clients.ID, _ reason: String) {
        guard clients.isActive(id) else { return }
        outbox.write(id, Bye(reason).wireLine(head: "*"))
        close(id)
    }

    /// Answers nothing more, and closes once what is held is written.
    func close(_ id: Clients.ID) {
        guard clients[id]?.close() == true else { return }
        outbox.close(id)
    }

    func writeReset(_ node: StateTree.NodeID, to id: Clients.ID) {
        outbox.write(id, Reset(tree.path(node)).wireLine(head: "*"))
    }

    /// Turns what changed in the tree into pushes: `GONE` for what disappeared, then `ITEM`
    /// for every entry whose visible state changed, to the observers of it and of its parent.
    func publishChanges() {
        let (changes, removals) = tree.drainChanges()
        for r in removals {
            var targets = clients.observers.observers(of: r.parent) ?? []
            if r.wasDirectory {
                for id in clients.observers.removed(r.node) {
                    targets.insert(id)
                    clients[id]?.backpressure.removed(r.node)
                }
            }
            guard !targets.isEmpty else { continue }
            let line = Gone(r.path).wireLine(head: "*")
            for id in targets { push(line, .observed(clients.observers.isObserving(id, r.parent) ? r.parent : nil), to: id) }
        }
        var rootsChanged: [[UInt8]] = []
        for c in changes {
            let (rec, isRoot) = withTree { t in (t.record(c.node), t.isRoot(c.node)) }
            guard rec.kind != .gone else { continue }
            let parentObs = c.parent >= 0 ? clients.observers.observers(of: c.parent) : nil
            let ownObs = rec.kind == .dir ? clients.observers.observers(of: c.node) : nil
            guard parentObs != nil || ownObs != nil || isRoot else { continue }
            let after = withTree { $0.view(c.node) }
            if var before = c.before {
                before.gen = after.gen
                if before == after { continue }
            }
            // A new root was announced when it was added.
            if isRoot, let before = c.before, before.state != after.state { rootsChanged.append(after.path) }
            guard parentObs != nil || ownObs != nil else { continue }
            let line = after.wireLine(head: "*")
            var targets = parentObs ?? []
            if let ownObs { targets.formUnion(ownObs) }
            for id in targets {
                push(line, .observed(ownObs?.contains(id) == true ? c.node : c.parent), to: id)
            }
        }
        for p in rootsChanged { pushRoot(p) }
    }

    /// A badge as a `* BADGE` line, if it is defined.
    func badgeLine(_ id: String) -> WireLine? {
        settings.badges.first { $0.id == id }?.wireLine(head: "*")
    }

    /// Ends every connection with `* BYE shutdown`.
    func shutdown() {
        stopping = true
        // The retry's wait ends now: the final commit at stop (Daemon.run) must not wait for a
        // timer that will never fire.
        sets.cancelRetry()
        held.timer.cancel()
        menus.answers.timer.cancel()
        for id in clients.all { bye(id, "shutdown") }
        deliver()
    }
}

/// What the server says of itself, and the badges (providers may define more).
struct Settings {
    let epoch: String
    /// Paths the daemon writes itself (its state directory): ignored inside any root.
    let privatePaths: [[UInt8]]
    var badges: [Badge]
}

/// Buffers of answers built in place, kept between requests so that the hot paths allocate
/// nothing once they have grown.
struct Scratch {
    /// `LIST` and `OBSERVE`'s listings (a plain `STATUS` is answered in the outbox's).
    var listOut: [UInt8] = []
}

extension String {
    func leftPadded(to n: Int) -> String {
        count >= n ? self : String(repeating: "0", count: n - count) + self
    }
}

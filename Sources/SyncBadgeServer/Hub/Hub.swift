import Logging
import NIOCore
import SyncBadgeCore
import SyncBadgeStore
import SyncBadgeWatchEvents

/// The daemon's router: each verb and watcher event goes to the owner that handles it (Roots,
/// Providers, Menus, Queries, Ingest: docs/ARCHITECTURE.md, "Who handles what"), which returns
/// effects that the hub carries out (`perform`): writes, pushes, commits, watcher commands,
/// timers. All of it runs on the one event loop that serves every connection, so requests and
/// events are applied one at a time without locks; slow work runs elsewhere and comes back.
/// A connection hands lines in (`received`) and gets the outbox's bytes (`deliver`), and
/// never reads the hub's state.
final class Hub {
    let loop: EventLoop
    let logger: Logger
    /// The edges: the store and its thread, the file system, the wall clock, the watcher.
    var ports: Ports
    /// The server's epoch, in `HELLO`'s answer.
    let epoch: String
    /// The owners take it `inout`: a method called on it here runs on a copy (PERFORMANCE.md).
    var tree: StateTree
    var roots: Roots
    var providers: Providers
    var menus: Menus
    var queries = Queries()
    var clients = Clients()
    var outbox = Outbox()
    var delivery = Delivery()
    var ingest = Ingest()
    /// Once stopping, nothing is armed, and closing connections release nothing (states stay).
    private(set) var run = RunState.serving

    init(loop: EventLoop, store: any StateStore, storeThread: any WorkerThread, fileThread: any WorkerThread,
         files: any FileInspector = DiskFiles(), badges: [Badge], privatePaths: [[UInt8]], timers: Timers = Timers(),
         clock: any WallClock = SystemWallClock(), logger: Logger) throws {
        self.loop = loop
        self.logger = logger
        self.ports = Ports(store: store, storeThread: storeThread, fileThread: fileThread, files: files, clock: clock)
        self.roots = Roots(privatePaths: privatePaths)
        self.providers = Providers(holdMs: timers.restartHoldMs)
        self.menus = Menus(answerTimeout: timers.answer, badges: badges)
        self.epoch = Queries.newEpoch()
        self.tree = StateTree(lastGen: try store.lastGen())
    }

    // MARK: Connections

    func opened(peerPID: Int32, connection: any ClientConnection) -> Clients.ID {
        let id = clients.opened(peerPID: peerPID)
        outbox.open(id)
        delivery.connections[id] = connection
        return id
    }

    /// Its claims, menus, toolbar item, awaited answers and `syncing` states go (Menus, Providers).
    func closed(_ id: Clients.ID) {
        delivery.connections.removeValue(forKey: id)
        outbox.closed(id)
        guard let client = clients.closed(id) else { return }
        var fx = Effects(roots.registry.closed(id).map { .pushRoot($0) })
        let (toolbar, owed) = menus.closed(id)
        if let toolbar { fx.append(.pushToolbar(toolbar)) }
        fx.append(contentsOf: Effects([.replies(owed), .armReplyTimer, .providers(.closed(id, name: client.name, provider: client.role == .provider))]))
        perform(fx)
        deliver()
    }

    /// Hands each connection what the outbox holds, and closes those told `BYE`. A failed write
    /// closes its connection, which comes back here (`closed`); this loop hands over what that adds.
    func deliver() {
        guard delivery.begin() else { return }
        defer { delivery.end() }
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

    func push(_ line: WireLine, _ what: Backpressure.Push, to id: Clients.ID) { clients.push(line, what, to: id, outbox: &outbox) }

    /// To every client past `HELLO` (a toolbar: that did not say `roots=0`).
    private func pushToAll(_ line: WireLine, _ what: Backpressure.Push) {
        for c in clients.all where clients.hasSaidHello(c) {
            if case .toolbar = what, clients[c]?.wantsRootPushes != true { continue }
            push(line, what, to: c)
        }
    }

    /// The client's connection takes output again, or stops: once it does, what it missed.
    func writabilityChanged(_ id: Clients.ID, writable: Bool) {
        guard let catchUp = clients.writabilityChanged(id, writable: writable, feed: providers.feed) else { return }
        for missed in catchUp {
            switch missed {
            case .root(let root): outbox.write(id, rootLine(root).wireLine(head: "*"))
            case .badge(let badge): if let line = menus.badgeLine(badge) { outbox.write(id, line) }
            case .toolbar(let name): outbox.write(id, menus.toolbars.current(named: name).toolbar.wireLine(head: "*"))
            // A directory removed since, its id taken by another entry, or (for a reset) turned
            // into a file in place: its `GONE` or `ITEM` told the client.
            case .item(let node, let parent):
                if tree.isLive(node), tree.parent(node) == parent, !tree.record(node).isTombstone {
                    outbox.write(id, tree.view(node).wireLine(head: "*"))
                }
            case .reset(let node): if tree.record(node).kind == .dir { outbox.write(id, Reset(tree.path(node)).wireLine(head: "*")) }
            case .resetChanges(let root): outbox.write(id, ResetChanges(root).wireLine(head: "*"))
            }
        }
        deliver()
    }

    /// `* BYE <reason>`, then the connection closes once what it holds is written.
    func bye(_ id: Clients.ID, _ reason: String) {
        guard clients.isActive(id) else { return }
        outbox.write(id, Bye(reason).wireLine(head: "*"))
        close(id)
    }

    func close(_ id: Clients.ID) {
        guard clients[id]?.close() == true else { return }
        outbox.close(id)
    }

    /// Ends every connection with `* BYE shutdown`. The commit retry's wait ends now: the
    /// final commit at stop (Daemon.run) must not wait for a timer that will never fire.
    func shutdown() {
        guard run.stop() else { return }
        providers.sets.cancelRetry()
        providers.held.timer.cancel()
        menus.answers.timer.cancel()
        for id in clients.all { bye(id, "shutdown") }
        deliver()
    }

    // MARK: Lines in: the router

    /// A line from a client (no LF): answered now, or queued behind a request that waits. False
    /// once the client takes no more lines (told `BYE`).
    @discardableResult
    func received(_ line: ByteBuffer, from c: Clients.ID) -> Bool {
        guard let gate = clients.gate(c) else { return false }
        guard gate.idle else {
            clients[c]?.requests.enqueue(line)
            return true
        }
        // The hot path: a plain STATUS answered in place (PlainStatus), no effects allocated.
        if gate.helloed && outbox.answerPlainStatus(line, for: c, tree: &tree) { return true }
        process(line, from: c, helloed: false)
        return clients.isActive(c)
    }

    /// A read is done: what it wrote and pushed goes out now (PROTOCOL.md: pushes go out at once).
    func readComplete(_ c: Clients.ID) { deliver() }

    /// More than the longest line without an LF: `* BYE too-long` at once (PROTOCOL.md).
    func tooLong(_ c: Clients.ID) { bye(c, "too-long") }

    private func process(_ line: ByteBuffer, from c: Clients.ID, helloed: Bool) {
        if helloed && outbox.answerPlainStatus(line, for: c, tree: &tree) { return }
        switch WireParser.parse(line.readableBytesView) {
        case .empty: return
        case .badTag: bye(c, "bad-request")
        case .malformed(let tag): outbox.error(c, tag, "bad-request")
        case .request(let request):
            // Waiting from the start: an answer that comes before `handle` returns resumes itself.
            clients[c]?.requests.awaitAnswer()
            if handle(request, from: c) { clients[c]?.requests.answered() }
        }
    }

    /// The slow request answered: the lines queued behind it go on, then out.
    func resume(_ c: Clients.ID) {
        clients[c]?.requests.answered()
        while clients.isActive(c), let line = clients[c]?.requests.next() { process(line, from: c, helloed: clients.hasSaidHello(c)) }
        deliver()
    }

    /// Routes one request to its owner. False when the answer comes later (until `resume`).
    func handle(_ req: WireRequest, from c: Clients.ID) -> Bool {
        guard let (verb, role) = Queries.admit(req, c, epoch: epoch, clients: &clients, outbox: &outbox) else { return true }
        switch verb {
        case .hello: break
        case .ping: outbox.ok(c, req.tag)
        case .bye:
            outbox.ok(c, req.tag)
            close(c)
        case .roots:
            for root in roots.registry.roots { outbox.write(c, rootLine(root.path).wireLine(head: req.tag)) }
            outbox.ok(c, req.tag)
        case .badges: Queries.badges(req, c, menus.badges, outbox: &outbox)
        case .stats:
            let values = Queries.stats(clients: clients, roots: roots.registry.count, tree: &tree, watcher: ports.watcher, sets: providers.sets)
            return answerLater(c, ports.fileThread.run(on: loop) { Queries.residentBytes() }) { Queries.answerStats(values, rss: try? $0.get(), tag: req.tag, c, outbox: &self.outbox) }
        case .status:
            guard let outside = Queries.status(req, c, tree: &tree, outbox: &outbox) else { return true }
            let files = ports.files
            return answerLater(c, ports.fileThread.run(on: loop) { outside.paths.map { files.lstat($0)?.kind ?? .gone } }) {
                Queries.answerOutside(outside, kinds: try? $0.get(), tag: req.tag, c, outbox: &self.outbox)
            }
        case .list, .observe: queries.list(req, c, observe: verb == .observe, tree: &tree, clients: &clients, outbox: &outbox)
        case .unobserve: Queries.unobserve(req, c, tree: &tree, clients: &clients, outbox: &outbox)
        case .addRoot: return perform(roots.add(req, c, tree: &tree))
        case .removeRoot: return perform(roots.remove(req, c, tree: &tree))
        case .claim: return perform(roots.claim(req, c, tree: &tree) { self.clients[$0]?.name })
        case .unclaim: return perform(roots.unclaim(req, c, tree: &tree))
        case .set:
            let sets = [req] + (role == .provider ? clients[c]?.requests.takeSets() ?? [] : [])
            return perform(providers.arrived(sets, from: c, name: clients[c]?.name ?? ""))
        case .changes: return perform(providers.changes(req, c, roots: roots.registry, tree: &tree))
        case .subscribeChanges: return perform(providers.subscribe(req, c, roots: roots.registry, tree: &tree))
        case .defineBadge: return perform(menus.defineBadge(req, c))
        case .defineMenu: return perform(menus.defineMenu(req, c))
        case .defineToolbar: return perform(menus.defineToolbar(req, c, name: clients[c]?.name ?? ""))
        case .toolbar: return perform(menus.toolbar(req, c))
        case .menu: return perform(menus.menu(req, c, roots: roots.registry, clients: &clients, tree: &tree))
        case .action: return perform(menus.action(req, c, roots: roots.registry, clients: &clients, tree: &tree, now: loop.now))
        case .answer: return perform(menus.answer(req, c))
        }
        return true
    }

    /// Once `work` (off the loop: the loop reads no file and waits for no store) is done, `then`
    /// answers `c` (an error: the daemon stops), and `c`'s later requests go on.
    private func answerLater<T: Sendable>(_ c: Clients.ID, _ work: EventLoopFuture<T>, then: @escaping (Result<T, Error>) -> Void) -> Bool {
        work.assumeIsolated().whenComplete { result in
            guard self.clients.isActive(c) else { return }
            then(result)
            self.resume(c)
        }
        return false
    }

    // MARK: Effects

    /// Carries out an owner's effects in order. False when the request's answer comes later.
    @discardableResult
    func perform(_ fx: Effects) -> Bool {
        for e in fx.list { perform(e) }
        return !fx.waits
    }

    private func perform(_ e: HubEffect) {
        switch e {
        case .write(let c, let line): outbox.write(c, line)
        case .resume(let c): resume(c)
        case .deliver: deliver()
        case .pushRoot(let p): if roots.registry[p] != nil { pushToAll(rootLine(p).wireLine(head: "*"), .root(p)) }
        case .pushRootRemoved(let p): pushToAll(rootLine(p).wireLine(head: "*"), .root(p))
        case .pushToolbar(let t): pushToAll(t.toolbar.wireLine(head: "*"), .toolbar(t.toolbar.provider))
        case .toolbarClaimed(let c): if let t = menus.toolbars.claimed(c) { perform(.pushToolbar(t)) }
        case .toolbarUnclaimed(let c): if let t = menus.toolbars.unclaimed(c) { perform(.pushToolbar(t)) }
        case .pushBadge(let b): pushToAll(b.wireLine(head: "*"), .badge(b.id))
        case .changed(let p, let what): emitChanged(Ingest.FeedChange(path: p, what: what))
        case .resetChanges(let root):
            for c in providers.feed.subscribers[root] ?? [] { push(ResetChanges(root).wireLine(head: "*"), .change(root: root), to: c) }
        case .resetObservers(let root): perform(Roots.resets(under: root, observers: clients.observers, tree: &tree))
        case .publish: publishChanges()
        case .commit(let answers): scheduleCommit(answers.map { .answers($0) })
        case .watcher(let command): if let watcher = ports.watcher { command.send(to: watcher) }
        case .storeRoot(let stored, let pending):
            providers.sets.rootRowStarted()
            let store = ports.store
            ports.storeThread.run(on: loop) { try store.addRoot(stored) }.assumeIsolated().whenComplete { result in
                self.providers.sets.rootRowStored()
                self.perform(Roots.stored(stored.path, pending, result: result, active: pending.client.map { self.clients.isActive($0) } ?? false))
                self.deliver()
                self.scheduleCommit()
            }
        case .unstoreRoot(let p, let answering):
            let store = ports.store, done = ports.storeThread.run(on: loop) { try store.removeRoot(p) }
            if let (c, tag) = answering { _ = answerLater(c, done) { self.perform(Roots.unstored(tag, c, result: $0)) } }
        case .writeIgnoreFile(let root, let contents, let c, let tag):
            let file = PathBytes.join(root, IgnoreRules.fileName)
            ports.fileThread.run(on: loop) { Roots.writeFile(file, contents) }.assumeIsolated().whenComplete { result in
                let failure: String? = switch result { case .success(let err): err; case .failure(let e): "\(e)" }
                self.perform(self.roots.ignoreFileWritten(root, contents, failure: failure, client: c, tag: tag, active: self.clients.isActive(c)))
            }
        case .providers(let m): perform(providers.receive(m, stopping: run == .stopping, tree: &tree) { self.clients[$0]?.name })
        case .armReleaseTimer: armReleaseTimer()
        case .armReplyTimer: armReplyTimer()
        case .replies(let list): perform(Menus.replies(list) { self.clients.isActive($0) })
        case .log(let level, let message, let metadata): logger.log(level: level, message, metadata: metadata)
        case .call(let call, let result): call(result)
        case .retryCommit(let delay):
            providers.sets.retryArmed(loop.assumeIsolated().scheduleTask(in: delay) {
                self.providers.sets.retryFired()
                self.scheduleCommit()
            })
        }
    }

    // MARK: Watcher events

    /// Applies watcher events in order (Ingest), pushes what changed, once per entry, then commits.
    func apply(_ events: [WatcherMessage]) {
        ingest.queue.append(events)
        applyQueued()
    }

    private func applyQueued() {
        while true {
            switch ingest.next(sets: &providers.sets, tree: &tree) {
            case .apply(let e):
                applyEvent(e)
                ingest.queue.applied()
            case .wait:
                guard ingest.reading == .idle else { return }
                appliedBatch()
                for w in ingest.queue.takeWaiters() { w.succeed() }
                return
            case .lookUp(let paths, let covering, let compare):
                for root in compare { ports.watcher?.compareIdentities(under: root) }
                appliedBatch()
                let files = ports.files
                ports.fileThread.run(on: loop) { paths.map { files.lstat($0)?.identity } }.assumeIsolated().whenComplete { result in
                    // The pool stopped (the daemon is on its way out): as for files gone.
                    let found = (try? result.get()) ?? paths.map { _ in nil }
                    self.ingest.read(Dictionary(zip(paths, found), uniquingKeysWith: { a, _ in a }), covering: covering)
                    self.applyQueued()
                }
                return
            }
        }
    }

    /// What was applied goes out: pushes first (an observer waits for no commit), then the commit.
    private func appliedBatch() {
        publishChanges()
        deliver()
        scheduleCommit()
    }

    private func applyEvent(_ e: WatcherMessage) {
        switch e {
        case .changed, .directoryAppeared, .deleted, .moved:
            if let change = ingest.applyFileEvent(e, sets: &providers.sets, tree: &tree) { emitChanged(change) }
        case .ignoreFileChanged, .rootAdded, .rootRescanned, .rootRefreshed, .rootVanished: perform(roots.watcherReported(e, tree: &tree))
        case .barrier(let token):
            let identities = ingest.queue.identities
            perform(providers.barrierReached(token, tree: &tree, identities: identities, nowMs: ports.clock.nowMs()) { self.clients[$0] == nil })
        case .overflow: break
        case .identities(let found): ingest.queue.watcherRead = found
        }
    }

    // MARK: Pushes

    /// What changed in the tree, as `GONE` and `ITEM` pushes; a root whose state changed too.
    func publishChanges() {
        let (changes, removals) = tree.drainChanges()
        for p in clients.publish(changes, removals, tree: &tree, outbox: &outbox) { perform(.pushRoot(p)) }
    }

    private func emitChanged(_ change: Ingest.FeedChange) {
        guard let (line, root, subs) = providers.changed(change.path, change.what, from: change.from, tree: &tree) else { return }
        for c in subs { push(line, .change(root: root), to: c) }
    }

    /// A root's `ROOT` line as it is now (`removed` once it is no root).
    func rootLine(_ path: [UInt8]) -> Root {
        roots.line(path, tree: &tree, provider: { self.clients[$0]?.name }, watches: ports.watcher?.watches(of: path) ?? 0)
    }

    // MARK: Commits and timers

    /// Writes what changed in one transaction on the store's thread; `done` waits for a commit
    /// holding every change made so far. A failed one is written again (SetPipeline).
    func scheduleCommit(_ done: CommitWaiter? = nil) {
        guard let (batches, waiters) = providers.beginCommit(done, tree: &tree) else { return }
        let store = ports.store
        ports.storeThread.run(on: loop) { if !batches.isEmpty { try store.commit(batches) } }.assumeIsolated().whenComplete { result in
            self.perform(self.providers.commitEnded(batches, waiters: waiters, result: result) { self.clients.isActive($0) })
        }
    }

    /// One timer for the earliest lease or hold, none while nothing is held (an idle daemon has
    /// none); a minute at most, since the loop's clock stops while the machine sleeps.
    func armReleaseTimer() {
        let nowMs = ports.clock.nowMs()
        providers.held.timer.keep(run == .serving ? providers.held.releases.nextDeadlineMs : nil) { next in
            loop.assumeIsolated().scheduleTask(in: .milliseconds(min(60_000, max(0, next - nowMs)))) {
                self.providers.held.timer.fired()
                self.perform(self.providers.releaseTimerFired(nowMs: self.ports.clock.nowMs(), tree: &self.tree))
            }
        }
    }

    /// One timer for the earliest awaited answer; none while no answer is awaited.
    func armReplyTimer() {
        menus.answers.timer.keep(run == .serving ? menus.answers.replies.nextDeadline : nil) { next in
            loop.assumeIsolated().scheduleTask(deadline: next) {
                self.menus.answers.timer.fired()
                self.perform(.replies(self.menus.answers.replies.expired(now: self.loop.now)))
                self.armReplyTimer()
                self.deliver()
            }
        }
    }
}

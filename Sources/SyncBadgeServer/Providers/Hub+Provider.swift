#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import SyncBadgeCore
import SyncBadgeWatchEvents

/// Providers (sync engines): `SET`, `CHANGES`, `SUBSCRIBE-CHANGES`, `CLAIM`, and the group commit that
/// makes every acknowledged `SET` durable.
extension Hub {
    // MARK: SET

    /// Queues `SET`s behind a watcher barrier (SetPipeline). Returns false: the answers come
    /// after the commit.
    func handleSets(_ reqs: [WireRequest], from c: Clients.ID) -> Bool {
        let group = SetGroup(client: c, name: clients[c]?.name ?? "", requests: reqs.map(SetLine.init))
        if let token = sets.arrived(group) { watcher?.barrier(token: token) }
        return false
    }

    /// A barrier came back: when it is the SETs', apply them in order, commit once, then answer.
    func barrierReached(_ token: UInt64) {
        guard let (groups, next) = sets.barrierReached(token) else { return }
        var answers: [(Clients.ID, [(tag: String, line: WireLine, ok: Bool)])] = []
        var stated: [[UInt8]] = []
        for group in groups {
            answers.append((group.client, group.requests.map { req in
                let answer = applySet(req.set, from: group.client, stated: &stated)
                switch answer {
                case .success(let ok): return (req.tag, ok.wireLine(head: req.tag), true)
                case .failure(let err): return (req.tag, err.wireLine(head: req.tag), false)
                }
            }))
        }
        if let settled = sets.settle(withTree { t in stated.compactMap { t.find($0) } }) { watcher?.barrier(token: settled) }
        // A SET whose provider went away while it waited for its barrier: its `syncing` is
        // released now, as it would have been at the close.
        for group in groups where clients[group.client] == nil { releaseSyncing(of: group.client, name: group.name) }
        scheduleCommit { result in
            for (c, lines) in answers where self.clients.isActive(c) {
                for (tag, line, ok) in lines {
                    // An OK promises durability: without the commit it is an error.
                    if ok, case .failure(let e) = result {
                        self.outbox.error(c, tag, "internal", message: Array("cannot store the state: \(e)".utf8))
                    } else {
                        self.outbox.write(c, line)
                    }
                }
                self.resume(c)
            }
        }
        if let next { watcher?.barrier(token: next) }
    }

    /// Applies one `SET` (read, or refused, when it arrived: `SetLine`): its answer.
    func applySet(_ parsed: Result<SetRequest, Err>, from c: Clients.ID, stated: inout [[UInt8]]) -> Result<Ok, Err> {
        let set: SetRequest
        switch parsed {
        case .failure(let refused): return .failure(refused)
        case .success(let s): set = s
        }
        let path = set.path
        guard tree.root(containing: path) != nil else { return .failure(Err("outside", message: path)) }
        // 1.2, `lease`: only a `syncing` takes one (`SetRequest` leaves it out on another state).
        let leaseMs = set.lease.map { Int64($0) * 1000 }
        var changed: [StateTree.NodeID] = []
        var dropped: [(StateTree.NodeID, [UInt8])] = []
        switch tree.set(path, set, identify: { p in
            stated.append(p)
            // Read off the event loop before the barrier's SETs were applied (Hub.apply).
            return ingest.identities[p] ?? nil
        }, applied: { changed.append($0) }, dropping: { dropped.append(($0, $1)) }) {
        case .notFound:
            return .failure(Err("not-found", message: path))
        case .stale(let gen):
            return .success(Ok(stale: true, gen: gen))
        case .done(let gen):
            held.set(changed, dropped: dropped, state: set.state, by: c, leaseMs: leaseMs, nowMs: ports.clock.nowMs(), tree: &tree)
            armReleaseTimer()
            return .success(Ok(gen: gen))
        }
    }

    // MARK: Syncing that outlives its provider

    /// A provider's connection closed while the daemon runs: every path still `syncing` as it
    /// set it without a lease returns to `pending` (same gen, progress cleared, a message saying
    /// why), so no badge stays "syncing" for a provider that is gone (protocol 1.1).
    func releaseSyncing(of c: Clients.ID, name: String) {
        let mine = held.releases.connectionClosed(c)
        guard !stopping else { return }
        release(mine, .providerGone(name: name))
    }

    /// Released states (protocol 1.2): each entry still `syncing` returns to `pending`, saying
    /// why; observers get the `* ITEM`, and the store the change.
    func release(_ nodes: [StateTree.NodeID], _ reason: SyncingReleases.Reason) {
        guard !nodes.isEmpty else { return }
        let released = tree.releaseSyncing(nodes, message: reason.message)
        guard released > 0 else { return }
        logger.info("released syncing paths", metadata: ["reason": "\(reason.message)", "paths": "\(released)"])
        publishChanges()
        scheduleCommit()
    }

    /// At start, once the stored states are in: leases that ran out while the daemon was down
    /// are released, the others timed, and every other stored `syncing` is held for a while.
    func restoreReleases(_ stored: [StoreChanges.Lease]) {
        let expired = held.restore(stored, nowMs: ports.clock.nowMs(), tree: &tree)
        release(expired, .leaseRanOut)
        if !held.leaseRows.isEmpty { scheduleCommit() }
        armReleaseTimer()
    }

    /// One timer for the earliest lease or hold; none while nothing is outstanding (so an idle
    /// daemon has no timer).
    func armReleaseTimer() {
        let next = held.releases.nextDeadlineMs
        if let next, held.timer.isArmed(for: next) { return }
        held.timer.cancel()
        guard let next, !stopping else { return }
        // At most a minute at a time: the loop's clock stops while the machine sleeps, and a
        // lease runs in wall-clock time (the firing checks the wall clock again).
        let delay = min(60_000, max(0, next - ports.clock.nowMs()))
        let task = loop.assumeIsolated().scheduleTask(in: .milliseconds(delay)) {
            self.held.timer.fired()
            self.releaseTimerFired()
        }
        held.timer.arm(task, at: next)
    }

    func releaseTimerFired() {
        let due = held.fired(nowMs: ports.clock.nowMs(), tree: &tree)
        release(due.leased, .leaseRanOut)
        release(due.held, .providerDidNotComeBack)
        if !held.leaseRows.isEmpty { scheduleCommit() }
        armReleaseTimer()
    }

    // MARK: UNCLAIM (1.2)

    func unclaim(_ req: WireRequest, _ c: Clients.ID) {
        guard let p = paths(req, c)?.first else { return }
        guard let rootNode = tree.root(at: p)?.node, roots.unclaim(p, by: c) else {
            outbox.error(c, req.tag, "not-found", message: Array("\(PathBytes.display(p)) is not claimed by this connection".utf8))
            return
        }
        outbox.ok(c, req.tag)
        pushRoot(p)
        if let push = menus.toolbars.unclaimed(c) { pushToolbar(push) }
        let mine = held.releases.unclaimed(c) { tree.isLive($0) && tree.isInSubtree($0, of: rootNode) }
        release(mine, .unclaimed(name: clients[c]?.name ?? ""))
    }

    // MARK: Group commit

    /// Writes what changed in one transaction. `done` runs after the commit that holds every
    /// change made so far; changes made while a commit is in flight wait for the next one.
    /// A failed transaction is kept and written again (SetPipeline).
    func scheduleCommit(_ done: ((Result<Void, Error>) -> Void)? = nil) {
        guard sets.commitWanted(done, hasChanges: tree.hasStoreChanges || !held.leaseRows.isEmpty) else { return }
        var fresh = tree.drainStoreChanges()
        fresh.leases = held.takeLeaseRows()
        let (batches, waiters) = sets.begin(fresh: fresh)
        let store = self.ports.store
        storeWork {
            if !batches.isEmpty { try store.commit(batches) }
        }.assumeIsolated().whenComplete { result in
            let (next, health) = self.sets.finished(batches, succeeded: (try? result.get()) != nil)
            switch health {
            case .recovered: self.logger.notice("the store takes writes again")
            case .failing:
                if case .failure(let e) = result { self.logger.error("cannot store states; retrying with backoff", metadata: ["error": "\(e)"]) }
            case .unchanged: break
            }
            for w in waiters { w(result) }
            self.deliver()
            switch next {
            case .commitAgain: self.scheduleCommit()
            case .retry(let delay):
                self.sets.retryArmed(self.loop.assumeIsolated().scheduleTask(in: delay) {
                    self.sets.retryFired()
                    self.scheduleCommit()
                })
            case .waitForRetry: break
            }
        }
    }

    func changes(_ req: WireRequest, _ c: Clients.ID) {
        guard let root = exactRoot(req, c), let node = tree.root(at: root)?.node else { return }
        for id in tree.pendingPaths(under: node) {
            outbox.write(c, tree.view(id).wireLine(head: req.tag))
        }
        outbox.ok(c, req.tag)
    }

    func subscribeChanges(_ req: WireRequest, _ c: Clients.ID) {
        guard let root = exactRoot(req, c) else { return }
        feed.subscribe(c, to: root)
        outbox.ok(c, req.tag)
    }

    // MARK: Change feed

    /// `* CHANGED <path> gen=<n> what=<what> [from=<old>]` to the root's subscribers.
    func emitChanged(_ path: [UInt8], what: Changed.What, from: [UInt8]? = nil) {
        guard !feed.isEmpty,
              let (root, rec) = withTree({ t in t.root(containing: path).flatMap { r in t.find(path).map { (r.path, t.record($0)) } } }),
              let subs = feed.subscribers[root] else { return }
        guard rec.state != .ignored else { return }
        let line = Changed(path: path, gen: rec.gen, what: what, from: from).wireLine(head: "*")
        for c in subs { push(line, .change(root: root), to: c) }
    }

    /// Tells a root's subscribers to call `CHANGES` again.
    func resetChanges(_ root: [UInt8]) {
        guard let subs = feed.subscribers[root] else { return }
        let line = ResetChanges(root).wireLine(head: "*")
        for c in subs { push(line, .change(root: root), to: c) }
    }
}

/// A provider's pipelined `SET`s, applied together: who sent them (its name, for the release
/// message should it leave before they are applied) and the requests.
struct SetGroup {
    var client: Clients.ID
    var name: String
    var requests: [SetLine]
}

/// One `SET` as it arrived: its tag, and the request read once (`SetRequest`), or why it is
/// refused, answered in its turn.
struct SetLine {
    var tag: String
    var set: Result<SetRequest, Err>

    init(_ req: WireRequest) {
        tag = req.tag
        set = Result { () throws(Err) in try SetRequest(req) }
    }
}

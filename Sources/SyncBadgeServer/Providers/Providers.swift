import Logging
import NIOCore
import SyncBadgeCore
import SyncBadgeStore

/// Providers (sync engines) as the hub serves them: `SET` behind its barrier and the group
/// commit that makes it durable (SetPipeline), the `syncing` states held for them, their leases
/// and releases (HeldStates), and the change feed (`SUBSCRIBE-CHANGES`, `CHANGES`, `* CHANGED`:
/// ChangeFeed). One mutating func per request or event, returning what the hub carries out
/// (`Effects`); the tree is passed in. No I/O: the hub asks the watcher for the barriers, runs
/// the commits and arms the timer.
struct Providers {
    var sets = SetPipeline<SetGroup, CommitWaiter>()
    var held: HeldStates
    var feed = ChangeFeed()

    init(holdMs: Int64) {
        held = HeldStates(holdMs: holdMs)
    }

    // MARK: SET

    /// `SET`s queue behind a watcher barrier, a provider's pipelined ones together (one barrier
    /// and one commit for all of them); answered after the commit that holds them.
    mutating func arrived(_ reqs: [WireRequest], from c: Clients.ID, name: String) -> Effects {
        var fx = Effects()
        if let token = sets.arrived(SetGroup(client: c, name: name, requests: reqs.map(SetLine.init))) { fx.append(.watcher(.barrier(token))) }
        fx.waits = true
        return fx
    }

    /// A barrier came back: when it is the SETs', apply them in order, then commit once and
    /// answer. `identities`: the files read off the loop for them (Ingest); `isGone`: a client
    /// that closed while its SETs waited.
    mutating func barrierReached(_ token: UInt64, tree: inout StateTree, identities: [[UInt8]: FileIdentity?], nowMs: Int64,
                                 isGone: (Clients.ID) -> Bool) -> Effects {
        var fx = Effects()
        guard let (groups, next) = sets.barrierReached(token) else { return fx }
        var answers: [SetAnswers] = []
        var stated: [[UInt8]] = []
        var held = false
        for group in groups {
            answers.append(SetAnswers(client: group.client, lines: group.requests.map { req in
                switch apply(req.set, from: group.client, tree: &tree, identities: identities, nowMs: nowMs, stated: &stated, held: &held) {
                case .success(let ok): (req.tag, ok.wireLine(head: req.tag), true)
                case .failure(let err): (req.tag, err.wireLine(head: req.tag), false)
                }
            }))
        }
        if held { fx.append(.armReleaseTimer) }
        if let settled = sets.settle(stated.compactMap { tree.find($0) }) { fx.append(.watcher(.barrier(settled))) }
        // A SET whose provider went away while it waited for its barrier: its `syncing` is
        // released now, as it would have been at the close.
        for group in groups where isGone(group.client) { fx.append(.providers(.closed(group.client, name: group.name, provider: true))) }
        fx.append(.commit(answering: answers))
        if let next { fx.append(.watcher(.barrier(next))) }
        return fx
    }

    /// Applies one `SET` (read, or refused, when it arrived: `SetLine`): its answer.
    private mutating func apply(_ parsed: Result<SetRequest, Err>, from c: Clients.ID, tree: inout StateTree,
                                identities: [[UInt8]: FileIdentity?], nowMs: Int64, stated: inout [[UInt8]], held: inout Bool) -> Result<Ok, Err> {
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
            // Read off the event loop before the barrier's SETs were applied (Ingest).
            return identities[p] ?? nil
        }, applied: { changed.append($0) }, dropping: { dropped.append(($0, $1)) }) {
        case .notFound:
            return .failure(Err("not-found", message: path))
        case .stale(let gen):
            return .success(Ok(stale: true, gen: gen))
        case .done(let gen):
            self.held.set(changed, dropped: dropped, state: set.state, by: c, leaseMs: leaseMs, nowMs: nowMs, tree: &tree)
            held = true
            return .success(Ok(gen: gen))
        }
    }

    /// The commit holding these SETs ended: each is answered (an OK promises durability:
    /// without the commit it is an error), then its client goes on.
    static func committed(_ answers: [SetAnswers], result: Result<Void, Error>, isActive: (Clients.ID) -> Bool) -> Effects {
        var fx = Effects()
        for a in answers where isActive(a.client) {
            for (tag, line, ok) in a.lines {
                if ok, case .failure(let e) = result {
                    fx.error(a.client, tag, "internal", message: Array("cannot store the state: \(e)".utf8))
                } else {
                    fx.write(a.client, line)
                }
            }
            fx.append(.resume(a.client))
        }
        return fx
    }

    // MARK: Group commit

    /// What the next commit writes, if one starts now: every change made so far, and whoever
    /// waits for it. Nil while one is in flight (the waiter then waits for the next) or when
    /// there is nothing to write and nobody waits.
    mutating func beginCommit(_ waiter: CommitWaiter?, tree: inout StateTree) -> (batches: [StoreChanges], waiters: [CommitWaiter])? {
        guard sets.commitWanted(waiter, hasChanges: tree.hasStoreChanges || !held.leaseRows.isEmpty) else { return nil }
        var fresh = tree.drainStoreChanges()
        fresh.leases = held.takeLeaseRows()
        return sets.begin(fresh: fresh)
    }

    /// The commit of `batches` ended: what to log, the answers to its waiters, the delivery,
    /// then what comes next (SetPipeline.AfterCommit). `isActive`: a client still there.
    mutating func commitEnded(_ batches: [StoreChanges], waiters: [CommitWaiter], result: Result<Void, Error>,
                              isActive: (Clients.ID) -> Bool) -> Effects {
        let (next, health) = sets.finished(batches, succeeded: (try? result.get()) != nil)
        var fx = Effects()
        switch health {
        case .recovered: fx.append(.log(.notice, "the store takes writes again", [:]))
        case .failing:
            if case .failure(let e) = result { fx.append(.log(.error, "cannot store states; retrying with backoff", ["error": "\(e)"])) }
        case .unchanged: break
        }
        for w in waiters {
            switch w {
            case .answers(let answers): fx.append(contentsOf: Self.committed(answers, result: result, isActive: isActive))
            case .call(let call): fx.append(.call(call, result))
            }
        }
        fx.append(.deliver)
        switch next {
        case .commitAgain: fx.append(.commit(answering: nil))
        case .retry(let delay): fx.append(.retryCommit(after: delay))
        case .waitForRetry: break
        }
        return fx
    }

    // MARK: Messages from the other owners

    /// What another owner (or the hub, at a close) tells the providers' side.
    enum Message {
        /// Held `syncing` states return to `pending`.
        case release([StateTree.NodeID], SyncingReleases.Reason)
        /// The client gave up a root (`UNCLAIM`): what it holds `syncing` there is released.
        case unclaimed(Clients.ID, root: StateTree.NodeID)
        /// A client closed (or a provider whose SETs were applied after it left): it follows
        /// no feed, and a provider's `syncing` goes.
        case closed(Clients.ID, name: String, provider: Bool)
        /// A root was removed: its held states, settling SETs and change subscribers go.
        case rootRemoved([UInt8])
        /// A new root whose scan failed: SETs settling in it are forgotten.
        case forgetSets([UInt8])
    }

    /// `stopping`: the daemon is on its way out, and states are stored as they are. `name`: a
    /// client's name, for the release message.
    mutating func receive(_ m: Message, stopping: Bool, tree: inout StateTree, name: (Clients.ID) -> String?) -> Effects {
        switch m {
        case .release(let nodes, let reason): return release(nodes, reason, tree: &tree)
        case .unclaimed(let c, let root): return unclaimed(c, root: root, name: name(c) ?? "", tree: &tree)
        case .closed(let c, let clientName, let provider):
            feed.closed(c)
            return provider ? closed(c, name: clientName, stopping: stopping, tree: &tree) : Effects()
        case .rootRemoved(let root): return rootRemoved(root, tree: &tree)
        case .forgetSets(let root):
            sets.forgetRoot(root)
            return Effects()
        }
    }

    // MARK: Syncing that outlives its provider

    /// A provider's connection closed while the daemon runs (`stopping`: it is on its way out,
    /// and states are stored as they are): every path still `syncing` as it set it without a
    /// lease returns to `pending` (protocol 1.1).
    mutating func closed(_ c: Clients.ID, name: String, stopping: Bool, tree: inout StateTree) -> Effects {
        let mine = held.releases.connectionClosed(c)
        guard !stopping else { return Effects() }
        return release(mine, .providerGone(name: name), tree: &tree)
    }

    /// Released states (protocol 1.2): each entry still `syncing` returns to `pending` (same
    /// gen, progress cleared, a message saying why); observers get the `* ITEM`, and the store
    /// the change.
    func release(_ nodes: [StateTree.NodeID], _ reason: SyncingReleases.Reason, tree: inout StateTree) -> Effects {
        guard !nodes.isEmpty else { return Effects() }
        let released = tree.releaseSyncing(nodes, message: reason.message)
        guard released > 0 else { return Effects() }
        return Effects([.log(.info, "released syncing paths", ["reason": "\(reason.message)", "paths": "\(released)"]), .publish, .commit(answering: nil)])
    }

    /// At start, once the stored states are in: leases that ran out while the daemon was down
    /// are released, the others timed, and every other stored `syncing` is held for a while.
    mutating func restore(_ stored: [StoreChanges.Lease], nowMs: Int64, tree: inout StateTree) -> Effects {
        let expired = held.restore(stored, nowMs: nowMs, tree: &tree)
        var fx = release(expired, .leaseRanOut, tree: &tree)
        if !held.leaseRows.isEmpty { fx.append(.commit(answering: nil)) }
        fx.append(.armReleaseTimer)
        return fx
    }

    /// The timer for the earliest lease or hold fired.
    mutating func releaseTimerFired(nowMs: Int64, tree: inout StateTree) -> Effects {
        let due = held.fired(nowMs: nowMs, tree: &tree)
        var fx = release(due.leased, .leaseRanOut, tree: &tree)
        fx.append(contentsOf: release(due.held, .providerDidNotComeBack, tree: &tree))
        if !held.leaseRows.isEmpty { fx.append(.commit(answering: nil)) }
        fx.append(.armReleaseTimer)
        return fx
    }

    /// `UNCLAIM`ed: what the provider holds `syncing` below the root is released.
    mutating func unclaimed(_ c: Clients.ID, root: StateTree.NodeID, name: String, tree: inout StateTree) -> Effects {
        let mine = held.releases.unclaimed(c) { tree.isLive($0) && tree.isInSubtree($0, of: root) }
        return release(mine, .unclaimed(name: name), tree: &tree)
    }

    /// A root was removed: its held states, settling SETs and change subscribers go.
    mutating func rootRemoved(_ root: [UInt8], tree: inout StateTree) -> Effects {
        held.rootRemoved(root, tree: &tree)
        sets.forgetRoot(root)
        feed.rootRemoved(root)
        return Effects([.armReleaseTimer])
    }

    // MARK: Change feed

    /// `CHANGES <root>`: every pending path under it.
    func changes(_ req: WireRequest, _ c: Clients.ID, roots: RootRegistry, tree: inout StateTree) -> Effects {
        var fx = Effects()
        guard let root = Roots.exactRoot(req, c, registry: roots, tree: &tree, &fx), let node = tree.root(at: root)?.node else { return fx }
        for id in tree.pendingPaths(under: node) { fx.write(c, tree.view(id).wireLine(head: req.tag)) }
        fx.ok(c, req.tag)
        return fx
    }

    mutating func subscribe(_ req: WireRequest, _ c: Clients.ID, roots: RootRegistry, tree: inout StateTree) -> Effects {
        var fx = Effects()
        guard let root = Roots.exactRoot(req, c, registry: roots, tree: &tree, &fx) else { return fx }
        feed.subscribe(c, to: root)
        fx.ok(c, req.tag)
        return fx
    }

    /// `* CHANGED <path> gen=<n> what=<what> [from=<old>]` and its root, for the root's
    /// subscribers (nil: nobody follows it, or the entry is ignored). A watcher event's path:
    /// no array of effects here, and mutating though it changes nothing, so that the hub calls
    /// it in place rather than on a copy of everything the providers hold.
    mutating func changed(_ path: [UInt8], _ what: Changed.What, from: [UInt8]? = nil, tree: inout StateTree) -> (line: WireLine, root: [UInt8], to: Set<Clients.ID>)? {
        guard !feed.isEmpty, let root = tree.root(containing: path)?.path, let subs = feed.subscribers[root],
              let node = tree.find(path) else { return nil }
        let rec = tree.record(node)
        guard rec.state != .ignored else { return nil }
        return (Changed(path: path, gen: rec.gen, what: what, from: from).wireLine(head: "*"), root, subs)
    }
}

/// Who waits for a group commit: SETs to answer, or (the daemon's last commit at stop) a call.
enum CommitWaiter {
    case answers([SetAnswers])
    case call((Result<Void, Error>) -> Void)
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

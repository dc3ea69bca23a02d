import SyncBadgeCore

extension Clients {
    /// The client's connection takes output again, or stops taking it: once it does, what it
    /// missed meanwhile (Backpressure), to make up for; nil when there is nothing to.
    mutating func writabilityChanged(_ id: ID, writable: Bool, feed: ChangeFeed) -> [Backpressure.CatchUp]? {
        guard let client = self[id], self[id]?.writabilityChanged(writable) == true, writable, client.backpressure.hasMissed else { return nil }
        var missed = client.backpressure
        let catchUp = missed.caughtUp(observing: { observers.isObserving(id, $0) }, subscribed: { feed.isSubscribed(id, to: $0) })
        self[id]?.backpressure = missed
        return catchUp
    }

    /// A push: written, or for a slow reader dropped and made up for once it catches up
    /// (Backpressure). Every client gets `* ROOT` and `* BADGE`, so a client that never reads
    /// would otherwise hold them all.
    mutating func push(_ line: WireLine, _ what: Backpressure.Push, to id: ID, outbox: inout Outbox) {
        guard admit(what, to: id, held: outbox.heldBytes(id)) else { return }
        outbox.write(id, line)
    }

    /// A step's line above which its bytes are counted per client (flooded): 64 KiB, a
    /// sixteenth of the cap. Below, it can only fill a client already near the cap, which
    /// Backpressure handles push by push, and most steps are a few lines to any number of
    /// viewers, which then cost no count.
    static let stepCountedAbove = Outbox.highWater / 16

    /// One line of a `publish`, before it is written, with who gets it: the observers of the
    /// entry's parent and of the entry itself (a directory's own, or a removed directory's
    /// last). The sets are the observer index's own (shared, not copied), so a step costs a
    /// record per line whatever the number of viewers.
    private struct Due {
        var line: WireLine
        var node: StateTree.NodeID
        var parent: StateTree.NodeID
        var gone: Bool
        var parentObs: Set<ID>?
        var ownObs: Set<ID>?

        /// Each target once, with what its push is about: a directory's own `ITEM` for its own
        /// observers (its listing holds its children, not itself); else the parent (whose
        /// listing holds the entry), but for a removed directory's `GONE` to its own observers
        /// alone (nil: nothing can stand in for it).
        func forEachTarget(_ body: (ID, Backpressure.Push) -> Void) {
            if let parentObs {
                for id in parentObs {
                    body(id, gone || ownObs?.contains(id) != true ? .observed(parent) : .own(node, parent: parent))
                }
            }
            if let ownObs {
                for id in ownObs where parentObs?.contains(id) != true {
                    body(id, gone ? .observed(nil) : .own(node, parent: parent))
                }
            }
        }
    }

    /// The directories a flooded client is to reset. Most of a flip's lines are about one
    /// directory: the last one is kept apart, so they cost no set insert each.
    private struct Resets {
        var last: StateTree.NodeID?
        var nodes: Set<StateTree.NodeID> = []

        mutating func add(_ node: StateTree.NodeID) {
            last = node
            nodes.insert(node)
        }
    }

    /// Turns what changed in the tree into pushes: `GONE` for what disappeared, then `ITEM`
    /// for every entry whose visible state changed, to the observers of it and of its parent.
    /// Returns the roots whose own state changed, to announce (a new root was announced when
    /// it was added).
    ///
    /// A client whose pushes from this one step would be dropped at its output's cap gets
    /// none of its observed directories' pushes (but their own `ITEM`s), and `* RESET
    /// <dir>` for each of them at once:
    /// they are all made before it can read any, so it would get the first megabyte and then
    /// the same `RESET` (Backpressure) and read the first megabyte again in the listing it asks
    /// for. A recursive `SET` of 20,000 files was 12,000 pushes, a `RESET`, and a listing of
    /// 20,000 lines to every viewer of the folder; now a `RESET` and the listing
    /// (PERFORMANCE.md, "The daemon: a step too big for the cap").
    mutating func publish(_ changes: [StateTree.Change], _ removals: [StateTree.Removal], tree: inout StateTree,
                          outbox: inout Outbox) -> [[UInt8]] {
        var due: [Due] = []
        var stepBytes = 0
        // Removed directories' observers forget them after the pushes: a `GONE` of an entry
        // in one, earlier in the step, would otherwise mark it missed again (Backpressure).
        var unobserved: [(ID, StateTree.NodeID)] = []
        for r in removals {
            let parentObs = observers.observers(of: r.parent)
            var ownObs: Set<ID>?
            if r.wasDirectory {
                let own = observers.removed(r.node)
                if !own.isEmpty { ownObs = own }
                for id in own { unobserved.append((id, r.node)) }
            }
            guard parentObs != nil || ownObs != nil else { continue }
            let line = Gone(r.path).wireLine(head: "*")
            stepBytes += line.bytes.count + 1
            due.append(Due(line: line, node: r.node, parent: r.parent, gone: true, parentObs: parentObs, ownObs: ownObs))
        }
        var rootsChanged: [[UInt8]] = []
        for c in changes {
            let (rec, isRoot) = (tree.record(c.node), tree.isRoot(c.node))
            guard rec.kind != .gone else { continue }
            let parentObs = c.parent >= 0 ? observers.observers(of: c.parent) : nil
            let ownObs = rec.kind == .dir ? observers.observers(of: c.node) : nil
            guard parentObs != nil || ownObs != nil || isRoot else { continue }
            let after = tree.view(c.node)
            if var before = c.before {
                before.gen = after.gen
                if before == after { continue }
            }
            if isRoot, let before = c.before, before.state != after.state { rootsChanged.append(after.path) }
            guard parentObs != nil || ownObs != nil else { continue }
            let line = after.wireLine(head: "*")
            stepBytes += line.bytes.count + 1
            due.append(Due(line: line, node: c.node, parent: c.parent, gone: false, parentObs: parentObs, ownObs: ownObs))
        }
        let flooded = stepBytes > Self.stepCountedAbove ? flooded(due, outbox: &outbox) : []
        var resets: [ID: Resets] = [:]
        for d in due {
            d.forEachTarget { id, what in
                // An observed directory's own line is still pushed (`.own`): its `LIST` after
                // the `RESET` holds its children, not itself.
                if !flooded.isEmpty, flooded.contains(id), case .observed(let node?) = what {
                    if resets[id]?.last != node { resets[id, default: Resets()].add(node) }
                    return
                }
                push(d.line, what, to: id, outbox: &outbox)
            }
        }
        for (id, node) in unobserved { self[id]?.backpressure.removed(node) }
        for (id, r) in resets.sorted(by: { $0.key < $1.key }) {
            for node in r.nodes.sorted() where observers.isObserving(id, node) {
                outbox.write(id, Reset(tree.path(node)).wireLine(head: "*"))
            }
        }
        return rootsChanged
    }

    /// The clients, reading at the time, that would drop a push of this step at the cap
    /// (Outbox.highWater), as `admit` would, line by line: a droppable push that comes once
    /// they hold more than the cap. One not writable is left to Backpressure.
    private mutating func flooded(_ due: [Due], outbox: inout Outbox) -> Set<ID> {
        var held: [ID: Int] = [:]
        // Not reading (left to Backpressure), or already found flooded.
        var settled: Set<ID> = []
        var out: Set<ID> = []
        for d in due {
            let n = d.line.bytes.count + 1
            d.forEachTarget { id, what in
                guard !settled.contains(id) else { return }
                let h: Int
                if let known = held[id] {
                    h = known
                } else if isWritable(id) {
                    h = outbox.heldBytes(id)
                } else {
                    settled.insert(id)
                    return
                }
                if what.droppable, h > Outbox.highWater {
                    out.insert(id)
                    settled.insert(id)
                    return
                }
                held[id] = h + n
            }
        }
        return out
    }
}

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

    /// Turns what changed in the tree into pushes: `GONE` for what disappeared, then `ITEM`
    /// for every entry whose visible state changed, to the observers of it and of its parent.
    /// Returns the roots whose own state changed, to announce (a new root was announced when
    /// it was added).
    mutating func publish(_ changes: [StateTree.Change], _ removals: [StateTree.Removal], tree: inout StateTree,
                          outbox: inout Outbox) -> [[UInt8]] {
        for r in removals {
            var targets = observers.observers(of: r.parent) ?? []
            if r.wasDirectory {
                for id in observers.removed(r.node) {
                    targets.insert(id)
                    self[id]?.backpressure.removed(r.node)
                }
            }
            guard !targets.isEmpty else { continue }
            let line = Gone(r.path).wireLine(head: "*")
            for id in targets { push(line, .observed(observers.isObserving(id, r.parent) ? r.parent : nil), to: id, outbox: &outbox) }
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
            var targets = parentObs ?? []
            if let ownObs { targets.formUnion(ownObs) }
            for id in targets { push(line, .observed(ownObs?.contains(id) == true ? c.node : c.parent), to: id, outbox: &outbox) }
        }
        return rootsChanged
    }
}

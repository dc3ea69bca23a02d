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

    /// One push of a `publish`, before it is written: its line is `lines[line]`.
    private struct Due {
        var line: Int
        var id: ID
        var what: Backpressure.Push
    }

    /// Turns what changed in the tree into pushes: `GONE` for what disappeared, then `ITEM`
    /// for every entry whose visible state changed, to the observers of it and of its parent.
    /// Returns the roots whose own state changed, to announce (a new root was announced when
    /// it was added).
    ///
    /// A client whose pushes from this one step would not fit under its output's cap gets
    /// none of its observed directories' pushes, and `* RESET <dir>` for each of them at once:
    /// they are all made before it can read any, so it would get the first megabyte and then
    /// the same `RESET` (Backpressure) and read the first megabyte again in the listing it asks
    /// for. A recursive `SET` of 20,000 files was 12,000 pushes, a `RESET`, and a listing of
    /// 20,000 lines to every viewer of the folder; now a `RESET` and the listing
    /// (PERFORMANCE.md, "Where the file manager's CPU goes").
    mutating func publish(_ changes: [StateTree.Change], _ removals: [StateTree.Removal], tree: inout StateTree,
                          outbox: inout Outbox) -> [[UInt8]] {
        var lines: [WireLine] = []
        var due: [Due] = []
        for r in removals {
            var targets = observers.observers(of: r.parent) ?? []
            if r.wasDirectory {
                for id in observers.removed(r.node) {
                    targets.insert(id)
                    self[id]?.backpressure.removed(r.node)
                }
            }
            guard !targets.isEmpty else { continue }
            lines.append(Gone(r.path).wireLine(head: "*"))
            for id in targets {
                due.append(Due(line: lines.count - 1, id: id, what: .observed(observers.isObserving(id, r.parent) ? r.parent : nil)))
            }
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
            lines.append(after.wireLine(head: "*"))
            var targets = parentObs ?? []
            if let ownObs { targets.formUnion(ownObs) }
            for id in targets {
                due.append(Due(line: lines.count - 1, id: id, what: .observed(ownObs?.contains(id) == true ? c.node : c.parent)))
            }
        }
        let flooded = flooded(due, lines, outbox: &outbox)
        var resets: [ID: Set<StateTree.NodeID>] = [:]
        for d in due {
            if !flooded.isEmpty, flooded.contains(d.id), case .observed(let node?) = d.what {
                resets[d.id, default: []].insert(node)
                continue
            }
            push(lines[d.line], d.what, to: d.id, outbox: &outbox)
        }
        for (id, nodes) in resets.sorted(by: { $0.key < $1.key }) {
            for node in nodes.sorted() where observers.isObserving(id, node) {
                outbox.write(id, Reset(tree.path(node)).wireLine(head: "*"))
            }
        }
        return rootsChanged
    }

    /// The clients, reading at the time, whose pushes in `due` would take them over the cap
    /// (Outbox.highWater). One already behind is left to Backpressure.
    private mutating func flooded(_ due: [Due], _ lines: [WireLine], outbox: inout Outbox) -> Set<ID> {
        // A client gets each line once at most. A small step is left to Backpressure push by
        // push, as before (it can only fill a client already near the cap): most steps are a
        // few lines, to any number of viewers, and cost no count by client here.
        guard lines.reduce(0, { $0 + $1.bytes.count + 1 }) > Outbox.highWater / 16 else { return [] }
        var bytes: [ID: Int] = [:]
        for d in due { bytes[d.id, default: 0] += lines[d.line].bytes.count + 1 }
        var out: Set<ID> = []
        for (id, n) in bytes where self[id]?.output == .writable && outbox.heldBytes(id) + n > Outbox.highWater {
            out.insert(id)
        }
        return out
    }
}

/// Provider reports and the change feed.
extension StateTree {
    public enum SetResult: Sendable, Equatable {
        /// Applied (or nothing to change); the path's current generation.
        case done(gen: UInt64)
        case stale(gen: UInt64)
        case notFound
    }

    /// Applies a provider's `SET` to the path (and, with `recursive`, everything below it).
    /// `identify` stats a path when it becomes `synced`: the daemon records the file's identity
    /// at that moment. `ignored` on a directory covers its subtree: nothing below an ignored
    /// directory counts.
    /// `applied` hears of each entry the SET changed (not the stale, ignored or unchanged ones),
    /// `dropping` of each tombstone a `synced` drops, with its path (its id is gone after).
    public mutating func set(_ path: [UInt8], _ req: SetRequest, identify: ([UInt8]) -> FileIdentity?,
                             applied: (NodeID) -> Void = { _ in },
                             dropping: (NodeID, [UInt8]) -> Void = { _, _ in }) -> SetResult {
        guard let id = find(path) else { return .notFound }
        let rec = nodes[Int(id)].record
        if let gen = req.gen, gen < rec.gen { return .stale(gen: rec.gen) }
        let recursive = req.recursive || (req.state == .ignored && rec.kind == .dir)
        let targets = recursive ? subtree(id) : [id]
        for t in targets where nodes[Int(t)].live {
            let tPath = t == id ? path : self.path(t)
            let r = nodes[Int(t)].record
            let identity = req.state == .synced && !r.isTombstone ? identify(tPath) : nil
            switch StateMachine.set(r, req, identity: identity) {
            case .applied(let n):
                update(t, n)
                applied(t)
            case .dropTombstone:
                dropping(t, tPath)
                detach(t, recordAs: nil)
            case .stale, .unchanged: continue
            }
        }
        return .done(gen: nodes[Int(id)].live ? nodes[Int(id)].record.gen : rec.gen)
    }

    /// Releases what a departed engine left `syncing` (StateMachine.engineGone); ids that are
    /// no longer live, or no longer `syncing`, are passed over. Returns how many changed.
    public mutating func releaseSyncing(_ ids: [NodeID], message: String) -> Int {
        var released = 0
        for id in ids where isLive(id) {
            guard let n = StateMachine.engineGone(nodes[Int(id)].record, message: message) else { continue }
            update(id, n)
            released += 1
        }
        return released
    }

    /// Every live entry whose own state is `syncing` (at start: what the restart hold holds).
    public func syncingEntries() -> [NodeID] {
        var out: [NodeID] = []
        for i in nodes.indices where nodes[i].live && nodes[i].record.state == .syncing { out.append(NodeID(i)) }
        return out
    }

    /// Whether `id` is `ancestor` or below it.
    public func isInSubtree(_ id: NodeID, of ancestor: NodeID) -> Bool {
        var cur = id
        while cur >= 0 {
            if cur == ancestor { return true }
            cur = nodes[Int(cur)].parent
        }
        return false
    }

    /// Whether `id` names an entry of the tree now (ids of removed entries are reused).
    public func isLive(_ id: NodeID) -> Bool {
        id >= 0 && Int(id) < nodes.count && nodes[Int(id)].live
    }

    /// Every path below (and including) `root` whose own state is `pending`, tombstones
    /// included, parents first. Subtrees without a pending entry are skipped.
    public func pendingPaths(under root: NodeID) -> [NodeID] {
        var out: [NodeID] = []
        var stack = [root]
        while let id = stack.popLast() {
            let n = nodes[Int(id)]
            if n.record.state == .pending { out.append(id) }
            guard counts(id)[.pending] > 0 else { continue }
            // Reversed name order on the stack: popped in name order, so the listing is stable.
            for child in childIDs(id).sorted(by: { nameLess($1, $0) }) { stack.append(child) }
        }
        return out
    }
}

import SyncBadgeProtocol

/// What the passes do to the model, without I/O: a reported change, the `SET`s for the paths an
/// incremental pass covers, and what the daemon answered to them.
extension RepoModel {
    /// `* CHANGED`: the path (and a move's old path) is `pending` until a pass judges it.
    /// `isDirectory`: what the path is now (not asked for a deletion).
    public mutating func reported(_ rel: [UInt8], gen: UInt64, what: Changed.What, isDirectory: Bool, from fromRel: [UInt8]?) {
        if let fromRel { _ = changed(fromRel, gen: 0, isDirectory: false, gone: true) }
        if what == .delete {
            _ = changed(rel, gen: gen, isDirectory: false, gone: true)
            return
        }
        // A directory created or moved in brings contents to list; an attribute change does not.
        let known = isDirectory && what == .modify && find(rel).map { self[$0].isDirectory && self[$0].childrenKnown } == true
        _ = changed(rel, gen: gen, isDirectory: isDirectory, gone: false)
        if known, let id = find(rel) { setChildrenKnown(id, true) }
    }

    /// The `SET`s of an incremental pass: each changed path's subtree, once (a path below
    /// another changed directory is planned with it), judged with what is above it.
    public func plan(changed paths: [[UInt8]], ignoredDirectories: Set<[UInt8]>, judge: Judge) -> [PlannedSet] {
        var plan: [PlannedSet] = []
        var covered = Set<[UInt8]>()
        for rel in paths {
            guard let id = find(rel) else { continue }
            let above = Self.ancestors(of: rel)
            if above.contains(where: { covered.contains($0) }) { continue }
            covered.insert(rel)
            let ignored = above.contains { ignoredDirectories.contains($0) || GitView.isGitDirectory($0) }
            plan += self.plan(from: id, ancestorIgnored: ignored, judge: judge)
        }
        return plan
    }

    /// The directories above a path, nearest first, the top level left out.
    public static func ancestors(of rel: [UInt8]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var p = rel
        while !p.isEmpty {
            p = parent(of: p)
            if !p.isEmpty { out.append(p) }
        }
        return out
    }

    /// What the daemon answered to each planned `SET` (`failure`: its refusal, with its code).
    /// Returns the paths that changed since (stale), with their generation: their `* CHANGED`
    /// brings them back, and the refusals, to be said.
    public mutating func answered<E: Error>(_ plan: [PlannedSet], _ outcomes: [Result<SetOutcome, E>])
        -> (stale: [(rel: [UInt8], gen: UInt64)], refused: [(PlannedSet, E)]) {
        var stale: [(rel: [UInt8], gen: UInt64)] = []
        var refused: [(PlannedSet, E)] = []
        for (p, o) in zip(plan, outcomes) {
            switch o {
            case .success(.applied):
                applied(p)
            case .success(.stale(let gen)):
                self.stale(p.rel, gen: gen)
                stale.append((p.rel, gen))
            case .success(.notFound):
                if let id = find(p.rel) { remove(id) }
            case .failure(let why):
                refused.append((p, why))
            }
        }
        return (stale, refused)
    }
}

extension GitView {
    /// The verdict of every entry: the top level's own (`root`: an operation, an error or the
    /// branch's baseline), and git's for the rest.
    public func judge(root: Verdict) -> RepoModel.Judge {
        { node, above in
            node.rel.isEmpty ? root : verdict(node.rel, isDirectory: node.isDirectory, gone: node.gone, ancestorIgnored: above)
        }
    }
}

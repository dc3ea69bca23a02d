/// Local changes the watcher reports, applied through `StateMachine`.
extension StateTree {
    /// The directory that holds `path` and the last component, creating missing directories
    /// on the way as `pending` (they appeared before their own event was seen).
    mutating func locateParent(_ path: [UInt8]) -> (parent: NodeID, name: [UInt8])? {
        guard let root = root(containing: path),
              let rel = PathBytes.relativeComponents(path, under: root.path), let last = rel.last
        else { return nil }
        var id = root.node
        for c in rel.dropLast() {
            if let child = child(id, c), nodes[Int(child)].record.kind == .dir {
                id = child
            } else {
                id = upsert(parent: id, name: Array(c), kind: .dir, identity: nil)
            }
        }
        return (id, Array(last))
    }

    /// Applies a local change to the child `name` of `parent`, creating it if needed.
    @discardableResult
    mutating func upsert(parent: NodeID, name: [UInt8], kind: EntryKind, identity: FileIdentity?) -> NodeID {
        if let id = child(parent, name) {
            let old = nodes[Int(id)].record
            touch(id)
            if old.kind == .dir && kind != .dir {
                dropChildren(id, path: path(id))
            }
            if old.isTombstone {
                var rec = StateMachine.changed(old, kind: kind, gens: &lastGen)
                rec.ruleIgnored = false
                update(id, rec)
                var probe = nodes[Int(id)].record
                if isIgnoredByRules(id, rules: rules(of: id)) {
                    update(id, StateMachine.becameIgnored(probe))
                } else if let p = Optional(nodes[Int(id)].parent), p >= 0, nodes[Int(p)].record.state == .ignored {
                    probe.state = .ignored
                    update(id, probe)
                }
            } else if let rec = StateMachine.localChange(old, kind: kind, identity: identity, gens: &lastGen) {
                update(id, rec)
            } else if old.kind != kind {
                // An ignored entry replaced by another kind: still ignored, but show what it is now.
                var rec = old
                rec.kind = kind
                update(id, rec)
            }
            return id
        }
        lastGen += 1
        let id = allocate(parent: parent, name: name, record: EntryRecord(kind: kind, state: .pending, gen: lastGen))
        touchNew(id)
        applyNewEntryIgnore(id, rules: rules(of: id))
        addToAncestors(of: id, contribution(id), sign: 1)
        return id
    }

    func rules(of id: NodeID) -> IgnoreRules {
        rootIndex(of: id).map { roots[$0].rules } ?? .none
    }

    /// Frees every child of a directory (recording removals of those that existed when `path`
    /// is given).
    mutating func dropChildren(_ id: NodeID, path: [UInt8]?) {
        for child in childIDs(id) {
            detach(child, recordAs: path.map { childPath(child, under: $0) })
        }
    }

    /// A path was created, written, or had its attributes changed. For a new directory,
    /// `subtree` holds what a scan found in it: all of it becomes `pending` too.
    public mutating func localChange(_ path: [UInt8], kind: EntryKind, identity: FileIdentity? = nil, subtree: ScanTree? = nil) {
        if let root = root(at: path) {
            // The root's own attributes changed.
            if let rec = StateMachine.localChange(nodes[Int(root.node)].record, kind: .dir, identity: nil, gens: &lastGen) {
                update(root.node, rec)
            }
            return
        }
        guard let (parent, name) = locateParent(path) else { return }
        let id = upsert(parent: parent, name: name, kind: kind, identity: identity)
        if let subtree, kind == .dir {
            // One event brought the whole subtree: one generation, so a provider's recursive
            // `SET` with the directory's gen covers it, and a later change inside is newer.
            insert(subtree, under: id, state: .pending, gen: nodes[Int(id)].record.gen)
        }
    }

    /// A path was deleted or moved away: a tombstone for itself, its descendants forgotten.
    public mutating func deleted(_ path: [UInt8]) {
        guard root(at: path) == nil, let id = find(path) else { return }
        let rec = nodes[Int(id)].record
        guard !rec.isTombstone else { return }
        touch(id)
        guard let tomb = StateMachine.deleted(rec, gens: &lastGen) else {
            detach(id, recordAs: path)
            return
        }
        recordRemovals(id, path: path)
        dropChildren(id, path: nil)
        update(id, tomb)
    }

    /// A rename within the watched roots: a tombstone at `from`, and the entry, with
    /// everything below it, `pending` at `to`.
    public mutating func moved(from: [UInt8], to: [UInt8], kind: EntryKind) {
        var subtree: ScanTree? = nil
        if kind == .dir, let id = find(from), nodes[Int(id)].record.kind == .dir {
            subtree = capture(id)
        }
        deleted(from)
        localChange(to, kind: kind, subtree: subtree)
    }

    /// The existing entries below a directory, as a scan would have found them.
    func capture(_ id: NodeID) -> ScanTree {
        var scan = ScanTree()
        var stack: [(NodeID, Int32)] = [(id, -1)]
        while let (dir, parentIndex) = stack.popLast() {
            for child in childIDs(dir) where nodes[Int(child)].record.kind != .gone {
                let index = scan.append(parent: parentIndex, name: name(child), kind: nodes[Int(child)].record.kind)
                if nodes[Int(child)].record.kind == .dir { stack.append((child, index)) }
            }
        }
        return scan
    }

    /// After lost events (queue overflow) or a restart: makes a root match a fresh scan.
    /// New or re-kinded entries become `pending`; vanished ones leave tombstones; a file whose
    /// identity differs from the one recorded at `synced` becomes `pending`.
    public mutating func reconcile(root path: [UInt8], scan: ScanTree) {
        guard let root = root(at: path) else { return }
        var ids = [NodeID](repeating: -1, count: scan.entries.count)
        // By node: a flag per slot of `nodes`, not a Set, which hashed a million inserts and
        // as many lookups on a rescan at start.
        var seen = [Bool](repeating: false, count: nodes.count + scan.entries.count)
        seen[Int(root.node)] = true
        for (i, e) in scan.entries.enumerated() {
            let parent = e.parent < 0 ? root.node : ids[Int(e.parent)]
            let name = scan.name(i)
            let existing = child(parent, name)
            if let id = existing, !nodes[Int(id)].record.isTombstone, nodes[Int(id)].record.kind == e.kind,
               StateMachine.identityUnchanged(nodes[Int(id)].record, identity: e.identity) {
                ids[i] = id
            } else {
                ids[i] = upsert(parent: parent, name: Array(name), kind: e.kind, identity: e.identity)
            }
            // New nodes take a freed slot or the next one: never beyond this size.
            seen[Int(ids[i])] = true
        }
        var vanished: [NodeID] = []
        for id in subtree(root.node) where !seen[Int(id)] && !nodes[Int(id)].record.isTombstone {
            let p = nodes[Int(id)].parent
            // Only the top-most vanished entry: deleting it forgets what was below.
            if p < 0 || seen[Int(p)] { vanished.append(id) }
        }
        for id in vanished where nodes[Int(id)].live {
            deleted(self.path(id))
        }
    }

    /// New ignore rules for a root: entries they now ignore become `ignored`, entries they no
    /// longer ignore become `pending` with a new generation.
    /// Returns the entries that stopped being ignored.
    @discardableResult
    public mutating func setRules(root path: [UInt8], rules: IgnoreRules) -> [NodeID] {
        guard let i = roots.firstIndex(where: { $0.path == path }) else { return [] }
        roots[i].rules = rules
        var unignored: [NodeID] = []
        for id in subtree(roots[i].node) where nodes[Int(id)].live && nodes[Int(id)].parent >= 0 {
            let rec = nodes[Int(id)].record
            let ignore = isIgnoredByRules(id, rules: rules)
            if ignore && rec.state != .ignored {
                if rec.isTombstone {
                    detach(id, recordAs: nil)
                } else {
                    update(id, StateMachine.becameIgnored(rec))
                }
            } else if !ignore && rec.ruleIgnored {
                update(id, StateMachine.stoppedIgnoring(rec, gens: &lastGen))
                unignored.append(id)
            }
        }
        return unignored
    }
}

/// Roots whose scan comes after their registration.
extension StateTree {
    /// Fills a registered root from its scan: every entry `unknown` (or `ignored`), with the
    /// root's generation.
    public mutating func fill(root path: [UInt8], scan: ScanTree) {
        guard let r = root(at: path) else { return }
        insert(scan, under: r.node, state: .unknown, gen: nodes[Int(r.node)].record.gen)
    }

    /// Marks a root's own entry `error` (its directory vanished), with a message.
    public mutating func setRootError(_ path: [UInt8], message: String) {
        guard let r = root(at: path) else { return }
        var rec = nodes[Int(r.node)].record
        rec.state = .error
        rec.message = message
        update(r.node, rec)
    }

    /// A vanished root is back (re-created, or mounted again): no longer in error, and
    /// `pending` like any directory that changed.
    public mutating func clearRootError(_ path: [UInt8]) {
        guard let r = root(at: path), nodes[Int(r.node)].record.state == .error else { return }
        update(r.node, StateMachine.changed(nodes[Int(r.node)].record, kind: .dir, gens: &lastGen))
    }
}

import SyncBadgeCore
import SyncBadgeWatcher

extension Engine {
    /// Applies a batch of watcher events in order, then pushes what changed and writes it
    /// behind (a crash loses nothing: the rescan at start finds it again). Changes queued
    /// together are coalesced: each entry is pushed once per batch, with its last state.
    func apply(_ events: [FileEvent]) {
        for e in events {
            switch e {
            case .changed(let path, let kind, let what):
                localChange(path, kind: kind, what: what == .create ? "create" : "modify")
            case .directoryAppeared(let path, let subtree):
                localChange(path, kind: .dir, what: "create", subtree: subtree)
            case .deleted(let path, _):
                let before = gen(of: path)
                tree.deleted(path)
                if gen(of: path) != before { emitChanged(path, what: "delete") }
            case .moved(let from, let to, let kind):
                let fromInside = tree.root(containing: from) != nil
                let toInside = tree.root(containing: to) != nil
                if fromInside && toInside {
                    let before = gen(of: from)
                    tree.moved(from: from, to: to, kind: kind)
                    // One CHANGED for the entry at its new path (a directory's contents included).
                    if gen(of: from) != before { emitChanged(to, what: "move", from: from) }
                } else if fromInside {
                    tree.deleted(from)
                    emitChanged(from, what: "delete")
                } else if toInside {
                    localChange(to, kind: kind, what: "create")
                }
            case .ignoreFileChanged(let root, let contents):
                if let i = rootInfoIndex(root), !roots[i].scanning {
                    roots[i].ignoreFile = contents
                    let info = roots[i]
                    let unignored = tree.setRules(root: root, rules: rules(for: root, file: contents, defaults: info.ignoreDefaults))
                    for id in unignored where tree.record(id).kind != .gone {
                        emitChanged(tree.path(id), what: "create")
                    }
                }
            case .rootAdded(let root, let token, let result):
                rootAdded(root, token: token, result: result)
            case .rootRescanned(let root, let scan):
                rootRescanned(root, scan)
            case .rootRefreshed(let root, let scan):
                rootRefreshed(root, scan)
            case .rootVanished(let root, let reason):
                if let i = rootInfoIndex(root) {
                    let message = "the root directory was \(reason); it is watched again when it comes back"
                    roots[i].error = message
                    tree.setRootError(root, message: "\(PathBytes.display(root)): \(message)")
                    pushRoot(root)
                }
            case .barrier(let token):
                barrierReached(token)
            case .overflow:
                break
            }
        }
        publishChanges()
        scheduleCommit()
        flushDirty()
    }

    func gen(of path: [UInt8]) -> UInt64? {
        tree.find(path).map { tree.record($0).gen }
    }

    /// A create, write or attribute change. A synced file is stat'ed so that an unchanged
    /// identity (the provider's own write, or metadata noise) changes nothing.
    func localChange(_ path: [UInt8], kind: EntryKind, what: String, subtree: ScanTree? = nil) {
        let id = tree.find(path)
        let before = id.map { tree.record($0) }
        // Only a synced entry with a recorded identity needs the file's current one; one still
        // settling changes whatever its identity says.
        let settled = id.map { !sets.isSettling($0) } ?? true
        let identity = before?.state == .synced && before?.syncedIdentity != nil && settled ? files.lstat(path)?.identity : nil
        tree.localChange(path, kind: kind, identity: identity, subtree: subtree)
        guard let after = gen(of: path), after != before?.gen else { return }
        let created = before == nil || before?.kind == .gone
        emitChanged(path, what: created ? "create" : what)
    }

    /// After lost events: make the root match the scan, then tell every observer of a directory
    /// in it to list again, and every change subscriber to ask for `CHANGES` again.
    func rootRescanned(_ root: [UInt8], _ scan: RootScan) {
        guard let i = rootInfoIndex(root), !roots[i].scanning else { return }
        reconcile(i, scan)
        publishChanges()
        for node in observerIndex.observedNodes where tree.record(node).kind == .dir {
            guard let sessions = observerIndex.observers(of: node) else { continue }
            let p = tree.path(node)
            guard PathBytes.relativeComponents(p, under: root) != nil else { continue }
            for s in sessions.values {
                writeReset(node, to: s)
                markDirty(s)
            }
        }
        resetChanges(root)
    }

    /// A fresh scan with nothing lost elsewhere (a periodic rescan of a root over the watch
    /// limit, or a root that came back): what differs is pushed like any change, and the change
    /// feed is reset only when something did.
    func rootRefreshed(_ root: [UInt8], _ scan: RootScan) {
        guard let i = rootInfoIndex(root), !roots[i].scanning else { return }
        let before = tree.lastGen
        if roots[i].error != nil {
            roots[i].error = nil
            tree.clearRootError(root)
        }
        let wasDegraded = roots[i].degraded
        reconcile(i, scan)
        if tree.lastGen != before { resetChanges(root) }
        if tree.lastGen != before || wasDegraded != scan.degraded { pushRoot(root) }
    }

    /// Makes root `i` match a fresh scan: its ignore file, its rules, its entries, whether it is
    /// fully watched.
    func reconcile(_ i: Int, _ scan: RootScan) {
        let root = roots[i].path
        roots[i].ignoreFile = scan.ignoreFile
        tree.setRules(root: root, rules: rules(for: root, file: scan.ignoreFile, defaults: roots[i].ignoreDefaults))
        tree.reconcile(root: root, scan: scan.scan)
        roots[i].degraded = scan.degraded
    }
}

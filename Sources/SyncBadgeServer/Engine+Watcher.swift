import SyncBadgeCore
import SyncBadgeWatcher

extension Engine {
    /// Applies a batch of watcher events in order, then pushes what changed. Changes queued
    /// together are coalesced: each entry is pushed once per batch, with its last state.
    func apply(_ events: [FileEvent]) {
        for e in events {
            switch e {
            case .changed(let path, let kind, _):
                tree.localChange(path, kind: kind)
            case .directoryAppeared(let path, let subtree):
                tree.localChange(path, kind: .dir, subtree: subtree)
            case .deleted(let path, _):
                tree.deleted(path)
            case .moved(let from, let to, let kind):
                let fromInside = tree.root(containing: from) != nil
                let toInside = tree.root(containing: to) != nil
                if fromInside && toInside {
                    tree.moved(from: from, to: to, kind: kind)
                } else if fromInside {
                    tree.deleted(from)
                } else if toInside {
                    tree.localChange(to, kind: kind)
                }
            case .ignoreFileChanged(let root, let contents):
                if let info = roots.first(where: { $0.path == root }), !info.scanning {
                    tree.setRules(root: root, rules: rules(for: root, file: contents, defaults: info.ignoreDefaults))
                }
            case .rootAdded(let root, let token, let result):
                rootAdded(root, token: token, result: result)
            case .rootRescanned(let root, let scan):
                rootRescanned(root, scan)
            case .rootVanished(let root):
                if let i = rootInfoIndex(root) {
                    roots[i].error = "the root directory vanished"
                    tree.setRootError(root, message: "\(PathBytes.display(root)): the root directory vanished")
                    pushRoot(root)
                }
            case .barrier, .overflow:
                break
            }
        }
        publishChanges()
        flushDirty()
    }

    /// After lost events: make the root match the scan, then tell every observer of a directory
    /// in it to list again.
    func rootRescanned(_ root: [UInt8], _ scan: RootScan) {
        guard let i = rootInfoIndex(root), !roots[i].scanning else { return }
        tree.setRules(root: root, rules: rules(for: root, file: scan.ignoreFile, defaults: roots[i].ignoreDefaults))
        tree.reconcile(root: root, scan: scan.scan)
        roots[i].degraded = scan.degraded
        publishChanges()
        for (node, sessions) in observers where tree.record(node).kind == .dir {
            let p = tree.path(node)
            guard PathBytes.relativeComponents(p, under: root) != nil else { continue }
            for s in sessions.values {
                writeReset(node, to: s)
                markDirty(s)
            }
        }
    }
}

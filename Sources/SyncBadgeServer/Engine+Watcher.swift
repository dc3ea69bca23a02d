import SyncBadgeCore
import SyncBadgeWatchEvents

extension Engine {
    /// Applies a batch of watcher events in order, then pushes what changed and writes it
    /// behind (a crash loses nothing: the rescan at start finds it again). Changes queued
    /// together are coalesced: each entry is pushed once per batch, with its last state.
    func apply(_ events: [WatcherMessage]) {
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
                ignoreFileChanged(root, contents)
            case .rootAdded(let root, let token, let result):
                rootAdded(root, token: token, result: result)
            case .rootRescanned(let root, let scan):
                rootRescanned(root, scan)
            case .rootRefreshed(let root, let scan):
                rootRefreshed(root, scan)
            case .rootVanished(let root, let reason):
                rootVanished(root, reason: reason)
            case .barrier(let token):
                barrierReached(token)
            case .overflow:
                break
            }
        }
        publishChanges()
        // The pushes go out before the commit is drained and handed to the store's thread:
        // an observer waits for neither.
        flushDirty()
        scheduleCommit()
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
}

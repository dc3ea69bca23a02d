import NIOCore
import SyncBadgeCore
import SyncBadgeWatchEvents

extension Hub {
    /// Applies a batch of watcher events in order, then pushes what changed and writes it
    /// behind (a crash loses nothing: the rescan at start finds it again). Changes queued
    /// together are coalesced: each entry is pushed once per batch, with its last state.
    ///
    /// A change to a synced file is compared with the identity the watcher read for its batch
    /// (`WatcherMessage.identities`, which holds until the next: the drain's slices may cut a
    /// batch in two). An event that needs one nobody read (SETs that make files synced, a change that came
    /// without) waits while it is read off the event loop (`fileWork`), and every event after
    /// it waits too (EventQueue): nothing is applied between a look and its use, as when the
    /// loop read the file itself, but the loop goes on answering requests meanwhile.
    func apply(_ events: [WatcherMessage]) {
        ingest.append(events)
        guard !ingest.lookingUp else { return }
        applyQueued()
    }

    private func applyQueued() {
        while let e = ingest.first {
            let (wanted, covering) = identitiesWanted(before: e)
            guard wanted.isEmpty else {
                lookUp(wanted, covering: covering)
                return
            }
            ingest.removeFirst()
            applyEvent(e)
            ingest.applied()
        }
        appliedBatch()
        for w in ingest.takeWaiters() { w.succeed() }
    }

    /// What was applied goes out: pushes first, then the commit.
    private func appliedBatch() {
        publishChanges()
        // The pushes go out before the commit is drained and handed to the store's thread:
        // an observer waits for neither.
        deliver()
        scheduleCommit()
    }

    /// Reads these files' identities off the event loop; the queued events go on once
    /// they are back.
    private func lookUp(_ paths: [[UInt8]], covering events: Int) {
        ingest.lookingUp = true
        appliedBatch()
        let files = ports.files
        fileWork {
            paths.map { files.lstat($0)?.identity }
        }.assumeIsolated().whenComplete { result in
            self.ingest.lookingUp = false
            // The pool stopped (the daemon is on its way out): nothing could be read,
            // as for a file gone.
            let found = (try? result.get()) ?? paths.map { _ in nil }
            self.ingest.read(Dictionary(zip(paths, found), uniquingKeysWith: { a, _ in a }), covering: events)
            self.applyQueued()
        }
    }

    /// The paths whose identity applying `e` reads and that were not read for it, and how many
    /// queued events, from `e`, the read is for. For a change, also the paths the changes
    /// queued after it may read (up to SETs that wait for a barrier, which read theirs once
    /// every event before them is applied), so that a burst of changes costs one trip to the
    /// file pool. A read serves only the events queued when it was asked for: a later
    /// change to the same file needs a fresh one.
    private func identitiesWanted(before e: WatcherMessage) -> (paths: [[UInt8]], covering: Int) {
        guard !ingest.hasRead else { return ([], 0) }
        switch e {
        case .barrier(let token):
            guard let groups = sets.groups(releasedBy: token) else { return ([], 0) }
            var paths: [[UInt8]] = []
            var synced: [SetRequest] = []
            for case .success(let set) in groups.flatMap(\.requests).map(\.set) {
                let read = identifiedBySet(set)
                guard !read.isEmpty else { continue }
                paths += read
                synced.append(set)
            }
            if !synced.isEmpty { compareIdentities(setBy: synced) }
            return (paths, 1)
        default:
            guard let path = Self.localChangePath(e), !ingest.watcherHasRead(path),
                  needsIdentity(path, settlingCounts: true) else { return ([], 0) }
            var paths = [path]
            var covering = 1
            for later in ingest.upcoming.dropFirst().prefix(Self.lookAhead) {
                if case .barrier(let token) = later, sets.groups(releasedBy: token) != nil { break }
                // The next batch comes with the watcher's own reads.
                if case .identities = later { break }
                covering += 1
                // Whether a file is still settling then is not known yet: any synced file.
                if let p = Self.localChangePath(later), !ingest.watcherHasRead(p), needsIdentity(p, settlingCounts: false) { paths.append(p) }
            }
            return (paths, covering)
        }
    }

    /// How many queued events one look covers at most.
    static let lookAhead = 4096

    /// The path a `localChange` of this event looks at, if any.
    static func localChangePath(_ e: WatcherMessage) -> [UInt8]? {
        switch e {
        case .changed(let path, _, _), .directoryAppeared(let path, _): path
        case .moved(_, let to, _): to
        default: nil
        }
    }

    /// Only a synced entry with a recorded identity needs the file's current one; one still
    /// settling changes whatever its identity says.
    func needsIdentity(_ path: [UInt8], settlingCounts: Bool) -> Bool {
        guard let (id, r) = withTree({ t in t.find(path).map { ($0, t.record($0)) } }) else { return false }
        return Self.comparesIdentity(r) && (!settlingCounts || !sets.isSettling(id))
    }

    /// A synced entry with a recorded identity: a change to it counts only if the file's
    /// identity differs.
    static func comparesIdentity(_ r: EntryRecord) -> Bool {
        r.state == .synced && r.syncedIdentity != nil
    }

    /// The files these SETs make synced are compared from now on: the watcher reads the
    /// identities of what its batches change below their roots. Until it does, the hub reads
    /// them itself (`identitiesWanted`).
    func compareIdentities(setBy requests: [SetRequest]) {
        let roots = withTree { t in
            Set(requests.compactMap { t.root(containing: $0.path)?.path })
        }
        for root in roots { watcher?.compareIdentities(under: root) }
    }

    /// Every path a `SET synced` may record the identity of (its entry, or with `recursive=1`
    /// its subtree, tombstones aside): more than it will, never fewer.
    func identifiedBySet(_ set: SetRequest) -> [[UInt8]] {
        guard set.state == .synced else { return [] }
        return withTree { t in
            guard let id = t.find(set.path) else { return [] }
            let nodes = set.recursive ? t.subtree(id) : [id]
            return nodes.filter { t.isLive($0) && !t.record($0).isTombstone }.map { t.path($0) }
        }
    }

    private func applyEvent(_ e: WatcherMessage) {
        switch e {
        case .changed(let path, let kind, let what):
            localChange(path, kind: kind, what: what == .create ? .create : .modify)
        case .directoryAppeared(let path, let subtree):
            localChange(path, kind: .dir, what: .create, subtree: subtree)
        case .deleted(let path, _):
            let before = gen(of: path)
            tree.deleted(path)
            if gen(of: path) != before { emitChanged(path, what: .delete) }
        case .moved(let from, let to, let kind):
            let (fromInside, toInside) = withTree { t in (t.root(containing: from) != nil, t.root(containing: to) != nil) }
            if fromInside && toInside {
                let before = gen(of: from)
                tree.moved(from: from, to: to, kind: kind)
                // One CHANGED for the entry at its new path (a directory's contents included).
                if gen(of: from) != before { emitChanged(to, what: .move, from: from) }
            } else if fromInside {
                tree.deleted(from)
                emitChanged(from, what: .delete)
            } else if toInside {
                localChange(to, kind: kind, what: .create)
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
        case .identities(let found):
            ingest.watcherRead = found
        }
    }

    func gen(of path: [UInt8]) -> UInt64? {
        withTree { t in t.find(path).map { t.record($0).gen } }
    }

    /// A create, write or attribute change. A synced file's identity (read before, `apply`)
    /// is compared, so that an unchanged one (the provider's own write, or metadata noise)
    /// changes nothing.
    func localChange(_ path: [UInt8], kind: EntryKind, what: Changed.What, subtree: ScanTree? = nil) {
        let found = withTree { t in t.find(path).map { ($0, t.record($0)) } }
        let before = found?.1
        // Read for this change (none read: as for a file gone, the change counts).
        let wanted = found.map { Self.comparesIdentity($0.1) && !sets.isSettling($0.0) } ?? false
        let identity = wanted ? ingest.identity(of: path) : nil
        tree.localChange(path, kind: kind, identity: identity, subtree: subtree)
        guard let after = gen(of: path), after != before?.gen else { return }
        let created = before == nil || before?.kind == .gone
        emitChanged(path, what: created ? .create : what)
    }
}

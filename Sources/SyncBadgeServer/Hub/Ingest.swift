import SyncBadgeCore
import SyncBadgeWatchEvents

/// Watcher events on their way into the tree (`Hub.apply`): the queue (EventQueue), whether the
/// identities some of them need are being read, and the file events' changes to the tree. No
/// I/O: `next` says what to do with the event at the head (apply it, or first read identities
/// off the loop), and the hub does it.
///
/// A change to a synced file is compared with the identity the watcher read for its batch
/// (`WatcherMessage.identities`, which holds until the next: the drain's slices may cut a batch
/// in two). An event that needs one nobody read (SETs that make files synced, a change that
/// came without) waits while it is read off the event loop, and every event after it waits
/// too: nothing is applied between a look and its use, but the loop goes on answering requests
/// meanwhile.
struct Ingest {
    var queue = EventQueue()

    /// Reading identities off the loop, or not; nothing is applied while a read is out.
    enum Reading: Equatable {
        case idle
        case lookingUp
    }
    private(set) var reading = Reading.idle

    /// What to do with the queue's head.
    enum Step {
        /// Apply this event (taken off the queue), then call `applied`.
        case apply(WatcherMessage)
        /// Read these files' identities first, for this many queued events; start comparing
        /// identities under these roots (files SETs made synced).
        case lookUp([[UInt8]], covering: Int, compare: [[UInt8]])
        /// Nothing queued, or a read is out.
        case wait
    }

    /// How many queued events one look covers at most.
    static let lookAhead = 4096

    /// `sets` is only read, but taken `inout` as the tree is: passed by value from the hub it
    /// would be copied (a retain and a release of each of its queues) for every event.
    mutating func next(sets: inout SetPipeline<SetGroup, CommitWaiter>, tree: inout StateTree) -> Step {
        guard reading == .idle, let e = queue.first else { return .wait }
        let (wanted, covering, compare) = identitiesWanted(before: e, sets: &sets, tree: &tree)
        guard wanted.isEmpty else {
            reading = .lookingUp
            return .lookUp(wanted, covering: covering, compare: compare)
        }
        queue.removeFirst()
        return .apply(e)
    }

    /// The identities asked for by `.lookUp` are back (nil: no such file).
    mutating func read(_ found: [[UInt8]: FileIdentity?], covering: Int) {
        precondition(reading == .lookingUp, "identities came back that nobody asked for")
        reading = .idle
        queue.read(found, covering: covering)
    }

    /// The path a `localChange` of this event looks at, if any.
    static func localChangePath(_ e: WatcherMessage) -> [UInt8]? {
        switch e {
        case .changed(let path, _, _), .directoryAppeared(let path, _): path
        case .moved(_, let to, _): to
        default: nil
        }
    }

    /// The paths whose identity applying `e` reads and that were not read for it, and how many
    /// queued events, from `e`, the read is for. For a change, also the paths the changes
    /// queued after it may read (up to SETs that wait for a barrier, which read theirs once
    /// every event before them is applied), so that a burst of changes costs one trip to the
    /// file pool. A read serves only the events queued when it was asked for: a later change
    /// to the same file needs a fresh one. For a barrier's SETs, the roots of the files they
    /// make synced, compared from then on.
    private func identitiesWanted(before e: WatcherMessage, sets: inout SetPipeline<SetGroup, CommitWaiter>, tree: inout StateTree)
        -> (paths: [[UInt8]], covering: Int, compare: [[UInt8]]) {
        guard !queue.hasRead else { return ([], 0, []) }
        switch e {
        case .barrier(let token):
            guard let groups = sets.groups(releasedBy: token) else { return ([], 0, []) }
            var paths: [[UInt8]] = []
            var roots = Set<[UInt8]>()
            for case .success(let set) in groups.flatMap(\.requests).map(\.set) {
                let read = Self.identifiedBySet(set, tree: &tree)
                guard !read.isEmpty else { continue }
                paths += read
                if let root = tree.root(containing: set.path)?.path { roots.insert(root) }
            }
            return (paths, 1, Array(roots))
        default:
            guard let path = Self.localChangePath(e), !queue.watcherHasRead(path),
                  Self.needsIdentity(path, settlingCounts: true, sets: &sets, tree: &tree) else { return ([], 0, []) }
            var paths = [path]
            var covering = 1
            for later in queue.upcoming.dropFirst().prefix(Self.lookAhead) {
                if case .barrier(let token) = later, sets.groups(releasedBy: token) != nil { break }
                // The next batch comes with the watcher's own reads.
                if case .identities = later { break }
                covering += 1
                // Whether a file is still settling then is not known yet: any synced file.
                if let p = Self.localChangePath(later), !queue.watcherHasRead(p),
                   Self.needsIdentity(p, settlingCounts: false, sets: &sets, tree: &tree) { paths.append(p) }
            }
            return (paths, covering, [])
        }
    }

    /// Only a synced entry with a recorded identity needs the file's current one; one still
    /// settling changes whatever its identity says.
    private static func needsIdentity(_ path: [UInt8], settlingCounts: Bool, sets: inout SetPipeline<SetGroup, CommitWaiter>, tree: inout StateTree) -> Bool {
        guard let id = tree.find(path) else { return false }
        return comparesIdentity(tree.record(id)) && (!settlingCounts || !sets.isSettling(id))
    }

    /// A synced entry with a recorded identity: a change to it counts only if the file's
    /// identity differs.
    static func comparesIdentity(_ r: EntryRecord) -> Bool {
        r.state == .synced && r.syncedIdentity != nil
    }

    /// Every path a `SET synced` may record the identity of (its entry, or with `recursive=1`
    /// its subtree, tombstones aside): more than it will, never fewer.
    static func identifiedBySet(_ set: SetRequest, tree: inout StateTree) -> [[UInt8]] {
        guard set.state == .synced, let id = tree.find(set.path) else { return [] }
        let nodes = set.recursive ? tree.subtree(id) : [id]
        return nodes.filter { tree.isLive($0) && !tree.record($0).isTombstone }.map { tree.path($0) }
    }

    // MARK: File events

    /// A change for the change feed: `* CHANGED <path> what=<what> [from=<old>]`.
    struct FeedChange {
        var path: [UInt8]
        var what: Changed.What
        var from: [UInt8]?
    }

    /// Applies a file event (`changed`, `directoryAppeared`, `deleted`, `moved`) to the tree:
    /// the change for the feed, if the entry's gen moved. Nil for any other event. Mutating
    /// though it changes nothing here: the hub then reaches its `Ingest` in place, where a
    /// plain call would copy it (a retain and a release of each queue) for every event.
    mutating func applyFileEvent(_ e: WatcherMessage, sets: inout SetPipeline<SetGroup, CommitWaiter>, tree: inout StateTree) -> FeedChange? {
        switch e {
        case .changed(let path, let kind, let what):
            return localChange(path, kind: kind, what: what == .create ? .create : .modify, sets: &sets, tree: &tree)
        case .directoryAppeared(let path, let subtree):
            return localChange(path, kind: .dir, what: .create, subtree: subtree, sets: &sets, tree: &tree)
        case .deleted(let path, _):
            let before = Self.gen(of: path, &tree)
            tree.deleted(path)
            return Self.gen(of: path, &tree) != before ? FeedChange(path: path, what: .delete) : nil
        case .moved(let from, let to, let kind):
            let (fromInside, toInside) = (tree.root(containing: from) != nil, tree.root(containing: to) != nil)
            if fromInside && toInside {
                let before = Self.gen(of: from, &tree)
                tree.moved(from: from, to: to, kind: kind)
                // One CHANGED for the entry at its new path (a directory's contents included).
                return Self.gen(of: from, &tree) != before ? FeedChange(path: to, what: .move, from: from) : nil
            } else if fromInside {
                tree.deleted(from)
                return FeedChange(path: from, what: .delete)
            } else if toInside {
                return localChange(to, kind: kind, what: .create, sets: &sets, tree: &tree)
            }
            return nil
        default:
            return nil
        }
    }

    private static func gen(of path: [UInt8], _ tree: inout StateTree) -> UInt64? {
        tree.find(path).map { tree.record($0).gen }
    }

    /// A create, write or attribute change. A synced file's identity (read before, `next`) is
    /// compared, so that an unchanged one (the provider's own write, or metadata noise) changes
    /// nothing.
    private func localChange(_ path: [UInt8], kind: EntryKind, what: Changed.What, subtree: ScanTree? = nil,
                             sets: inout SetPipeline<SetGroup, CommitWaiter>, tree: inout StateTree) -> FeedChange? {
        let found = tree.find(path).map { ($0, tree.record($0)) }
        let before = found?.1
        // Read for this change (none read: as for a file gone, the change counts).
        let wanted = found.map { Self.comparesIdentity($0.1) && !sets.isSettling($0.0) } ?? false
        let identity = wanted ? queue.identity(of: path) : nil
        tree.localChange(path, kind: kind, identity: identity, subtree: subtree)
        guard let after = Self.gen(of: path, &tree), after != before?.gen else { return nil }
        let created = before == nil || before?.kind == .gone
        return FeedChange(path: path, what: created ? .create : what)
    }
}

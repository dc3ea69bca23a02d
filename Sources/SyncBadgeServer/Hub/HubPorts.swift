#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOPosix
import SyncBadgeCore
import SyncBadgeStore
import SyncBadgeWatchEvents

// The hub's edges, each behind a small protocol: the daemon passes the real ones, and
// HubTests drive the hub on an EmbeddedEventLoop with fakes, with no thread, socket,
// inotify or database.

// The watcher's port, `WatcherControl`, is in SyncBadgeWatchEvents: `Watcher` conforms where it
// is defined, and the daemon is handed a `WatcherStarter` by its executable.

/// The persistent store as the hub uses it.
protocol StateStore: Sendable {
    func roots() throws -> [StoredRoot]
    func entryCount(root: [UInt8]) throws -> Int
    /// A root's entries in path order, in chunks of at most `chunk`.
    func entries(root: [UInt8], chunk: Int, _ body: (StoredEntries) throws -> Void) throws
    func addRoot(_ root: StoredRoot) throws
    func removeRoot(_ path: [UInt8]) throws
    func lastGen() throws -> UInt64
    /// Every stored lease (protocol 1.2, `lease`).
    func leases() throws -> [StoreChanges.Lease]
    /// One transaction holding every batch, in order.
    func commit(_ batches: [StoreChanges]) throws
}

extension Store: StateStore {}

/// A thread of its own that runs blocking work off the event loop (the store's transactions, or
/// `lstat` and the ignore file's write); the result comes back on `loop`.
protocol WorkerThread: Sendable {
    func run<T: Sendable>(on loop: EventLoop, _ body: @escaping @Sendable () throws -> T) -> EventLoopFuture<T>
}

extension NIOThreadPool: WorkerThread {
    func run<T: Sendable>(on loop: EventLoop, _ body: @escaping @Sendable () throws -> T) -> EventLoopFuture<T> {
        runIfActive(eventLoop: loop, body)
    }
}

/// What a path is on disk (lstat): its kind, and the identity recorded when it is synced.
protocol FileInspector: Sendable {
    func lstat(_ path: [UInt8]) -> (kind: EntryKind, identity: FileIdentity)?
}

/// The file system itself.
struct DiskFiles: FileInspector {
    func lstat(_ path: [UInt8]) -> (kind: EntryKind, identity: FileIdentity)? { FileStat.lstat(path) }
}

/// The hub's edges, as it holds them.
struct Ports {
    let store: any StateStore
    /// The one thread that writes to the store.
    let storeThread: any WorkerThread
    /// Where the file system is looked at and written (identities, a path outside the roots,
    /// the ignore file), off the event loop and not behind a store commit: a thread of its own
    /// in the daemon.
    let fileThread: any WorkerThread
    let files: any FileInspector
    /// Wall-clock time, for leases.
    let clock: any WallClock
    var watcher: (any WatcherControl)?
}

/// The contract's times (PROTOCOL.md, 1.2), which tests may shorten.
struct Timers {
    /// How long a client waits for a provider's `ANSWER`.
    var answer = ActionReplies.defaultTimeout
    /// How long a `syncing` stored without a lease is held after a start.
    var restartHoldMs = SyncingReleases.defaultHoldMs
}

/// Wall-clock time in milliseconds since the Unix epoch: leases run in it, across restarts.
protocol WallClock: Sendable {
    func nowMs() -> Int64
}

struct SystemWallClock: WallClock {
    func nowMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}

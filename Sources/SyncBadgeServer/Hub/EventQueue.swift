import NIOCore
import SyncBadgeCore
import SyncBadgeWatchEvents

/// Watcher events waiting to be applied, in order, and the file identities read for them
/// (Ingest): the watcher's, read on its thread for each batch (`WatcherMessage.identities`),
/// or, for events that came without (the soak's injector, a batch read before the watcher was
/// asked to compare their root) and for SETs, read off the event loop. No I/O.
struct EventQueue {
    private var events: [WatcherMessage] = []
    private var head = 0
    /// Path → the identity read for the events at the head of the queue (nil: no such file),
    /// and for how many of them.
    private(set) var identities: [[UInt8]: FileIdentity?] = [:]
    private var readFor = 0

    /// The watcher's identities for the batch being applied.
    var watcherRead: [[UInt8]: FileIdentity?] = [:]

    /// Identities were read for the event at the head.
    var hasRead: Bool { readFor > 0 }

    /// The watcher read this path's identity for the batch being applied.
    func watcherHasRead(_ path: [UInt8]) -> Bool { watcherRead.index(forKey: path) != nil }

    /// The identity of the file at `path` for the change being applied: the watcher's, else
    /// the one read off the event loop; nil for no such file, or none read (the change then
    /// counts).
    func identity(of path: [UInt8]) -> FileIdentity? {
        if let i = watcherRead.index(forKey: path) { return watcherRead.values[i] }
        return identities[path] ?? nil
    }

    mutating func read(_ found: [[UInt8]: FileIdentity?], covering events: Int) {
        identities = found
        readFor = events
    }

    var first: WatcherMessage? { head < events.count ? events[head] : nil }

    /// The queued events, from the first.
    var upcoming: ArraySlice<WatcherMessage> { events[head...] }

    mutating func append(_ more: [WatcherMessage]) {
        if head == events.count {
            events = more
            head = 0
        } else {
            events.append(contentsOf: more)
        }
    }

    /// An event the identities were read for was applied.
    mutating func applied() {
        guard readFor > 0 else { return }
        readFor -= 1
        if readFor == 0 { identities = [:] }
    }

    mutating func removeFirst() {
        head += 1
        if head == events.count {
            events.removeAll(keepingCapacity: false)
            head = 0
        } else if head >= 1024 && head * 2 >= events.count {
            // A queue that never empties (reads out back to back) does not keep what it applied.
            events.removeFirst(head)
            head = 0
        }
    }

    /// Whoever waits for everything queued so far to be applied (the soak's injector, `Daemon.injector`).
    private(set) var waiters: [EventLoopPromise<Void>] = []

    mutating func wait(_ promise: EventLoopPromise<Void>) {
        waiters.append(promise)
    }

    /// Everything queued is applied: the waiters, to tell.
    mutating func takeWaiters() -> [EventLoopPromise<Void>] {
        defer { waiters = [] }
        return waiters
    }
}

import Logging
import NIOCore
import NIOEmbedded
import Synchronization
import SyncBadgeCore
import SyncBadgeStore
import SyncBadgeWatchEvents
@testable import SyncBadgeServer

/// The watcher's side, recorded: tests answer its commands with `Hub.apply`.
final class FakeWatcher: WatcherControl {
    enum Command: Equatable {
        case addRoot([UInt8], token: UInt64)
        case removeRoot([UInt8])
        case barrier(UInt64)
        case compareIdentities([UInt8])
    }

    let commands = Mutex<[Command]>([])

    func addRoot(_ path: [UInt8], token: UInt64, identities: Bool) { commands.withLock { $0.append(.addRoot(path, token: token)) } }
    func removeRoot(_ path: [UInt8]) { commands.withLock { $0.append(.removeRoot(path)) } }
    func barrier(token: UInt64) { commands.withLock { $0.append(.barrier(token)) } }
    func compareIdentities(under root: [UInt8]) { commands.withLock { $0.append(.compareIdentities(root)) } }
    func watches(of root: [UInt8]) -> Int { 1 }
    var totalWatches: Int { 1 }
    var events: Int { 0 }

    /// Barrier tokens asked for and not yet answered, oldest first; forgets them.
    func takeBarriers() -> [UInt64] {
        commands.withLock { cmds in
            let tokens = cmds.compactMap { if case .barrier(let t) = $0 { t } else { nil } }
            cmds.removeAll { if case .barrier = $0 { true } else { false } }
            return tokens
        }
    }

    /// The roots the hub asked to have their changes' identities read, in order.
    var compared: [[UInt8]] {
        commands.withLock { $0.compactMap { if case .compareIdentities(let r) = $0 { r } else { nil } } }
    }

    var lastAddRootToken: UInt64? {
        commands.withLock { $0.compactMap { if case .addRoot(_, let t) = $0 { t } else { nil } }.last }
    }
}

/// An in-memory store that can be made to fail, as a full disk does.
final class FakeStore: StateStore {
    struct State {
        var roots: [StoredRoot] = []
        var committedBatches = 0
        var failedCommits = 0
        var failing = false
        /// Lease rows as committed, by root and path.
        var leases: [[UInt8]: StoreChanges.Lease] = [:]
    }

    struct DiskFull: Error {}

    let state = Mutex(State())

    func roots() throws -> [StoredRoot] { state.withLock { $0.roots } }
    func entryCount(root: [UInt8]) throws -> Int { 0 }
    func entries(root: [UInt8], chunk: Int, _ body: (StoredEntries) throws -> Void) throws {}
    func addRoot(_ root: StoredRoot) throws { state.withLock { $0.roots.append(root) } }
    func removeRoot(_ path: [UInt8]) throws { state.withLock { $0.roots.removeAll { $0.path == path } } }
    func lastGen() throws -> UInt64 { 0 }
    func leases() throws -> [StoreChanges.Lease] {
        state.withLock { $0.leases.values.sorted { $0.relativePath.lexicographicallyPrecedes($1.relativePath) } }
    }
    func commit(_ batches: [StoreChanges]) throws {
        try state.withLock { s in
            if s.failing {
                s.failedCommits += 1
                throw DiskFull()
            }
            s.committedBatches += batches.count
            for l in batches.flatMap(\.leases) {
                let key = l.root + [0] + l.relativePath
                if l.untilMs != nil { s.leases[key] = l } else { s.leases.removeValue(forKey: key) }
            }
        }
    }
}

/// Store work done at once, on the caller's (the embedded loop's) thread.
struct InlineWorkerThread: WorkerThread {
    func run<T: Sendable>(on loop: EventLoop, _ body: @escaping @Sendable () throws -> T) -> EventLoopFuture<T> {
        loop.makeCompletedFuture(withResultOf: body)
    }
}

/// Store work held until a test runs it, as the store's thread would run it later: what the
/// hub hands it must not be done on the event loop meanwhile.
final class QueuedWorkerThread: WorkerThread {
    private let work = Mutex<[@Sendable () -> Void]>([])

    func run<T: Sendable>(on loop: EventLoop, _ body: @escaping @Sendable () throws -> T) -> EventLoopFuture<T> {
        let promise = loop.makePromise(of: T.self)
        work.withLock { $0.append { promise.completeWith(Result { try body() }) } }
        return promise.futureResult
    }

    var pending: Int { work.withLock { $0.count } }

    /// Runs what was handed over so far, in order; the results reach the hub's loop.
    func runAll() {
        for w in work.withLock({ w in defer { w = [] }; return w }) { w() }
    }
}

/// Every path is a file with the same identity.
struct FakeFiles: FileInspector {
    func lstat(_ path: [UInt8]) -> (kind: EntryKind, identity: FileIdentity)? {
        (.file, FileIdentity(inode: 1, size: 1, mtimeNs: 1, ctimeNs: 1))
    }
}

/// Files whose identity a test changes, as a write does; every other path is a file with the
/// same identity.
final class FakeDisk: FileInspector {
    private let written = Mutex<[[UInt8]: Int64]>([:])

    func lstat(_ path: [UInt8]) -> (kind: EntryKind, identity: FileIdentity)? {
        let n = written.withLock { $0[path] ?? 1 }
        return (.file, FileIdentity(inode: 1, size: 1, mtimeNs: n, ctimeNs: n))
    }

    func write(_ path: String) {
        written.withLock { $0[Array(path.utf8), default: 1] += 1 }
    }
}

/// Wall-clock time that moves with the embedded loop's clock, from a fixed start.
struct LoopWallClock: WallClock {
    static let startMs: Int64 = 1_800_000_000_000
    let loop: EmbeddedEventLoop
    func nowMs() -> Int64 {
        Self.startMs + Int64(loop.now.uptimeNanoseconds / 1_000_000)
    }
}

/// The hub on an EmbeddedEventLoop with fakes at every edge: no thread, socket, channel,
/// inotify or database. Clients are lines in and lines out. Time moves only when a test
/// advances it.
final class HubHarness {
    let loop: EmbeddedEventLoop
    let watcher = FakeWatcher()
    let store: FakeStore
    let hub: Hub

    /// Store work held for the test to run, when the harness has it.
    let queued: QueuedWorkerThread?

    init(store: FakeStore = FakeStore(), storeThread: any WorkerThread = InlineWorkerThread(), files: any FileInspector = FakeFiles(),
         loop: EmbeddedEventLoop = EmbeddedEventLoop()) throws {
        self.loop = loop
        self.store = store
        queued = storeThread as? QueuedWorkerThread
        hub = try Hub(loop: loop, store: store, storeThread: storeThread, fileThread: storeThread, files: files,
                            badges: [], privatePaths: [], clock: LoopWallClock(loop: loop), logger: Logger(label: "hub-tests"))
        hub.ports.watcher = watcher
    }

    /// A connection that has not said HELLO.
    func stranger() -> FakeClient {
        FakeClient(hub: hub, loop: loop)
    }

    /// A connection that has said HELLO.
    func connect(role: Role = .viewer, name: String = "test", hello extra: String = "") throws -> FakeClient {
        let client = stranger()
        let answer = try client.request("HELLO proto=1 role=\(role.rawValue) name=\(name)\(extra)")
        guard answer.last?.hasPrefix("OK") == true else { throw HarnessError("HELLO: \(answer)") }
        return client
    }

    /// Registers `/r` holding `names` (files; "p/d/x" is a file in directory d of directory p,
    /// each made on its first name), answering the watcher's scan as it would.
    func addRoot(_ root: String = "/r", files names: [String]) throws {
        let admin = try connect(role: .admin)
        let tag = admin.send("ADD-ROOT \(root)")
        guard let token = watcher.lastAddRootToken else { throw HarnessError("no scan asked for") }
        var scan = ScanTree()
        // By path below the root.
        var dirs: [Substring: Int32] = [:]
        for n in names {
            var parent: Int32 = -1
            var slash = n.firstIndex(of: "/")
            var start = n.startIndex
            while let end = slash {
                let dir = n[..<end]
                if dirs[dir] == nil { dirs[dir] = scan.append(parent: parent, name: Array(n[start..<end].utf8), kind: .dir) }
                parent = dirs[dir]!
                start = n.index(after: end)
                slash = n[start...].firstIndex(of: "/")
            }
            scan.append(parent: parent, name: Array(n[start...].utf8), kind: .file)
        }
        hub.apply([.rootAdded(root: Array(root.utf8), token: token, result: .success(RootScan(scan: scan, ignoreFile: nil, watches: 1, degraded: nil)))])
        while let q = queued, q.pending > 0 { q.runAll() }
        let answer = admin.answer(tag)
        guard answer == ["OK"] else { throw HarnessError("ADD-ROOT: \(answer)") }
    }

    /// The stored leases, as the start-up restore hands them over (Roots.restore).
    func restoreLeases(_ stored: [StoreChanges.Lease]) {
        hub.perform(hub.providers.restore(stored, nowMs: hub.ports.clock.nowMs(), tree: &hub.tree))
    }

    /// Answers every barrier the hub asks for, as the watcher does once the events queued
    /// before it are delivered, until it asks for none (SETs queued behind the first ask for
    /// their own).
    /// Sends a request that waits for the watcher's barrier (a `SET`); its answer.
    func set(_ c: FakeClient, _ line: String) -> [String] {
        let tag = c.send(line)
        passBarriers()
        return c.answer(tag)
    }

    func passBarriers() {
        var tokens = watcher.takeBarriers()
        while !tokens.isEmpty {
            for token in tokens { hub.apply([.barrier(token: token)]) }
            tokens = watcher.takeBarriers()
        }
    }

    /// Barriers answered and held store work run, until neither is left.
    func runUntilIdle() {
        passBarriers()
        while let q = queued, q.pending > 0 {
            q.runAll()
            passBarriers()
        }
    }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Lines as a client reads them: what came (in chunks, as a connection writes them) split at
/// LF, taken by tag or as pushes.
struct ReceivedLines {
    private var partial = ""
    /// Lines received and not yet taken.
    private var inbox: [String] = []

    mutating func received(_ text: String) {
        partial += text
        var complete = partial.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        partial = complete.removeLast()
        inbox += complete
    }

    /// Every line received and not yet taken.
    mutating func all() -> [String] {
        defer { inbox = [] }
        return inbox
    }

    /// The lines received so far for `tag`, without it.
    mutating func answer(_ tag: String) -> [String] {
        let mine = inbox.filter { $0.hasPrefix(tag + " ") }
        inbox.removeAll { $0.hasPrefix(tag + " ") }
        return mine.map { String($0.dropFirst(tag.count + 1)) }
    }

    /// Pushes received so far (`* ...`), without the star.
    mutating func pushes() -> [String] {
        let mine = inbox.filter { $0.hasPrefix("* ") }
        inbox.removeAll { $0.hasPrefix("* ") }
        return mine.map { String($0.dropFirst(2)) }
    }
}

/// One client, with no channel: its reads go to the hub as a session hands them over (the
/// same LineReader), and the hub's output comes back here as the outbox hands it out.
final class FakeClient: ClientConnection {
    let hub: Hub
    private(set) var id: Int
    let loop: EmbeddedEventLoop
    private var reader = LineReader()
    private var received = ReceivedLines()
    private var nextTag = 1
    /// The hub closed it (`BYE`), or the peer went away.
    private(set) var isOpen = true

    init(hub: Hub, loop: EmbeddedEventLoop) {
        self.hub = hub
        self.loop = loop
        id = 0
        id = hub.opened(peerPID: 1, connection: self)
    }

    // MARK: The hub's side (ClientConnection)

    func write(_ chunk: ByteBuffer) {
        received.received(String(buffer: chunk))
    }

    /// As a channel does, the connection's end reaches the hub on a later turn of the loop.
    func close() {
        guard isOpen else { return }
        isOpen = false
        let (hub, id) = (hub, id)
        loop.execute { hub.closed(id) }
    }

    // MARK: The client's side

    /// Sends one request line (tag added); returns the tag.
    @discardableResult
    func send(_ request: String) -> String {
        let tag = "t\(nextTag)"
        nextTag += 1
        write("\(tag) \(request)\n")
        return tag
    }

    /// Raw bytes, as one read: framed as a session frames them.
    func write(_ bytes: String) {
        guard isOpen else { return }
        reader.read(ByteBuffer(string: bytes), line: { hub.received($0, from: id) }, tooLong: { hub.tooLong(id) })
        hub.readComplete(id)
    }

    /// The client reads its output too slowly (false), or again (true): the connection's
    /// writability, as a channel reports it.
    func setWritable(_ writable: Bool) {
        hub.writabilityChanged(id, writable: writable)
    }

    /// Every line received and not yet taken.
    func lines() -> [String] { received.all() }

    /// Sends a request; its answer's lines, without the tag. Pushes stay for `pushes()`.
    func request(_ request: String) throws -> [String] {
        let tag = send(request)
        return answer(tag)
    }

    /// The lines received so far for `tag`, without it.
    func answer(_ tag: String) -> [String] { received.answer(tag) }

    /// Pushes received so far (`* ...`), without the star.
    func pushes() -> [String] { received.pushes() }

    /// The peer goes away. The loop runs what is due, as a channel's close makes it.
    func disconnect() {
        isOpen = false
        hub.closed(id)
        loop.run()
    }
}

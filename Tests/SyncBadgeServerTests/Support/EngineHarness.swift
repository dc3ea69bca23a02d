import Logging
import NIOCore
import NIOEmbedded
import Synchronization
import SyncBadgeCore
import SyncBadgeStore
import SyncBadgeWatchEvents
@testable import SyncBadgeServer

/// The watcher's side, recorded: tests answer its commands with `Engine.apply`.
final class FakeWatcher: WatcherControl {
    enum Command: Equatable {
        case addRoot([UInt8], token: UInt64)
        case removeRoot([UInt8])
        case barrier(UInt64)
    }

    let commands = Mutex<[Command]>([])

    func addRoot(_ path: [UInt8], token: UInt64, identities: Bool) { commands.withLock { $0.append(.addRoot(path, token: token)) } }
    func removeRoot(_ path: [UInt8]) { commands.withLock { $0.append(.removeRoot(path)) } }
    func barrier(token: UInt64) { commands.withLock { $0.append(.barrier(token)) } }
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
struct InlineStoreRunner: StoreRunner {
    func run<T: Sendable>(on loop: EventLoop, _ body: @escaping @Sendable () throws -> T) -> EventLoopFuture<T> {
        loop.makeCompletedFuture(withResultOf: body)
    }
}

/// Every path is a file with the same identity.
struct FakeFiles: FileInspector {
    func lstat(_ path: [UInt8]) -> (kind: EntryKind, identity: FileIdentity)? {
        (.file, FileIdentity(inode: 1, size: 1, mtimeNs: 1, ctimeNs: 1))
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

/// The engine on an EmbeddedEventLoop with fakes at every edge: no thread, socket, inotify
/// or database. Time moves only when a test advances it.
final class EngineHarness {
    let loop: EmbeddedEventLoop
    let watcher = FakeWatcher()
    let store: FakeStore
    let engine: Engine

    init(store: FakeStore = FakeStore(), loop: EmbeddedEventLoop = EmbeddedEventLoop()) throws {
        self.loop = loop
        self.store = store
        engine = try Engine(loop: loop, store: store, storeRunner: InlineStoreRunner(), files: FakeFiles(),
                            badges: [], privatePaths: [], clock: LoopWallClock(loop: loop), logger: Logger(label: "engine-tests"))
        engine.watcher = watcher
    }

    /// A connection that has said HELLO.
    func connect(role: String = "viewer", name: String = "test", hello extra: String = "") throws -> FakeClient {
        let session = Session(engine: engine, id: engine.makeSessionID(), peerPID: 1, allocator: ByteBufferAllocator())
        let client = FakeClient(channel: EmbeddedChannel(handler: session, loop: loop))
        let answer = try client.request("HELLO proto=1 role=\(role) name=\(name)\(extra)")
        guard answer.last?.hasPrefix("OK") == true else { throw HarnessError("HELLO: \(answer)") }
        return client
    }

    /// Registers `/r` holding `names` (files), answering the watcher's scan as it would.
    func addRoot(_ root: String = "/r", files names: [String]) throws {
        let admin = try connect(role: "admin")
        let tag = admin.send("ADD-ROOT \(root)")
        guard let token = watcher.lastAddRootToken else { throw HarnessError("no scan asked for") }
        var scan = ScanTree()
        for n in names { scan.append(parent: -1, name: Array(n.utf8), kind: .file) }
        engine.apply([.rootAdded(root: Array(root.utf8), token: token, result: .success(RootScan(scan: scan, ignoreFile: nil, watches: 1, degraded: nil)))])
        let answer = admin.answer(tag)
        guard answer == ["OK"] else { throw HarnessError("ADD-ROOT: \(answer)") }
    }

    /// Answers every barrier the engine asks for, as the watcher does once the events queued
    /// before it are delivered, until it asks for none (SETs queued behind the first ask for
    /// their own).
    func passBarriers() {
        var tokens = watcher.takeBarriers()
        while !tokens.isEmpty {
            for token in tokens { engine.apply([.barrier(token: token)]) }
            tokens = watcher.takeBarriers()
        }
    }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// One client connection: lines in, lines out.
final class FakeClient {
    let channel: EmbeddedChannel
    private var nextTag = 1
    private var partial = ""
    /// Lines received and not yet taken.
    private var inbox: [String] = []

    init(channel: EmbeddedChannel) { self.channel = channel }

    /// Sends one request line (tag added); returns the tag.
    @discardableResult
    func send(_ request: String) -> String {
        let tag = "t\(nextTag)"
        nextTag += 1
        write("\(tag) \(request)\n")
        return tag
    }

    /// Raw bytes, as one read: the session frames them itself.
    func write(_ bytes: String) {
        try? channel.writeInbound(ByteBuffer(string: bytes))
    }

    private func receive() {
        while let buffer = try? channel.readOutbound(as: ByteBuffer.self) {
            partial += String(buffer: buffer)
        }
        var complete = partial.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        partial = complete.removeLast()
        inbox += complete
    }

    /// Every line received and not yet taken.
    func lines() -> [String] {
        receive()
        defer { inbox = [] }
        return inbox
    }

    /// Sends a request; its answer's lines, without the tag. Pushes stay for `pushes()`.
    func request(_ request: String) throws -> [String] {
        let tag = send(request)
        return answer(tag)
    }

    /// The lines received so far for `tag`, without it.
    func answer(_ tag: String) -> [String] {
        receive()
        let mine = inbox.filter { $0.hasPrefix(tag + " ") }
        inbox.removeAll { $0.hasPrefix(tag + " ") }
        return mine.map { String($0.dropFirst(tag.count + 1)) }
    }

    /// Pushes received so far (`* ...`), without the star.
    func pushes() -> [String] {
        receive()
        let mine = inbox.filter { $0.hasPrefix("* ") }
        inbox.removeAll { $0.hasPrefix("* ") }
        return mine.map { String($0.dropFirst(2)) }
    }

    /// The peer goes away. Not `finish()`: that cancels every task scheduled on the shared
    /// loop, the engine's timers included.
    func close() {
        channel.close(promise: nil)
        channel.embeddedEventLoop.run()
    }
}

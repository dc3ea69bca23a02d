#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Logging
import CMalloc
import Dispatch
import NIOCore
import NIOPosix
import Synchronization
import SyncBadgeCore
import SyncBadgeStore
import SyncBadgeWatchEvents

public struct DaemonConfig: Sendable {
    public var socketPath: String
    public var stateDirectory: String
    public var badgesDirectory: String
    /// A listening socket inherited through systemd's `LISTEN_FDS` convention.
    public var inheritedSocket: Int32?
    /// The contract's times (PROTOCOL.md 1.2), shorter only in tests: how long an `ACTION ...
    /// reply=1` waits for its answer, and how long a stored `syncing` is held after a start.
    public var answerTimeoutMs: Int64 = 10_000
    public var restartHoldMs: Int64 = SyncingReleases.defaultHoldMs

    public init(socketPath: String, stateDirectory: String, badgesDirectory: String, inheritedSocket: Int32? = nil) {
        self.socketPath = socketPath
        self.stateDirectory = stateDirectory
        self.badgesDirectory = badgesDirectory
        self.inheritedSocket = inheritedSocket
    }
}

public enum DaemonError: Error, CustomStringConvertible {
    case socketDirectory(String)
    case alreadyRunning(String)
    case badges(String)

    public var description: String {
        switch self {
        case .socketDirectory(let why): why
        case .alreadyRunning(let path): "a daemon already answers on \(path)"
        case .badges(let why): why
        }
    }
}

/// `syncbadged`: the socket server, the watcher and the store, until asked to stop; then it
/// says goodbye to every client.
public final class Daemon {
    /// Process-wide glibc malloc settings for a daemon that registers big trees and then runs
    /// for months; executables call this first, like a logging bootstrap. Registering builds
    /// large transient arrays (the scan, the store's row batches) on several threads. By
    /// default glibc raises its mmap threshold to the largest block freed, so later big
    /// arrays come from the heap and their pages stay resident after they are freed, and it
    /// gives each thread its own arena, where one thread's freed pages cannot serve another.
    /// A fixed 128 KiB mmap and trim threshold and two arenas: RSS per entry after
    /// registering 110,011 entries 395 -> 249 bytes, registration time unchanged
    /// (PERFORMANCE.md, "Memory per entry").
    public static func tuneAllocator() {
        mallopt(M_ARENA_MAX, 2)
        mallopt(M_MMAP_THRESHOLD, 128 * 1024)
        mallopt(M_TRIM_THRESHOLD, 128 * 1024)
    }

    let config: DaemonConfig
    let logger: Logger
    let group: MultiThreadedEventLoopGroup
    let storeThread: NIOThreadPool
    /// Where the hub looks at and writes files (`lstat`, the ignore file), off the event loop.
    let fileThread: NIOThreadPool
    let hub: NIOLoopBound<Hub>
    let watcher: any StoppableWatcher
    /// Held for the daemon's lifetime (see `SocketDirectory.lock`).
    let lockDescriptor: Int32

    /// `startWatcher` is `Watcher.init`, passed in by the executable (which links the watcher) so that
    /// the server links no libinotifytools.
    public init(config: DaemonConfig, logger: Logger, startWatcher: WatcherStarter) throws {
        self.config = config
        self.logger = logger
        if config.inheritedSocket == nil {
            try SocketDirectory.prepare(forSocket: config.socketPath)
            lockDescriptor = try SocketDirectory.lock(forSocket: config.socketPath)
        } else {
            lockDescriptor = -1
        }
        try FileManager.default.createDirectory(atPath: config.stateDirectory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let badges = try Self.loadBadges(config.badgesDirectory)
        let store = try Store.open(directory: config.stateDirectory, logger: logger)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        self.group = group
        let storeThread = NIOThreadPool(numberOfThreads: 1)
        storeThread.start()
        self.storeThread = storeThread
        let fileThread = NIOThreadPool(numberOfThreads: 1)
        fileThread.start()
        self.fileThread = fileThread
        let loop = group.next()
        let statePath = Array(PathBytes.absolute(Array(config.stateDirectory.utf8), cwd: Array(FileManager.default.currentDirectoryPath.utf8)))
        let hub = try loop.submit {
            NIOLoopBound(try Hub(loop: loop, store: store, storeThread: storeThread, fileThread: fileThread, badges: badges, privatePaths: [statePath],
                                    timers: Timers(answer: .milliseconds(config.answerTimeoutMs), restartHoldMs: config.restartHoldMs),
                                    logger: logger), eventLoop: loop)
        }.wait()
        self.hub = hub
        // Before any socket: libinotifytools selects on its descriptor, which must stay below 1024.
        let inbox = EventInbox()
        self.watcher = try startWatcher(Array(config.stateDirectory.utf8), logger) { events in
            if inbox.post(events) { hub.eventLoop.execute { Self.drain(inbox, into: hub) } }
        }
        let watcher = self.watcher
        try loop.submit { hub.value.ports.watcher = watcher }.wait()
        try Roots.restore(from: store, into: hub)
    }

    /// Applies a slice of the watcher's backlog, then yields to the sockets before the next:
    /// in an event storm, requests are still answered between slices.
    static func drain(_ inbox: EventInbox, into hub: NIOLoopBound<Hub>) {
        let (events, more) = inbox.take(max: EventInbox.slice)
        hub.value.apply(events)
        if more { hub.eventLoop.execute { drain(inbox, into: hub) } }
    }

    static func loadBadges(_ dir: String) throws -> [Badge] {
        let manifest = dir + "/badges.tsv"
        guard let text = try? String(contentsOfFile: manifest, encoding: .utf8) else {
            throw DaemonError.badges("cannot read the badge manifest \(manifest)")
        }
        do {
            let abs = PathBytes.absolute(Array(dir.utf8), cwd: Array(FileManager.default.currentDirectoryPath.utf8))
            return try BadgeManifest.parse(text, directory: abs)
        } catch {
            throw DaemonError.badges("\(manifest): \(error)")
        }
    }

    /// Serves until `waitForStop` returns, then says goodbye to every client and stops.
    ///
    /// No Swift Concurrency here or anywhere in the daemon: on Linux its executor is
    /// libdispatch's worker pool, which arms a monitor timer that wakes the process every second
    /// for good once a worker thread exists, and an idle daemon must not wake at all.
    public func run(waitForStop: () -> Void) throws {
        let hub = self.hub
        let uid = getuid()
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 512)
            // A client that shuts down its writing side (`printf ... | socat`) still gets every
            // answer, and pushes, until it closes.
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .childChannelOption(ChannelOptions.writeBufferWaterMark, value: .init(low: 256 * 1024, high: Session.outputHighWater))
            .childChannelInitializer { channel in
                Self.peerCredentials(channel).flatMapThrowing { cred in
                    guard let cred, cred.uid == uid else {
                        // Said once the channel is active: a write from here would be lost.
                        try channel.pipeline.syncOperations.addHandler(Refuse())
                        return
                    }
                    let session = Session(hub: hub.value, peerPID: cred.pid)
                    try channel.pipeline.syncOperations.addHandler(session)
                }
            }
        let server: Channel
        if let fd = config.inheritedSocket {
            server = try bootstrap.withBoundSocket(fd).wait()
            logger.info("serving the inherited socket", metadata: ["fd": "\(fd)"])
        } else {
            server = try bootstrap.bind(unixDomainSocketPath: config.socketPath, cleanupExistingSocketFile: true).wait()
            chmod(config.socketPath, 0o600)
            logger.info("listening", metadata: ["socket": "\(config.socketPath)"])
        }

        waitForStop()

        logger.info("shutting down")
        // No new connections first: a client told goodbye that reconnects at once must reach
        // the next daemon, not this one on its way out.
        try? server.close().wait()
        try hub.eventLoop.submit { hub.value.shutdown() }.wait()
        watcher.shutdown()
        // What changed after the commit under way (a registration's rows, changes that came in
        // while it ran) is written too, so the next start restores it instead of rescanning
        // for it. Bounded: a store that keeps failing is not waited for.
        let flushed = DispatchSemaphore(value: 0)
        let logger = self.logger
        hub.eventLoop.execute {
            hub.value.scheduleCommit(.call { result in
                if case .failure(let e) = result {
                    logger.error("stopping with changes not stored", metadata: ["error": "\(e)"])
                }
                flushed.signal()
            })
        }
        if flushed.wait(timeout: .now() + Self.finalCommitTimeout) == .timedOut {
            logger.warning("stopping with changes not stored: the store did not take them in time")
        }
        if config.inheritedSocket == nil {
            unlink(config.socketPath)
            close(lockDescriptor)
        }
        try storeThread.syncShutdownGracefully()
        try fileThread.syncShutdownGracefully()
        try group.syncShutdownGracefully()
    }

    /// How long a stop waits for the last changes to be stored (systemd's default stop timeout
    /// is 90 s; a million rows take about 20 s here).
    static let finalCommitTimeout: DispatchTimeInterval = .seconds(60)

    /// A peer of another user: told so, then closed once what it sent is read (closing with
    /// its request unread would reset the connection before it reads the goodbye), or after
    /// two seconds if it sends nothing.
    final class Refuse: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer

        func channelActive(context: ChannelHandlerContext) {
            var bye = context.channel.allocator.buffer(capacity: 16)
            bye.writeString("* BYE forbidden\n")
            context.writeAndFlush(NIOAny(bye), promise: nil)
            let channel = context.channel
            context.eventLoop.scheduleTask(in: .seconds(2)) { channel.close(promise: nil) }
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

        func channelReadComplete(context: ChannelHandlerContext) {
            context.close(promise: nil)
        }
    }

    /// `struct ucred`, which Glibc's Swift module hides behind `_GNU_SOURCE`: same layout.
    struct PeerCredentials: Sendable {
        var pid: Int32
        var uid: UInt32
        var gid: UInt32
    }

    /// `SO_PEERCRED` of a Unix socket peer.
    static func peerCredentials(_ channel: Channel) -> EventLoopFuture<PeerCredentials?> {
        guard let provider = channel as? SocketOptionProvider else {
            return channel.eventLoop.makeSucceededFuture(nil)
        }
        let future: EventLoopFuture<PeerCredentials> = provider.unsafeGetSocketOption(
            level: NIOBSDSocket.OptionLevel(rawValue: SOL_SOCKET), name: NIOBSDSocket.Option(rawValue: SO_PEERCRED))
        return future.map { Optional($0) }.recover { _ -> PeerCredentials? in nil }
    }
}

/// Watcher events waiting for the event loop, in order. One drain task is scheduled at a
/// time however many batches arrive, so a storm never floods the loop's task queue.
final class EventInbox: Sendable {
    static let slice = 2048
    private let state = Mutex<(events: CircularBuffer<WatcherMessage>, scheduled: Bool)>((CircularBuffer<WatcherMessage>(initialCapacity: 1024), false))

    /// Queues events; true when the caller must schedule a drain.
    func post(_ events: [WatcherMessage]) -> Bool {
        state.withLock { s in
            s.events.append(contentsOf: events)
            if s.scheduled { return false }
            s.scheduled = true
            return true
        }
    }

    /// Up to `max` events, oldest first; `more` when a further drain is due.
    func take(max: Int) -> (events: [WatcherMessage], more: Bool) {
        state.withLock { s in
            let n = min(max, s.events.count)
            var out: [WatcherMessage] = []
            out.reserveCapacity(n)
            for _ in 0..<n { out.append(s.events.removeFirst()) }
            if s.events.isEmpty { s.scheduled = false }
            return (out, s.scheduled)
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import SyncBadgeCore
import SyncBadgeStore
import SyncBadgeWatcher

public struct DaemonConfig: Sendable {
    public var socketPath: String
    public var stateDirectory: String
    public var badgesDirectory: String
    /// A listening socket inherited through systemd's `LISTEN_FDS` convention.
    public var inheritedSocket: Int32?

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

/// `syncbadged` as a service: the socket server, the watcher and the store, until a graceful
/// shutdown says goodbye to every client.
public final class Daemon: Service {
    let config: DaemonConfig
    let logger: Logger
    let group: MultiThreadedEventLoopGroup
    let engine: NIOLoopBound<Engine>
    let watcher: Watcher
    /// Held for the daemon's lifetime (see `SocketDirectory.lock`).
    let lockDescriptor: Int32

    public init(config: DaemonConfig, logger: Logger) throws {
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
        let loop = group.next()
        let statePath = Array(PathBytes.absolute(Array(config.stateDirectory.utf8), cwd: Array(FileManager.default.currentDirectoryPath.utf8)))
        let engine = try loop.submit {
            NIOLoopBound(try Engine(loop: loop, store: store, badges: badges, privatePaths: [statePath], logger: logger), eventLoop: loop)
        }.wait()
        self.engine = engine
        // Before any socket: libinotifytools selects on its descriptor, which must stay below 1024.
        self.watcher = try Watcher(controlDirectory: Array(config.stateDirectory.utf8), logger: logger) { events in
            engine.eventLoop.execute { engine.value.apply(events) }
        }
        let watcher = self.watcher
        try loop.submit {
            engine.value.watcher = watcher
            try engine.value.loadStoredRoots()
        }.wait()
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

    public func run() async throws {
        let engine = self.engine
        let uid = getuid()
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 512)
            // A client that shuts down its writing side (`printf ... | socat`) still gets every
            // answer, and pushes, until it closes.
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .childChannelOption(ChannelOptions.writeBufferWaterMark, value: .init(low: 256 * 1024, high: Session.outputHighWater))
            .childChannelInitializer { channel in
                Self.peerCredentials(channel).flatMap { cred in
                    guard let cred, cred.uid == uid else {
                        var bye = channel.allocator.buffer(capacity: 16)
                        bye.writeString("* BYE forbidden\n")
                        return channel.writeAndFlush(bye).flatMap { channel.close() }
                    }
                    return channel.eventLoop.makeCompletedFuture {
                        let e = engine.value
                        let session = Session(engine: e, id: e.makeSessionID(), peerPID: cred.pid, allocator: channel.allocator)
                        try channel.pipeline.syncOperations.addHandlers([
                            ByteToMessageHandler(LineFrameDecoder()), session,
                        ])
                    }
                }
            }
        let server: Channel
        if let fd = config.inheritedSocket {
            server = try await bootstrap.withBoundSocket(fd).get()
            logger.info("serving the inherited socket", metadata: ["fd": "\(fd)"])
        } else {
            server = try await bootstrap.bind(unixDomainSocketPath: config.socketPath, cleanupExistingSocketFile: true).get()
            chmod(config.socketPath, 0o600)
            logger.info("listening", metadata: ["socket": "\(config.socketPath)"])
        }

        try? await gracefulShutdown()

        logger.info("shutting down")
        try await engine.eventLoop.submit { engine.value.shutdown() }.get()
        try? await server.close()
        watcher.shutdown()
        if config.inheritedSocket == nil {
            unlink(config.socketPath)
            close(lockDescriptor)
        }
        try await group.shutdownGracefully()
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

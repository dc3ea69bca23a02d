#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import Synchronization

/// Why the tunnel closed a connection without relaying it.
public enum TunnelFailure: Error, Equatable, CustomStringConvertible {
    /// The server is not the one whose certificate is pinned, or it speaks no TLS we take.
    case untrusted(String)
    /// Nothing answers, or the pinned certificate cannot be read (yet).
    case unreachable(String)

    public var description: String {
        switch self { case .untrusted(let s), .unreachable(let s): s }
    }
}

/// A private plain-text door to a TLS server whose certificate is pinned: Syncthing's HTTPS GUI.
///
/// BoringSSL takes no self-signed certificate without `keyCertSign` (which is what Syncthing
/// generates for its GUI) as a trust anchor, and AsyncHTTPClient has no verification callback
/// (its issue #285), so AsyncHTTPClient cannot pin the certificate itself. It talks plain HTTP
/// to this tunnel's Unix socket instead (`http+unix://`), in a fresh 0700 directory, and the
/// tunnel relays the bytes unchanged to the server through `NIOSSLClientHandler`, whose
/// verification callback accepts the handshake only when the server's certificate is, byte for
/// byte (DER), the one in `certificateFile`. The file is read again for every connection, so a
/// certificate that Syncthing regenerates is trusted from the next connection on.
///
/// It is a byte relay, not an HTTP client: what goes through it is AsyncHTTPClient's.
public final class PinnedTLSTunnel: Sendable {
    /// Where the tunnel lives, mode 0700, made by `init` and removed by `shutdown`.
    public let directory: String
    /// The tunnel's socket, inside `directory`; it listens from the first `start`.
    public let socketPath: String
    public let certificateFile: String
    let target: SyncthingEndpoint
    let logger: Logger
    let group: any EventLoopGroup
    /// Reads the certificate file for each connection, off the event loops.
    let threadPool: NIOThreadPool
    let sslContext: NIOSSLContext
    let state = Mutex<State>(State())

    struct State {
        var server: EventLoopFuture<any Channel>?
        var closed = false
        /// Why the last connection failed to reach the server; cleared by a good handshake.
        var lastFailure: TunnelFailure?
    }

    /// `target`: the TLS server (a TCP host:port or a Unix socket). `parent`: where the
    /// tunnel's private directory is made ($XDG_RUNTIME_DIR, or the temporary directory).
    public init(target: SyncthingEndpoint, certificateFile: String, parent: String, logger: Logger,
                group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, threadPool: NIOThreadPool = .singleton) throws {
        var template = Array((parent + "/syncbadge-syncthing.XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw TunnelFailure.unreachable("cannot make a private directory in \(parent): \(String(cString: strerror(errno)))")
        }
        directory = String(cString: made)
        socketPath = directory + "/tls.sock"
        self.certificateFile = certificateFile
        self.target = target
        self.logger = logger
        self.group = group
        self.threadPool = threadPool
        var tls = TLSConfiguration.makeClientConfiguration()
        // Verification is on (a callback is only called when it is), and the callback below
        // replaces BoringSSL's: no root is trusted, only the pinned certificate.
        tls.certificateVerification = .noHostnameVerification
        tls.trustRoots = .certificates([])
        do {
            sslContext = try NIOSSLContext(configuration: tls)
        } catch {
            rmdir(directory)
            throw TunnelFailure.unreachable("cannot set up TLS: \(error)")
        }
    }

    /// Listens on `socketPath` (once; later calls wait for the same bind).
    public func start() async throws {
        let future = state.withLock { s -> EventLoopFuture<any Channel>? in
            guard !s.closed else { return nil }
            if let f = s.server { return f }
            logger.debug("TLS tunnel at \(socketPath) to \(target), trusting only \(certificateFile)")
            let f = ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 64)
                // Nothing is read from AsyncHTTPClient until the server's side is connected.
                .childChannelOption(.autoRead, value: false)
                .childChannelInitializer { [self] inbound in relay(inbound) }
                .bind(unixDomainSocketPath: socketPath)
            s.server = f
            return f
        }
        guard let future else { throw TunnelFailure.unreachable("the TLS tunnel is shut down") }
        do {
            _ = try await future.get()
        } catch {
            throw TunnelFailure.unreachable("cannot listen on \(socketPath): \(error)")
        }
    }

    /// Why the latest failed connection was closed unrelayed; nil again after a good handshake.
    public var lastFailure: TunnelFailure? { state.withLock { $0.lastFailure } }

    /// Stops listening and removes the socket and the directory.
    public func shutdown() async {
        let server = state.withLock { s -> EventLoopFuture<any Channel>? in
            s.closed = true
            return s.server
        }
        if let channel = try? await server?.get() { try? await channel.close() }
        unlink(socketPath)
        rmdir(directory)
    }

    func record(_ failure: TunnelFailure?) {
        state.withLock { $0.lastFailure = failure }
        if let failure { logger.debug("TLS tunnel to \(target): \(failure)") }
    }

    /// One connection from AsyncHTTPClient: reads the pinned certificate, connects to the
    /// server through TLS and, once connected, relays both ways. Called on `inbound`'s event loop.
    func relay(_ inbound: any Channel) -> EventLoopFuture<Void> {
        let loop = inbound.eventLoop
        let file = certificateFile
        // On the thread pool: a read of a slow (or hung) file system would stall every other
        // connection this event loop serves.
        return threadPool.runIfActive(eventLoop: loop) { try Self.pin(file) }
            .flatMapError { [self] error in
                let failure = TunnelFailure.unreachable("cannot load \(file): \(error)")
                record(failure)
                return loop.makeFailedFuture(failure)
            }
            .flatMap { [self] pinned in relay(inbound, pinned: pinned) }
    }

    /// The DER bytes of the first certificate in a PEM file.
    static func pin(_ file: String) throws -> [UInt8] {
        guard let certificate = try NIOSSLCertificate.fromPEMFile(file).first else {
            throw TunnelFailure.unreachable("no certificate in it")
        }
        return try certificate.toDERBytes()
    }

    func relay(_ inbound: any Channel, pinned: [UInt8]) -> EventLoopFuture<Void> {
        let loop = inbound.eventLoop
        let connect: (ClientBootstrap) -> EventLoopFuture<any Channel>
        switch target {
        case .tcp(let hostPort, _):
            guard let colon = hostPort.lastIndex(of: ":"), let port = Int(hostPort[hostPort.index(after: colon)...]) else {
                let failure = TunnelFailure.unreachable("no port in \(hostPort)")
                record(failure)
                return loop.makeFailedFuture(failure)
            }
            var host = String(hostPort[..<colon])
            if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            connect = { $0.connect(host: host, port: port) }
        case .unix(let path, _):
            connect = { $0.connect(unixDomainSocketPath: path) }
        }
        let (here, there) = RelayHandler.pair()
        let toServer = NIOLoopBound(there, eventLoop: loop)
        let toClient = NIOLoopBound(here, eventLoop: loop)
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(.seconds(1))
            .channelInitializer { [self] outbound in
                do {
                    let watch = HandshakeWatch(tunnel: self)
                    let certificateFile = self.certificateFile
                    // No SNI: the address may be an IP literal, and Syncthing serves one certificate.
                    let tls = try NIOSSLClientHandler(context: sslContext, serverHostname: nil, customVerificationCallback: { presented, promise in
                        // The leaf, exactly: nothing else it presents (or that chains to it) counts.
                        if let leaf = presented.first, (try? leaf.toDERBytes()) == pinned {
                            promise.succeed(.certificateVerified)
                        } else {
                            watch.refused = "the TLS certificate it presented is not the one in \(certificateFile)"
                            promise.succeed(.failed)
                        }
                    })
                    try outbound.pipeline.syncOperations.addHandlers(tls, watch, toServer.value)
                    return outbound.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return outbound.eventLoop.makeFailedFuture(error)
                }
            }
        // The accepted connection is registered (and read) only once this future succeeds; a
        // failed one closes it, which AsyncHTTPClient sees, and `lastFailure` says why.
        return connect(bootstrap).flatMapError { [self] error in
            toClient.value.unpair()
            let failure = TunnelFailure.unreachable("cannot connect: \(error)")
            record(failure)
            return loop.makeFailedFuture(failure)
        }.flatMap { outbound in
            do {
                try inbound.pipeline.syncOperations.addHandler(toClient.value)
            } catch {
                outbound.close(promise: nil)
                return loop.makeFailedFuture(error)
            }
            return inbound.setOption(.autoRead, value: true)
        }
    }
}

/// Reports how the handshake with the server went: a good one clears the tunnel's last failure,
/// a failed one (the pin refused, or no TLS we take) records it as `untrusted`. Errors after the
/// handshake (Syncthing stopping mid-connection) are only the end of that connection.
final class HandshakeWatch: ChannelInboundHandler {
    typealias InboundIn = NIOAny
    let tunnel: PinnedTLSTunnel
    var done = false
    /// Set by the verification callback, on this event loop, when the pin refused the server.
    var refused: String?

    /// A server that takes the connection but never answers the handshake (a stopped or hung
    /// Syncthing) is given up: NIOSSL has no handshake timeout, and each such connection would
    /// otherwise keep its descriptor and both relay handlers for good.
    static let handshakeTimeout: TimeAmount = .seconds(10)
    private var deadline: Scheduled<Void>?

    init(tunnel: PinnedTLSTunnel) { self.tunnel = tunnel }

    func handlerAdded(context: ChannelHandlerContext) {
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: Self.handshakeTimeout) { [self] in
            guard !done else { return }
            done = true
            tunnel.record(.unreachable("no TLS handshake within \(Self.handshakeTimeout.nanoseconds / 1_000_000_000) s"))
            context.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted? = event as? TLSUserEvent, !done {
            done = true
            deadline?.cancel()
            deadline = nil
            tunnel.record(nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !done {
            done = true
            if let refused {
                tunnel.record(.untrusted(refused))
            } else if case .handshakeFailed? = error as? NIOSSLError {
                tunnel.record(.untrusted("the TLS handshake failed: \(error)"))
            } else {
                tunnel.record(.unreachable("\(error)"))
            }
        }
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !done {
            done = true
            tunnel.record(.unreachable("the server closed the connection during the TLS handshake"))
        }
        context.fireChannelInactive()
    }
}

@available(*, unavailable)
extension HandshakeWatch: Sendable {}

/// One side of a relay between two channels on one event loop: what one reads, the other
/// writes, unchanged. A side reads only while the other can write (backpressure), and when one
/// closes, the other closes once what it was given is written.
final class RelayHandler: ChannelDuplexHandler {
    typealias InboundIn = NIOAny
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    private var partner: RelayHandler?
    private var context: ChannelHandlerContext?
    private var pendingRead = false

    private init() {}

    static func pair() -> (RelayHandler, RelayHandler) {
        let a = RelayHandler(), b = RelayHandler()
        a.partner = b
        b.partner = a
        return (a, b)
    }

    /// For a pair of which one side never joined a channel: no cycle is left behind.
    func unpair() {
        partner?.partner = nil
        partner = nil
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        // A read the partner held back while this side had no channel yet goes ahead now.
        partner?.partnerBecameWritable()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) { partner?.partnerWrite(data) }
    func channelReadComplete(context: ChannelHandlerContext) { partner?.partnerFlush() }

    func channelInactive(context: ChannelHandlerContext) {
        partner?.partnerClose()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        partner?.partnerClose()
        context.close(promise: nil)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { partner?.partnerBecameWritable() }
        context.fireChannelWritabilityChanged()
    }

    func read(context: ChannelHandlerContext) {
        if partner?.partnerWritable == true {
            context.read()
        } else {
            pendingRead = true
        }
    }

    private func partnerWrite(_ data: NIOAny) { context?.write(data, promise: nil) }
    private func partnerFlush() { context?.flush() }

    private func partnerClose() {
        guard let context else { return }
        // An empty write completes after every write before it: then nothing is cut short.
        let channel = context.channel
        context.writeAndFlush(NIOAny(ByteBuffer())).whenComplete { _ in channel.close(promise: nil) }
    }

    private var partnerWritable: Bool { context?.channel.isWritable ?? false }

    private func partnerBecameWritable() {
        guard pendingRead, let context else { return }
        pendingRead = false
        context.read()
    }
}

@available(*, unavailable)
extension RelayHandler: Sendable {}

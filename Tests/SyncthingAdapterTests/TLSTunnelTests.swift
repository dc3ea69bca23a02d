#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization
import Testing
@testable import SyncthingAdapter

/// HTTPS the way Syncthing serves it: a self-signed certificate whose key usage lacks
/// `keyCertSign`, pinned through `PinnedTLSTunnel`, against a real TLS server on loopback.
@Suite(.timeLimit(.minutes(1)))
struct TLSTunnelTests {
    @Test func thePinnedCertificateIsTrustedAndARequestRoundTrips() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let pinned = try makeSyncthingLikeCertificate(in: dir.path, name: "gui")
        let server = try await TLSTestServer.start(certificate: pinned)
        let endpoint = SyncthingEndpoint.tcp(hostPort: "127.0.0.1:\(server.port)", tls: true)
        let api = try HTTPSyncthingAPI(endpoint: endpoint, apiKey: TLSTestServer.apiKey, certificate: pinned.certificate,
                                       runtimeDirectory: dir.path, logger: Logger(label: "test"))
        let tunnel = try #require(api.tunnel)
        var st = stat()
        #expect(stat(tunnel.directory, &st) == 0 && st.st_mode & 0o777 == 0o700)

        let status = try await api.status()
        #expect(status.myID == "TLS-TEST-ID")
        // The key went through, and Syncthing saw the Host header of a direct connection.
        #expect(server.requests == [.init(uri: "/rest/system/status", apiKey: TLSTestServer.apiKey, host: "127.0.0.1:\(server.port)")])
        // More than a TLS record each way: a long request line, and a long answer.
        try await api.setPaused(folder: String(repeating: "f", count: 40_000), paused: true)
        #expect(server.requests.last?.uri.hasPrefix("/rest/config/folders/fff") == true)

        await api.shutdown()
        #expect(!FileManager.default.fileExists(atPath: tunnel.directory))
        try await server.stop()
    }

    @Test func anotherCertificateIsRefusedUntilThePinnedFileHoldsTheServers() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let served = try makeSyncthingLikeCertificate(in: dir.path, name: "served")
        let other = try makeSyncthingLikeCertificate(in: dir.path, name: "other")
        let server = try await TLSTestServer.start(certificate: served)
        let endpoint = SyncthingEndpoint.tcp(hostPort: "127.0.0.1:\(server.port)", tls: true)
        let api = try HTTPSyncthingAPI(endpoint: endpoint, apiKey: TLSTestServer.apiKey, certificate: other.certificate,
                                       runtimeDirectory: dir.path, logger: Logger(label: "test"))
        do {
            _ = try await api.status()
            Issue.record("a server with another certificate was trusted")
        } catch let SyncthingAPIError.untrusted(why) {
            #expect(why == "https://127.0.0.1:\(server.port): the TLS certificate it presented is not the one in \(other.certificate)")
        }
        // The key never reached the server.
        #expect(server.requests.isEmpty)

        // Syncthing regenerated its certificate: the file is read again for the next connection.
        try FileManager.default.removeItem(atPath: other.certificate)
        try FileManager.default.copyItem(atPath: served.certificate, toPath: other.certificate)
        #expect(try await api.status().myID == "TLS-TEST-ID")
        await api.shutdown()
        try await server.stop()
    }

    /// No certificate yet (Syncthing writes it at its first start): unreachable, to be retried.
    @Test func aMissingCertificateIsUnreachableNotUntrusted() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let served = try makeSyncthingLikeCertificate(in: dir.path, name: "served")
        let server = try await TLSTestServer.start(certificate: served)
        let endpoint = SyncthingEndpoint.tcp(hostPort: "127.0.0.1:\(server.port)", tls: true)
        let api = try HTTPSyncthingAPI(endpoint: endpoint, apiKey: TLSTestServer.apiKey, certificate: dir.path + "/absent.pem",
                                       runtimeDirectory: dir.path, logger: Logger(label: "test"))
        do {
            _ = try await api.status()
            Issue.record("no certificate, yet trusted")
        } catch let SyncthingAPIError.unreachable(why) {
            #expect(why.contains(dir.path + "/absent.pem"))
        }
        #expect(server.requests.isEmpty)
        await api.shutdown()
        try await server.stop()
    }
}

// MARK: Support

/// A fresh directory, removed by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() throws {
        var template = Array((NSTemporaryDirectory() + "/syncthing-tls-test.XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        path = String(cString: made)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

struct CertificateFiles {
    var certificate: String
    var key: String
}

/// A certificate shaped like the one Syncthing generates for its GUI: self-signed, P-384, key
/// usage digitalSignature and keyEncipherment only (no keyCertSign), not a CA.
func makeSyncthingLikeCertificate(in dir: String, name: String) throws -> CertificateFiles {
    let config = dir + "/\(name).cnf"
    try """
        [req]
        distinguished_name = dn
        x509_extensions = ext
        prompt = no
        [dn]
        O = Syncthing
        OU = Automatically Generated
        CN = syncthing
        [ext]
        keyUsage = critical, digitalSignature, keyEncipherment
        extendedKeyUsage = serverAuth, clientAuth
        basicConstraints = critical, CA:FALSE
        subjectAltName = DNS:syncthing
        """.write(toFile: config, atomically: true, encoding: .utf8)
    let files = CertificateFiles(certificate: dir + "/\(name)-cert.pem", key: dir + "/\(name)-key.pem")
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    p.arguments = ["req", "-x509", "-config", config, "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-384", "-nodes",
                   "-days", "2", "-keyout", files.key, "-out", files.certificate]
    p.standardOutput = FileHandle.nullDevice
    p.standardError = FileHandle.nullDevice
    try p.run()
    p.waitUntilExit()
    guard p.terminationStatus == 0 else { throw TLSTestError("openssl req exited \(p.terminationStatus)") }
    return files
}

struct TLSTestError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// A TLS server on 127.0.0.1 speaking just enough of Syncthing's REST API: it records each
/// request, answers `/rest/system/status` (padded past one TLS record) and everything else
/// with `{}`, and refuses a wrong key.
final class TLSTestServer: Sendable {
    static let apiKey = "tls-test-key-42"

    struct Request: Equatable, Sendable {
        var uri: String
        var apiKey: String?
        var host: String?
    }

    let channel: any Channel
    let log: RequestLog

    var port: Int { channel.localAddress?.port ?? 0 }
    var requests: [Request] { log.requests.withLock { $0 } }

    private init(channel: any Channel, log: RequestLog) {
        self.channel = channel
        self.log = log
    }

    static func start(certificate: CertificateFiles) async throws -> TLSTestServer {
        let tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificate.certificate).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: certificate.key, format: .pem)))
        let context = try NIOSSLContext(configuration: tls)
        let log = RequestLog()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Responder(log: log))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return TLSTestServer(channel: channel, log: log)
    }

    func stop() async throws { try await channel.close() }

    final class RequestLog: Sendable {
        let requests = Mutex<[Request]>([])
        func record(_ r: Request) { requests.withLock { $0.append(r) } }
    }

    final class Responder: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let log: RequestLog
        var head: HTTPRequestHead?

        init(log: RequestLog) { self.log = log }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let h): head = h
            case .body: break
            case .end:
                guard let head else { return }
                let key = head.headers.first(name: "X-API-Key")
                log.record(Request(uri: head.uri, apiKey: key, host: head.headers.first(name: "Host")))
                let ok = key == TLSTestServer.apiKey
                let padding = String(repeating: "p", count: 200_000)
                let body = ok && head.uri == "/rest/system/status"
                    ? #"{"myID":"TLS-TEST-ID","startTime":"2024-01-01T00:00:00Z","padding":"\#(padding)"}"# : "{}"
                var headers = HTTPHeaders([("Content-Type", "application/json"), ("Content-Length", "\(body.utf8.count)")])
                headers.add(name: "Connection", value: "keep-alive")
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: ok ? .ok : .forbidden, headers: headers))), promise: nil)
                context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                self.head = nil
            }
        }
    }
}

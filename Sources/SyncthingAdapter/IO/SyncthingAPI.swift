import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOSSL
import Synchronization

/// Syncthing's REST API, as far as the adapter uses it. The loop talks to this protocol only,
/// so that what it does with the answers is testable without a Syncthing.
public protocol SyncthingAPI: Sendable {
    func status() async throws -> SystemStatus
    func config() async throws -> SyncthingConfig
    /// Long-polls `/rest/events` (or `/rest/events/disk`), at most `timeout` seconds.
    /// `limit`: only the last so many (the head of the stream).
    func events(disk: Bool, since: Int, mask: [String], timeout: Int, limit: Int?) async throws -> [SyncthingEvent]
    func file(folder: String, name: String) async throws -> DBFile
    func need(folder: String) async throws -> NeedList
    func remoteNeed(folder: String, device: String) async throws -> RemoteNeedList
    func completion(folder: String, device: String?) async throws -> Completion
    func ignores(folder: String) async throws -> IgnoresReply
    func folderErrors(folder: String) async throws -> FolderErrorList
    func folderStatus(folder: String) async throws -> FolderStatus
    func connections() async throws -> ConnectionsReply
    func scan(folder: String, sub: String?) async throws
    func setPaused(folder: String, paused: Bool) async throws
}

public struct FolderStatus: Codable, Sendable, Equatable {
    public var state: String
    public var error: String?
}

public enum SyncthingAPIError: Error, Equatable, CustomStringConvertible {
    /// 401/403: the API key is not this Syncthing's.
    case unauthorized(String)
    /// Any other answer that is no success.
    case status(Int, String)
    /// Nothing answers (Syncthing is down or the address is wrong).
    case unreachable(String)
    /// The TLS handshake failed: the server is not the one whose certificate is trusted.
    case untrusted(String)

    public var description: String {
        switch self {
        case .unauthorized(let url): "\(url) refused the API key"
        case .status(let code, let url): "\(url) answered HTTP \(code)"
        case .unreachable(let why): why
        case .untrusted(let why): why
        }
    }

    init(_ failure: TunnelFailure, _ endpoint: SyncthingEndpoint) {
        switch failure {
        case .untrusted(let why): self = .untrusted("\(endpoint): \(why)")
        case .unreachable(let why): self = .unreachable("\(endpoint): \(why)")
        }
    }
}

/// The REST API over AsyncHTTPClient: plain HTTP, HTTPS trusting only Syncthing's own GUI
/// certificate, or a Unix socket. Redirects are refused, so the key goes to this address only.
///
/// HTTPS with Syncthing's certificate goes through a `PinnedTLSTunnel`: AsyncHTTPClient speaks
/// plain HTTP to the tunnel's private socket, and the tunnel relays it over TLS to Syncthing,
/// trusting exactly the certificate in `https-cert.pem`.
public final class HTTPSyncthingAPI: SyncthingAPI {
    let endpoint: SyncthingEndpoint
    let apiKey: String
    let logger: Logger
    /// For HTTPS with a pinned certificate; nil otherwise.
    public let tunnel: PinnedTLSTunnel?
    /// Made at the first call: Syncthing writes its certificate at its first start, which may
    /// come after ours.
    let clientBox = Mutex<HTTPClient?>(nil)

    /// `certificate`: Syncthing's `https-cert.pem`, the one certificate trusted for HTTPS (with
    /// none, HTTPS trusts the system's roots and checks the host name). `runtimeDirectory`: where
    /// the tunnel for it gets its private directory.
    public init(endpoint: SyncthingEndpoint, apiKey: String, certificate: String?, runtimeDirectory: String, logger: Logger) throws {
        self.endpoint = endpoint
        self.apiKey = apiKey
        self.logger = logger
        if endpoint.tls, let certificate {
            tunnel = try PinnedTLSTunnel(target: endpoint, certificateFile: certificate, parent: runtimeDirectory, logger: logger)
        } else {
            tunnel = nil
        }
    }

    /// $XDG_RUNTIME_DIR when it is set, or else the temporary directory.
    public static func runtimeDirectory(environment: [String: String]) -> String {
        if let dir = environment["XDG_RUNTIME_DIR"], dir.hasPrefix("/") { return dir }
        if let dir = environment["TMPDIR"], dir.hasPrefix("/") { return dir }
        return "/tmp"
    }

    func client() -> HTTPClient {
        clientBox.withLock { box in
            if let box { return box }
            var tls: TLSConfiguration? = nil
            if endpoint.tls && tunnel == nil {
                // No certificate of Syncthing's to pin (`--url https://…` with no home): the
                // system's roots, and the host name checked.
                tls = TLSConfiguration.makeClientConfiguration()
            }
            // AsyncHTTPClient retries a refused connection until the connect timeout: Syncthing
            // is on this machine, so a second is plenty, and a stopped Syncthing is noticed at once.
            var config = HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow,
                                                  timeout: .init(connect: .seconds(1)))
            config.connectionPool = .init(idleTimeout: .seconds(120))
            let c = HTTPClient(eventLoopGroupProvider: .singleton, configuration: config)
            box = c
            return c
        }
    }

    /// Closes the connections, then the tunnel (removing its socket and directory).
    public func shutdown() async {
        if let c = clientBox.withLock({ $0 }) { try? await c.shutdown() }
        await tunnel?.shutdown()
    }

    /// The request's URL, and the Host header it needs when that is not the URL's host.
    func target(_ path: String, _ query: [(String, String)]) -> (url: String, host: String?) {
        var uri = path
        if !query.isEmpty {
            var allowed = CharacterSet.urlQueryAllowed
            allowed.remove(charactersIn: "&=+/?#")
            uri += "?" + query.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? $0.1)" }.joined(separator: "&")
        }
        // Over a Unix socket the URL's host is the encoded socket path, which Go's server
        // refuses as a Host header (400), and Syncthing's host check wants a local name.
        // Through the tunnel, Syncthing gets the Host header of a direct connection.
        if let tunnel {
            let host: String
            switch endpoint {
            case .tcp(let hostPort, _): host = hostPort
            case .unix: host = "localhost"
            }
            return (URL(httpURLWithSocketPath: tunnel.socketPath, uri: uri)?.absoluteString ?? "", host)
        }
        switch endpoint {
        case .tcp(let host, let tls): return ((tls ? "https://" : "http://") + host + uri, nil)
        case .unix(let socket, let tls):
            let u = tls ? URL(httpsURLWithSocketPath: socket, uri: uri) : URL(httpURLWithSocketPath: socket, uri: uri)
            return (u?.absoluteString ?? "", "localhost")
        }
    }

    func call(_ method: HTTPMethod, _ path: String, _ query: [(String, String)] = [], body: Data? = nil, timeout: Int64 = 30) async throws -> Data {
        let (url, host) = target(path, query)
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "X-API-Key", value: apiKey)
        if let host { request.headers.replaceOrAdd(name: "Host", value: host) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(data: body))
        }
        let response: HTTPClientResponse
        do {
            try await tunnel?.start()
            response = try await client().execute(request, timeout: .seconds(timeout))
        } catch let e as HTTPClientError where e == .deadlineExceeded || e == .readTimeout {
            throw e
        } catch let e as SyncthingAPIError {
            throw e
        } catch let e as TunnelFailure {
            throw SyncthingAPIError(e, endpoint)
        } catch let e as NIOSSLError {
            throw SyncthingAPIError.untrusted("\(endpoint): the TLS handshake failed against the system's roots (\(e))")
        } catch {
            // The tunnel closed AsyncHTTPClient's connection: it knows why.
            if let failure = tunnel?.lastFailure { throw SyncthingAPIError(failure, endpoint) }
            throw SyncthingAPIError.unreachable("\(endpoint): \(error)")
        }
        let bytes = try await response.body.collect(upTo: 256 << 20)
        switch response.status.code {
        case 200..<300: return Data(buffer: bytes)
        case 401, 403: throw SyncthingAPIError.unauthorized(endpoint.description)
        default: throw SyncthingAPIError.status(Int(response.status.code), endpoint.description + path)
        }
    }

    func get<T: Decodable>(_ type: T.Type, _ path: String, _ query: [(String, String)] = [], timeout: Int64 = 30) async throws -> T {
        try JSONDecoder().decode(T.self, from: try await call(.GET, path, query, timeout: timeout))
    }

    public func status() async throws -> SystemStatus { try await get(SystemStatus.self, "/rest/system/status") }
    public func config() async throws -> SyncthingConfig { try await get(SyncthingConfig.self, "/rest/config") }

    public func events(disk: Bool, since: Int, mask: [String], timeout: Int, limit: Int?) async throws -> [SyncthingEvent] {
        var q = [("since", String(since)), ("timeout", String(timeout))]
        if let limit { q.append(("limit", String(limit))) }
        if !mask.isEmpty { q.append(("events", mask.joined(separator: ","))) }
        return try await get([SyncthingEvent].self, disk ? "/rest/events/disk" : "/rest/events", q, timeout: Int64(timeout) + 15)
    }

    public func file(folder: String, name: String) async throws -> DBFile {
        do {
            return try await get(DBFile.self, "/rest/db/file", [("folder", folder), ("file", name)])
        } catch SyncthingAPIError.status(404, _) {
            return DBFile(global: nil, local: nil)
        }
    }

    public func need(folder: String) async throws -> NeedList {
        try await get(NeedList.self, "/rest/db/need", [("folder", folder), ("perpage", "100000")])
    }

    public func remoteNeed(folder: String, device: String) async throws -> RemoteNeedList {
        try await get(RemoteNeedList.self, "/rest/db/remoteneed", [("folder", folder), ("device", device), ("perpage", "100000")])
    }

    public func completion(folder: String, device: String?) async throws -> Completion {
        try await get(Completion.self, "/rest/db/completion", [("folder", folder)] + (device.map { [("device", $0)] } ?? []))
    }

    public func ignores(folder: String) async throws -> IgnoresReply {
        try await get(IgnoresReply.self, "/rest/db/ignores", [("folder", folder)])
    }

    public func folderErrors(folder: String) async throws -> FolderErrorList {
        try await get(FolderErrorList.self, "/rest/folder/errors", [("folder", folder)])
    }

    public func folderStatus(folder: String) async throws -> FolderStatus {
        try await get(FolderStatus.self, "/rest/db/status", [("folder", folder)])
    }

    public func connections() async throws -> ConnectionsReply { try await get(ConnectionsReply.self, "/rest/system/connections") }

    public func scan(folder: String, sub: String?) async throws {
        _ = try await call(.POST, "/rest/db/scan", [("folder", folder)] + (sub.map { [("sub", $0)] } ?? []))
    }

    public func setPaused(folder: String, paused: Bool) async throws {
        _ = try await call(.PATCH, "/rest/config/folders/" + (folder.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? folder), body: Data("{\"paused\":\(paused)}".utf8))
    }
}

import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// rclone's remote control, as far as the adapter uses it. The loop talks to this protocol, so
/// a stand-in answers in tests.
public protocol RcloneRC: Sendable {
    func vfsStats() async throws -> VFSStats
    func coreStats() async throws -> CoreStats
    func transferred() async throws -> CoreTransferred
    /// `vfs/queue`; nil where rclone has no such call (before 1.68).
    func queue() async throws -> VFSQueue?
    func queueSetExpiry(id: Int64, expiry: Double) async throws
    /// `vfs/forget file=`: drops the file from the VFS's directory cache.
    func forget(file: String) async throws
}

public enum RcloneRCError: Error, Equatable, CustomStringConvertible {
    /// Nothing answers at the address.
    case unreachable(String)
    /// 401/403: the user name or password is not the rc's.
    case unauthorized(String)
    /// rclone answered an error (its `error` text).
    case failed(call: String, status: Int, message: String)

    public var description: String {
        switch self {
        case .unreachable(let why): why
        case .unauthorized(let addr): "rclone's remote control at \(addr) refused the user name or password"
        case .failed(let call, let status, let message): "\(call): \(message) (HTTP \(status))"
        }
    }
}

/// The rc over AsyncHTTPClient: `POST http://HOST:PORT/<call>` with a JSON object, basic
/// authentication when a user is given. Redirects are refused, so the password goes to this
/// address only.
public final class HTTPRcloneRC: RcloneRC {
    let address: String
    let authorization: String?
    let client: HTTPClient

    public init(address: String, user: String?, password: String?) {
        self.address = address
        authorization = user.map { "Basic " + Data("\($0):\(password ?? "")".utf8).base64EncodedString() }
        // rclone is on this machine: a refused connection is a stopped rclone, said at once.
        var config = HTTPClient.Configuration(redirectConfiguration: .disallow, timeout: .init(connect: .seconds(1)))
        config.connectionPool = .init(idleTimeout: .seconds(30))
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: config)
    }

    public func shutdown() async {
        try? await client.shutdown()
    }

    struct ErrorReply: Decodable { var error: String }

    /// One call; nil for a 404 whose text says rclone has no such call.
    func call(_ path: String, _ params: [String: Any] = [:], missingIsNil: Bool = false) async throws -> Data? {
        var request = HTTPClientRequest(url: "http://\(address)/\(path)")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        if let authorization { request.headers.add(name: "Authorization", value: authorization) }
        request.body = .bytes(ByteBuffer(data: try JSONSerialization.data(withJSONObject: params)))
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, timeout: .seconds(30))
        } catch {
            throw RcloneRCError.unreachable("rclone's remote control at \(address) does not answer (\(error))")
        }
        let data = Data(buffer: try await response.body.collect(upTo: 64 << 20))
        switch response.status.code {
        case 200..<300: return data
        case 401, 403: throw RcloneRCError.unauthorized(address)
        default:
            let message = (try? JSONDecoder().decode(ErrorReply.self, from: data).error) ?? String(decoding: data.prefix(200), as: UTF8.self)
            if missingIsNil && response.status.code == 404 && message.contains("couldn't find method") { return nil }
            throw RcloneRCError.failed(call: path, status: Int(response.status.code), message: message)
        }
    }

    func get<T: Decodable>(_ t: T.Type, _ path: String) async throws -> T {
        try JSONDecoder().decode(T.self, from: try await call(path) ?? Data())
    }

    public func vfsStats() async throws -> VFSStats { try await get(VFSStats.self, "vfs/stats") }
    public func coreStats() async throws -> CoreStats { try await get(CoreStats.self, "core/stats") }
    public func transferred() async throws -> CoreTransferred { try await get(CoreTransferred.self, "core/transferred") }

    public func queue() async throws -> VFSQueue? {
        guard let data = try await call("vfs/queue", missingIsNil: true) else { return nil }
        // rclone answers `null` without a cache.
        if data.isEmpty || String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "null" {
            return VFSQueue(queue: [])
        }
        return try JSONDecoder().decode(VFSQueue.self, from: data)
    }

    public func queueSetExpiry(id: Int64, expiry: Double) async throws {
        _ = try await call("vfs/queue-set-expiry", ["id": id, "expiry": expiry])
    }

    public func forget(file: String) async throws {
        _ = try await call("vfs/forget", ["file": file])
    }
}

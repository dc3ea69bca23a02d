#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import Synchronization
import SyncBadgeClient
import SyncBadgeCore

/// Two connections: a provider one for `SET`, `STATUS` and `CHANGES`, and an admin one,
/// opened when a root has to be added.
public final class SocketBadgeDaemon: BadgeDaemon {
    let socketPath: String
    let name: String
    var connection: Connection?

    public init(socketPath: String, name: String) {
        self.socketPath = socketPath
        self.name = name
    }

    func conn() throws -> Connection {
        if let connection { return connection }
        let c = try Self.open(socketPath, role: .provider, name: name + "-state")
        connection = c
        return c
    }

    /// A connection that asks for no `* ROOT` pushes: nothing reads pushes on it, and unread
    /// ones would pile up in its buffer, or reset the connection when it closes.
    static func open(_ socketPath: String, role: Role, name: String) throws -> Connection {
        try Connection(socketPath: socketPath, role: role, name: name, rootPushes: false, timeout: 30)
    }

    /// One retry on a fresh connection: the daemon may have restarted since the last request.
    func request(_ r: Request) throws -> Reply {
        do {
            return try conn().request(r, timeout: 30)
        } catch ClientError.closed, ClientError.timeout {
            connection = nil
            return try conn().request(r, timeout: 30)
        }
    }

    public func set(_ s: SetRequest) throws -> SetOutcome {
        do {
            return SetOutcome(ok: try request(s.request).ok)
        } catch ClientError.server(code: SetOutcome.notFoundCode, _) {
            return .notFound
        }
    }

    public func generation(of path: String) throws -> UInt64? {
        do {
            let r = try request(.status(Array(path.utf8)))
            return r.data.compactMap(Item.init).first?.gen
        } catch ClientError.server(code: "not-found", _) {
            return nil
        } catch ClientError.server(code: "outside", _) {
            return nil
        }
    }

    public func pending(root: String) throws -> [(String, UInt64)] {
        try request(.changes(Array(root.utf8))).data.compactMap(Item.init).map {
            (String(decoding: $0.path, as: UTF8.self), $0.gen ?? 0)
        }
    }

    public func addRoot(_ path: String) throws {
        let admin = try Self.open(socketPath, role: .admin, name: name + "-admin")
        _ = try admin.request(.addRoot(Array(path.utf8)), timeout: 600)
        // A goodbye, so that the daemon closes first and nothing is left unread.
        _ = try? admin.request(.bye, timeout: 5)
    }

    public func reconnect() throws {
        connection = nil
        _ = try conn()
    }
}

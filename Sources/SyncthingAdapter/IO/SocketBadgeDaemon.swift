import SyncBadgeClient
import SyncBadgeProtocol

/// Two connections: a provider one for `SET`, `STATUS` and `CHANGES` (asking for no `* ROOT`
/// pushes: nothing reads pushes on it, and unread ones would pile up in its buffer, or reset
/// the connection when it closes), and an admin one, opened when a root has to be added.
/// Blocking: the Syncthing adapter's async loop reaches it through `ThreadedBadgeDaemon`.
public final class SocketBadgeDaemon {
    let socketPath: String
    let name: String
    var connection: ProviderConnection?

    public init(socketPath: String, name: String) {
        self.socketPath = socketPath
        self.name = name
    }

    func open() throws -> ProviderConnection {
        if let connection { return connection }
        let s = try ProviderConnection(socketPath: socketPath, name: name + "-state")
        connection = s
        return s
    }

    /// One retry on a fresh connection: the daemon may have restarted since the last request.
    func withConnection<T>(_ body: (ProviderConnection) throws -> T) throws -> T {
        do {
            return try body(open())
        } catch ClientError.closed, ClientError.timeout {
            connection = nil
            return try body(open())
        }
    }

    public func set(_ s: SetRequest) throws -> SetOutcome {
        try withConnection { try $0.set(s) }
    }

    /// Pipelined `SET`s, committed together by the daemon: one outcome each (a refusal other
    /// than `not-found` throws).
    public func set(_ sets: [SetRequest]) throws -> [SetOutcome] {
        try withConnection { try $0.set(sets) }.map { try $0.get() }
    }

    /// Any other request on the state connection (`DEFINE-BADGE`, say).
    public func request(_ r: Request) throws {
        _ = try withConnection { try $0.request(r) }
    }

    public func generation(of path: String) throws -> UInt64? {
        try withConnection { try $0.status(Array(path.utf8))?.gen }
    }

    public func pending(root: String) throws -> [(String, UInt64)] {
        try withConnection { try $0.changes(Array(root.utf8), timeout: 30) }.map {
            (String(decoding: $0.path, as: UTF8.self), $0.gen ?? 0)
        }
    }

    public func addRoot(_ path: String) throws {
        try ProviderConnection.addRoot(Array(path.utf8), socketPath: socketPath, name: name)
    }

    public func reconnect() throws {
        connection = nil
        _ = try open()
    }
}

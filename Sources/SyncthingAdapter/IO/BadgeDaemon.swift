import NIOPosix
import Synchronization
import SyncBadgeProtocol

/// The daemon, as the adapter's loop uses it: report states, read generations and pending
/// paths, register roots. Behind a protocol so that the loop's decisions are testable. Async:
/// the loop runs on Swift Concurrency's few shared threads, which must never wait on a socket.
public protocol BadgeDaemon: AnyObject, Sendable {
    func set(_ s: SetRequest) async throws -> SetOutcome
    /// The path's current generation, nil when the daemon knows no such path.
    func generation(of path: String) async throws -> UInt64?
    /// `CHANGES <root>`: every pending path with its generation.
    func pending(root: String) async throws -> [(String, UInt64)]
    func addRoot(_ path: String) async throws
    func reconnect() async throws
}

/// `SocketBadgeDaemon`'s blocking calls, each made on a thread of its own and awaited: a call
/// that waited for the daemon on one of Concurrency's threads (a commit, a restart) would stall
/// whatever else runs there, Syncthing's event streams included. One call at a time, in the
/// order they were made, as on one connection.
public final class ThreadedBadgeDaemon: BadgeDaemon {
    let socket: Mutex<SocketBadgeDaemon>
    let thread: NIOThreadPool

    public init(socketPath: String, name: String) {
        socket = Mutex(SocketBadgeDaemon(socketPath: socketPath, name: name))
        thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
    }

    deinit {
        thread.shutdownGracefully { _ in }
    }

    /// Any other call of the blocking client, on the same thread and in the same order.
    public func call<T: Sendable>(_ body: @escaping @Sendable (SocketBadgeDaemon) throws -> T) async throws -> T {
        try await thread.runIfActive { try self.socket.withLock { try body($0) } }
    }

    public func set(_ s: SetRequest) async throws -> SetOutcome {
        try await call { try $0.set(s) }
    }

    public func generation(of path: String) async throws -> UInt64? {
        try await call { try $0.generation(of: path) }
    }

    public func pending(root: String) async throws -> [(String, UInt64)] {
        try await call { try $0.pending(root: root) }
    }

    public func addRoot(_ path: String) async throws {
        try await call { try $0.addRoot(path) }
    }

    public func reconnect() async throws {
        try await call { try $0.reconnect() }
    }
}

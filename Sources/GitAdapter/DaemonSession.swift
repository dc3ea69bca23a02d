import SyncBadgeClient
import SyncBadgeProtocol

/// The adapter's one provider connection to `syncbadged`, over the project's blocking client:
/// claims, menus and toolbar, pipelined `SET`s and listings, answers to actions. Pushes that
/// arrive while it waits for answers are kept by the connection for `nextPush`.
public final class DaemonSession {
    public let connection: Connection
    public let socketPath: String
    public let epoch: String
    public let capabilities: Set<String>
    let name: String
    /// Requests in flight at most, so that neither side's socket buffer fills while the other
    /// waits: a few hundred short lines.
    static let window = 256

    public init(socketPath: String, name: String) throws {
        // No root pushes: nothing here listens to `* ROOT` (or `* TOOLBAR`) pushes.
        let c = try Connection(socketPath: socketPath, role: .provider, name: name, rootPushes: false, timeout: 30)
        connection = c
        self.socketPath = socketPath
        self.name = name
        epoch = c.epoch
        capabilities = Set(c.capabilities)
    }

    public var canAnswer: Bool { capabilities.contains("action-reply") }

    func request(_ r: Request, timeout: Double = 30) throws -> Reply {
        try connection.request(r, timeout: timeout)
    }

    /// `CLAIM` and `SUBSCRIBE-CHANGES`, adding the root first (on an admin connection) when the
    /// daemon does not know it.
    public func claim(_ root: [UInt8]) throws {
        do {
            _ = try request(.claim(root))
        } catch ClientError.server(let code, _) where code == "not-found" || code == "outside" {
            let admin = try Connection(socketPath: socketPath, role: .admin, name: name + "-admin", rootPushes: false, timeout: 30)
            // `OK` once the whole tree is indexed.
            _ = try admin.request(.addRoot(root), timeout: 600)
            _ = try? admin.request(.bye, timeout: 5)
            _ = try request(.claim(root))
        }
        _ = try request(.subscribeChanges(root))
    }

    public func unclaim(_ root: [UInt8]) throws {
        _ = try request(.unclaim(root))
    }

    public func defineMenu(_ kind: String, _ id: String, title: String, states: [SyncState] = []) throws {
        _ = try request(.defineMenu(kind: kind, id: id, title: title, states: states))
    }

    public func defineToolbar(name: String, tooltip: String) throws {
        _ = try request(.defineToolbar(name: name, tooltip: tooltip))
    }

    /// Sends requests a window at a time, each window in one write (the daemon then reads them
    /// together, and its `SET`s share one barrier and one commit), and hands each answer (or
    /// the daemon's error) back. Tags of their own (`p1`, `p2`...): the connection numbers its own.
    func pipelined(_ requests: [Request], timeout: Double = 60,
                   _ handle: (Int, Result<Reply, ClientError>) -> Void) throws {
        var done = 0
        while done < requests.count {
            let end = min(requests.count, done + Self.window)
            var bytes: [UInt8] = []
            for i in done..<end {
                pipelineTag += 1
                bytes += requests[i].wireLine(tag: "p\(pipelineTag)").terminated()
            }
            try connection.sendRaw(bytes)
            let first = pipelineTag - (end - done) + 1
            for i in done..<end {
                do {
                    handle(i, .success(try connection.reply(to: "p\(first + i - done)", timeout: timeout)))
                } catch let e as ClientError {
                    if case .server = e { handle(i, .failure(e)) } else { throw e }
                }
            }
            done = end
        }
    }
    var pipelineTag = 0

    /// `LIST` of each directory: its children, or nil where the daemon refused (not there).
    public func list(_ dirs: [[UInt8]]) throws -> [[Item]?] {
        var out = [[Item]?](repeating: nil, count: dirs.count)
        try pipelined(dirs.map(Request.list)) { i, r in
            if case .success(let reply) = r { out[i] = reply.data.compactMap(Item.init) }
        }
        return out
    }

    /// `STATUS` of each path: its item, or nil for one the daemon does not know.
    public func status(_ paths: [[UInt8]]) throws -> [Item?] {
        var out = [Item?](repeating: nil, count: paths.count)
        try pipelined(paths.map(Request.status)) { i, r in
            if case .success(let reply) = r { out[i] = reply.data.compactMap(Item.init).first }
        }
        return out
    }

    public func changes(_ root: [UInt8]) throws -> [Item] {
        try request(.changes(root), timeout: 120).data.compactMap(Item.init)
    }

    /// Pipelined `SET`s (the daemon commits them together); one outcome each, or the daemon's
    /// refusal.
    public func set(_ sets: [SetRequest]) throws -> [Result<SetOutcome, ClientError>] {
        var out = [Result<SetOutcome, ClientError>](repeating: .success(.applied), count: sets.count)
        try pipelined(sets.map(\.request)) { i, r in
            switch r {
            case .success(let reply):
                out[i] = .success(SetOutcome(ok: reply.ok))
            case .failure(.server(code: SetOutcome.notFoundCode, _)):
                out[i] = .success(.notFound)
            case .failure(let e):
                out[i] = .failure(e)
            }
        }
        return out
    }

    /// Protocol 1.2's answer to an action the client asked a reply for.
    public func answer(_ token: String, message: String?, failed: Bool) throws {
        do {
            _ = try request(.answer(token, message: message.flatMap { $0.isEmpty ? nil : $0 }, failed: failed))
        } catch ClientError.server(let code, _) where code == "not-found" {
            // Too late (the client's deadline passed) or the client went away: nothing to do.
        }
    }
}

import SyncBadgeProtocol

/// A provider's side of `syncbadged` over one `Connection`: claims (adding the root first, on
/// an admin connection of its own, when the daemon does not know it), menus and the toolbar,
/// `SET`s one at a time or pipelined, listings, and answers to actions. The git and the
/// Syncthing adapters both speak through it. Pushes that arrive while it waits for answers are
/// kept by the connection for `nextPush`.
public final class ProviderConnection {
    public let connection: Connection
    public let socketPath: String
    public let name: String
    public let capabilities: Set<String>
    /// Requests in flight at most when pipelining, so that neither side's socket buffer fills
    /// while the other waits: a few hundred short lines.
    static let window = 256
    var pipelineTag = 0

    /// `rootPushes: false` (the default) for a connection on which nothing listens to
    /// `* ROOT` (or `* TOOLBAR`) pushes.
    public init(socketPath: String, name: String, rootPushes: Bool = false, timeout: Double = 30) throws {
        connection = try Connection(socketPath: socketPath, role: .provider, name: name, rootPushes: rootPushes, timeout: timeout)
        self.socketPath = socketPath
        self.name = name
        capabilities = Set(connection.capabilities)
    }

    public var epoch: String { connection.epoch }

    /// 1.2: actions may ask for an `ANSWER`.
    public var canAnswer: Bool { capabilities.contains("action-reply") }

    public func request(_ r: Request, timeout: Double = 30) throws -> Reply {
        try connection.request(r, timeout: timeout)
    }

    /// `ADD-ROOT` on an admin connection of its own, named `<name>-admin`: returns once the
    /// whole tree is indexed.
    public static func addRoot(_ root: [UInt8], socketPath: String, name: String) throws {
        let admin = try Connection(socketPath: socketPath, role: .admin, name: name + "-admin", rootPushes: false, timeout: 30)
        _ = try admin.request(.addRoot(root), timeout: 600)
        // A goodbye, so that the daemon closes first and nothing is left unread.
        _ = try? admin.request(.bye, timeout: 5)
    }

    /// `CLAIM` and `SUBSCRIBE-CHANGES`; with `addingRoot`, the root is added first when the
    /// daemon does not know it.
    public func claim(_ root: [UInt8], addingRoot: Bool = true, timeout: Double = 30) throws {
        do {
            _ = try request(.claim(root), timeout: timeout)
        } catch ClientError.server(let code, _) where addingRoot && (code == "not-found" || code == "outside") {
            try Self.addRoot(root, socketPath: socketPath, name: name)
            _ = try request(.claim(root), timeout: timeout)
        }
        _ = try request(.subscribeChanges(root), timeout: timeout)
    }

    public func unclaim(_ root: [UInt8], timeout: Double = 30) throws {
        _ = try request(.unclaim(root), timeout: timeout)
    }

    /// `DEFINE-MENU`: adds or replaces one menu item.
    public func define(_ menu: MenuDefinition, timeout: Double = 30) throws {
        _ = try request(menu.request, timeout: timeout)
    }

    /// `DEFINE-TOOLBAR`: the provider's toolbar item.
    public func define(_ toolbar: ToolbarItem, timeout: Double = 30) throws {
        _ = try request(toolbar.request, timeout: timeout)
    }

    /// One `SET`, and what it did.
    public func set(_ s: SetRequest, timeout: Double = 30) throws -> SetOutcome {
        do {
            return SetOutcome(ok: try request(s.request, timeout: timeout).ok)
        } catch ClientError.server(code: SetOutcome.notFoundCode, _) {
            return .notFound
        }
    }

    /// Pipelined `SET`s (the daemon commits them together); one outcome each, or the daemon's
    /// refusal.
    public func set(_ sets: [SetRequest]) throws -> [Result<SetOutcome, ClientError>] {
        var out = [Result<SetOutcome, ClientError>](repeating: .success(.applied), count: sets.count)
        try pipelined(sets.map(\.request)) { i, r in
            switch r {
            case .success(let reply): out[i] = .success(SetOutcome(ok: reply.ok))
            case .failure(.server(code: SetOutcome.notFoundCode, _)): out[i] = .success(.notFound)
            case .failure(let e): out[i] = .failure(e)
            }
        }
        return out
    }

    /// `STATUS` of one path: nil where the daemon knows no such path.
    public func status(_ path: [UInt8], timeout: Double = 30) throws -> Item? {
        do {
            return try request(.status(path), timeout: timeout).data.compactMap(Item.init).first
        } catch ClientError.server(let code, _) where code == "not-found" || code == "outside" {
            return nil
        }
    }

    /// `STATUS` of each path, pipelined: its item, or nil for one the daemon does not know.
    public func status(_ paths: [[UInt8]]) throws -> [Item?] {
        var out = [Item?](repeating: nil, count: paths.count)
        try pipelined(paths.map(Request.status)) { i, r in
            if case .success(let reply) = r { out[i] = reply.data.compactMap(Item.init).first }
        }
        return out
    }

    /// `LIST` of each directory, pipelined: its children, or nil where the daemon refused.
    public func list(_ dirs: [[UInt8]]) throws -> [[Item]?] {
        var out = [[Item]?](repeating: nil, count: dirs.count)
        try pipelined(dirs.map(Request.list)) { i, r in
            if case .success(let reply) = r { out[i] = reply.data.compactMap(Item.init) }
        }
        return out
    }

    /// `CHANGES <root>`: every pending path with its generation.
    public func changes(_ root: [UInt8], timeout: Double = 120) throws -> [Item] {
        try request(.changes(root), timeout: timeout).data.compactMap(Item.init)
    }

    /// Protocol 1.2's answer to an action whose client asked for one; an empty message is left
    /// out. Too late (the client's deadline passed) or the client gone (`not-found`) is no
    /// error: nothing is left to do.
    public func answer(_ token: String, message: String?, failed: Bool, timeout: Double = 30) throws {
        do {
            _ = try request(.answer(token, message: message.flatMap { $0.isEmpty ? nil : $0 }, failed: failed), timeout: timeout)
        } catch ClientError.server(let code, _) where code == "not-found" {
        }
    }

    /// Sends requests a window at a time, each window in one write (the daemon then reads them
    /// together, and its `SET`s share one barrier and one commit), and hands each answer (or
    /// the daemon's error) back. Tags of their own (`p1`, `p2`...): the connection numbers its own.
    func pipelined(_ requests: [Request], timeout: Double = 60, _ handle: (Int, Result<Reply, ClientError>) -> Void) throws {
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
}

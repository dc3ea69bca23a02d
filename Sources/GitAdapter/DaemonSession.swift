import SyncBadgeClient
import SyncBadgeCore

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
        let c = try Connection(socketPath: socketPath)
        // `roots=0`: nothing here listens to `* ROOT` (or `* TOOLBAR`) pushes.
        let hello = try c.request("HELLO", [.word("proto=1"), .option("role", "provider"), .option("name", name), .option("roots", "0")],
                                  timeout: 30)
        connection = c
        self.socketPath = socketPath
        self.name = name
        epoch = hello.ok.option("epoch") ?? ""
        capabilities = Set((hello.ok.option("caps") ?? "").split(separator: ",").map(String.init))
    }

    public var canAnswer: Bool { capabilities.contains("action-reply") }

    func request(_ verb: String, _ fields: [RequestField], timeout: Double = 30) throws -> Reply {
        try connection.request(verb, fields, timeout: timeout)
    }

    /// `CLAIM` and `SUBSCRIBE-CHANGES`, adding the root first (on an admin connection) when the
    /// daemon does not know it.
    public func claim(_ root: [UInt8]) throws {
        do {
            _ = try request("CLAIM", [.path(root)])
        } catch ClientError.server(let code, _) where code == "not-found" || code == "outside" {
            let admin = try Connection(socketPath: socketPath)
            _ = try admin.request("HELLO", [.word("proto=1"), .option("role", "admin"), .option("name", name + "-admin"),
                                            .option("roots", "0")], timeout: 30)
            // `OK` once the whole tree is indexed.
            _ = try admin.request("ADD-ROOT", [.path(root)], timeout: 600)
            _ = try? admin.request("BYE", [], timeout: 5)
            _ = try request("CLAIM", [.path(root)])
        }
        _ = try request("SUBSCRIBE-CHANGES", [.path(root)])
    }

    public func unclaim(_ root: [UInt8]) throws {
        _ = try request("UNCLAIM", [.path(root)])
    }

    public func defineMenu(_ kind: String, _ id: String, title: String, states: [String] = []) throws {
        var f: [RequestField] = [.word(kind), .word(id), .option("title", title)]
        if !states.isEmpty { f.append(.option("states", states.joined(separator: ","))) }
        _ = try request("DEFINE-MENU", f)
    }

    public func defineToolbar(name: String, tooltip: String) throws {
        _ = try request("DEFINE-TOOLBAR", [.option("name", name), .option("tooltip", tooltip)])
    }

    /// Sends requests a window at a time, each window in one write (the daemon then reads them
    /// together, and its `SET`s share one barrier and one commit), and hands each answer (or
    /// the daemon's error) back. Tags of their own (`p1`, `p2`...): the connection numbers its own.
    func pipelined(_ requests: [(String, [RequestField])], timeout: Double = 60,
                   _ handle: (Int, Result<Reply, ClientError>) -> Void) throws {
        var done = 0
        while done < requests.count {
            let end = min(requests.count, done + Self.window)
            var bytes: [UInt8] = []
            for i in done..<end {
                pipelineTag += 1
                var line = WireLine("p\(pipelineTag)")
                line.word(requests[i].0)
                for f in requests[i].1 {
                    switch f {
                    case .path(let p): line.field(p)
                    case .word(let w): line.word(w)
                    case .option(let k, let v): line.option(k, v)
                    }
                }
                bytes += line.terminated()
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
        try pipelined(dirs.map { ("LIST", [.path($0)]) }) { i, r in
            if case .success(let reply) = r { out[i] = reply.data.compactMap(Item.init) }
        }
        return out
    }

    /// `STATUS` of each path: its item, or nil for one the daemon does not know.
    public func status(_ paths: [[UInt8]]) throws -> [Item?] {
        var out = [Item?](repeating: nil, count: paths.count)
        try pipelined(paths.map { ("STATUS", [.path($0)]) }) { i, r in
            if case .success(let reply) = r { out[i] = reply.data.compactMap(Item.init).first }
        }
        return out
    }

    public func changes(_ root: [UInt8]) throws -> [Item] {
        try request("CHANGES", [.path(root)], timeout: 120).data.compactMap(Item.init)
    }

    public enum SetOutcome: Sendable, Equatable {
        case applied
        case stale(gen: UInt64)
        case notFound
        case refused(String)
    }

    public struct SetRequest: Sendable {
        public var path: [UInt8]
        public var verdict: Verdict
        public var gen: UInt64?
        public var recursive: Bool
        public init(path: [UInt8], verdict: Verdict, gen: UInt64?, recursive: Bool = false) {
            self.path = path; self.verdict = verdict; self.gen = gen; self.recursive = recursive
        }
    }

    /// Pipelined `SET`s (the daemon commits them together); one outcome each.
    public func set(_ sets: [SetRequest]) throws -> [SetOutcome] {
        var out = [SetOutcome](repeating: .applied, count: sets.count)
        let requests: [(String, [RequestField])] = sets.map { s in
            var f: [RequestField] = [.word(s.verdict.state), .path(s.path)]
            if let g = s.gen { f.append(.option("gen", String(g))) }
            if let p = s.verdict.progress { f.append(.option("progress", String(p))) }
            if let m = s.verdict.message { f.append(.option("message", m)) }
            if s.recursive { f.append(.option("recursive", "1")) }
            return ("SET", f)
        }
        try pipelined(requests) { i, r in
            switch r {
            case .success(let reply):
                if reply.ok.option("stale") == "1" {
                    out[i] = .stale(gen: reply.ok.option("gen").flatMap(UInt64.init) ?? 0)
                }
            case .failure(.server(code: "not-found", _)):
                out[i] = .notFound
            case .failure(let e):
                out[i] = .refused("\(e)")
            }
        }
        return out
    }

    /// Protocol 1.2's answer to an action the client asked a reply for.
    public func answer(_ token: String, message: String?, failed: Bool) throws {
        var f: [RequestField] = [.word(token)]
        if let message, !message.isEmpty { f.append(.option("message", message)) }
        if failed { f.append(.option("failed", "1")) }
        do {
            _ = try request("ANSWER", f)
        } catch ClientError.server(let code, _) where code == "not-found" {
            // Too late (the client's deadline passed) or the client went away: nothing to do.
        }
    }
}

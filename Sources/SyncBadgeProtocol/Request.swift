/// One field of a request, before it is encoded.
public enum RequestField: Sendable, Equatable {
    case path([UInt8])
    /// Written as it is: a word never needs escaping (a state, a menu kind, a token).
    case word(String)
    case option(String, [UInt8])

    public static func option(_ key: String, _ value: String) -> RequestField { .option(key, Array(value.utf8)) }
}

extension WireLine {
    public mutating func append(_ f: RequestField) {
        switch f {
        case .path(let p): field(p)
        case .word(let w): word(w)
        case .option(let k, let v): option(k, v)
        }
    }
}

/// A request as a client sends it, without its tag: a verb and its fields (PROTOCOL.md,
/// "Requests"). The typed requests below build it, so no verb or role is spelled by hand.
public struct Request: Sendable, Equatable {
    public var verb: Verb
    public var fields: [RequestField]

    public init(_ verb: Verb, _ fields: [RequestField] = []) {
        self.verb = verb
        self.fields = fields
    }

    public func wireLine(tag: String) -> WireLine {
        var line = WireLine(tag)
        line.word(verb.rawValue)
        for f in fields { line.append(f) }
        return line
    }
}

extension Request {
    /// `HELLO proto=1 role= name=`; `rootPushes: false` asks for no `* ROOT` (nor `* TOOLBAR`)
    /// pushes, for a connection on which nothing reads them.
    public static func hello(role: Role, name: String, rootPushes: Bool = true) -> Request {
        var f: [RequestField] = [.word("proto=1"), .option("role", role.rawValue), .option("name", name)]
        if !rootPushes { f.append(.option("roots", "0")) }
        return Request(.hello, f)
    }

    public static let ping = Request(.ping)
    public static let bye = Request(.bye)
    public static let roots = Request(.roots)
    public static let badges = Request(.badges)
    public static let stats = Request(.stats)
    public static let toolbar = Request(.toolbar)

    public static func status(_ paths: [[UInt8]]) -> Request { Request(.status, paths.map(RequestField.path)) }
    public static func status(_ path: [UInt8]) -> Request { Request(.status, [.path(path)]) }
    public static func list(_ dir: [UInt8]) -> Request { Request(.list, [.path(dir)]) }
    public static func observe(_ dir: [UInt8]) -> Request { Request(.observe, [.path(dir)]) }
    public static func unobserve(_ dir: [UInt8]) -> Request { Request(.unobserve, [.path(dir)]) }
    public static func addRoot(_ root: [UInt8]) -> Request { Request(.addRoot, [.path(root)]) }
    public static func removeRoot(_ root: [UInt8]) -> Request { Request(.removeRoot, [.path(root)]) }
    public static func claim(_ root: [UInt8]) -> Request { Request(.claim, [.path(root)]) }
    public static func unclaim(_ root: [UInt8]) -> Request { Request(.unclaim, [.path(root)]) }
    public static func changes(_ root: [UInt8]) -> Request { Request(.changes, [.path(root)]) }
    public static func subscribeChanges(_ root: [UInt8]) -> Request { Request(.subscribeChanges, [.path(root)]) }

    /// `MENU <paths>...`: the items a selection offers.
    public static func menu(_ paths: [[UInt8]]) -> Request { Request(.menu, paths.map(RequestField.path)) }

    /// 1.2: a provider's answer to an action whose client asked for one.
    public static func answer(_ token: String, message: String?, failed: Bool) -> Request {
        var f: [RequestField] = [.word(token)]
        if let message { f.append(.option("message", message)) }
        if failed { f.append(.option("failed", "1")) }
        return Request(.answer, f)
    }

    /// `DEFINE-MENU <kind> <id> title= [states=] [enabled=0]`; `kind` is one of `MenuItem.kinds`.
    public static func defineMenu(kind: String, id: String, title: String, states: [SyncState] = [], enabled: Bool = true) -> Request {
        var f: [RequestField] = [.word(kind), .word(id), .option("title", title)]
        if !states.isEmpty { f.append(.option("states", states.map(\.name).joined(separator: ","))) }
        if !enabled { f.append(.option("enabled", "0")) }
        return Request(.defineMenu, f)
    }

    public static func defineToolbar(name: String, tooltip: String) -> Request {
        Request(.defineToolbar, [.option("name", name), .option("tooltip", tooltip)])
    }

    /// `DEFINE-BADGE <id> label= glyph= ascii= color=`: a badge of the provider's own.
    public static func defineBadge(id: String, label: String, glyph: String, ascii: String, color: String) -> Request {
        Request(.defineBadge, [.word(id), .option("label", label), .option("glyph", glyph), .option("ascii", ascii), .option("color", color)])
    }
}

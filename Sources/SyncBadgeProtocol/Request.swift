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

    /// Reads a request of a known verb: its fields in order, then its options by key (the wire
    /// does not order options). Nil for a verb the protocol does not have.
    public init?(_ w: WireRequest) {
        guard let verb = Verb(rawValue: w.verb) else { return nil }
        self.verb = verb
        fields = w.fields.map { $0.isPath ? .path($0.bytes) : .word($0.string) }
            + w.options.sorted { $0.key < $1.key }.map { .option($0.key, $0.value) }
    }
}

extension Request {
    /// `HELLO proto=1 role= name=`; `rootPushes: false` asks for no `* ROOT` (nor `* TOOLBAR`)
    /// pushes, for a connection on which nothing reads them.
    public static func hello(role: Role, name: String, rootPushes: Bool = true) -> Request {
        Hello(role: role, name: name, rootPushes: rootPushes).request
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
    /// `OBSERVE <dir> [list=0]`; `list: false` (1.1, `observe-nolist`) asks for the count alone.
    public static func observe(_ dir: [UInt8], list: Bool = true) -> Request {
        Request(.observe, [.path(dir)] + (list ? [] : [.option("list", "0")]))
    }
    public static func unobserve(_ dir: [UInt8]) -> Request { Request(.unobserve, [.path(dir)]) }
    /// `ADD-ROOT <dir> [ignore-defaults=0]`: `ignoreDefaults: false` ignores no editor files.
    public static func addRoot(_ root: [UInt8], ignoreDefaults: Bool = true) -> Request {
        Request(.addRoot, [.path(root)] + (ignoreDefaults ? [] : [.option("ignore-defaults", "0")]))
    }
    public static func removeRoot(_ root: [UInt8]) -> Request { Request(.removeRoot, [.path(root)]) }
    public static func claim(_ root: [UInt8]) -> Request { Request(.claim, [.path(root)]) }
    public static func unclaim(_ root: [UInt8]) -> Request { Request(.unclaim, [.path(root)]) }
    public static func changes(_ root: [UInt8]) -> Request { Request(.changes, [.path(root)]) }
    public static func subscribeChanges(_ root: [UInt8]) -> Request { Request(.subscribeChanges, [.path(root)]) }

    /// `ACTION <id> [target=] [provider=] <path>... [reply=1]`; `provider` (1.1,
    /// `provider-address`) names the provider without a path, `reply` (1.2, `action-reply`)
    /// waits for its answer.
    public static func action(_ id: String, target: [UInt8]? = nil, provider: String? = nil, paths: [[UInt8]], reply: Bool = false) -> Request {
        ActionRequest(id: id, target: target, provider: provider, paths: paths, reply: reply).request
    }

    /// `MENU <kind> [target=] <path>...`: the items a selection offers; `kind` is one of
    /// `MenuItem.kinds`.
    public static func menu(kind: String, target: [UInt8]? = nil, paths: [[UInt8]]) -> Request {
        MenuRequest(kind: kind, target: target, paths: paths).request
    }

    /// 1.2: a provider's answer to an action whose client asked for one.
    public static func answer(_ token: String, message: String?, failed: Bool) -> Request {
        Answer(token: token, message: message.map { Array($0.utf8) }, failed: failed).request
    }

    /// `DEFINE-MENU <kind> <id> title= [states=] [enabled=0]`; `kind` is one of `MenuItem.kinds`.
    public static func defineMenu(kind: String, id: String, title: String, states: [SyncState] = [], enabled: Bool = true) -> Request {
        MenuDefinition(kind: kind, id: id, title: title, states: states, enabled: enabled).request
    }

    public static func defineToolbar(name: String, tooltip: String) -> Request {
        ToolbarItem(name: name, tooltip: tooltip).request
    }

    /// `DEFINE-BADGE <id> label= glyph= ascii= color=`: a badge of the provider's own.
    public static func defineBadge(id: String, label: String, glyph: String, ascii: String, color: String) -> Request {
        Badge(id: id, label: label, glyph: glyph, ascii: ascii, color: color).definition
    }
}

// The requests about a selection in a file manager (PROTOCOL.md, "Verbs for every role": MENU
// and ACTION, with 1.1's `provider=` and 1.2's `reply=1`) and a provider's answer to an action
// (1.2, ANSWER). Each reads the request's shape; the daemon checks the paths against its roots.

/// `MENU <kind> [target=<path>] [provider=<name>] <path>...`.
public struct MenuRequest: Sendable, Equatable {
    /// One of `MenuItem.kinds`.
    public var kind: String
    /// The directory a background menu is shown in.
    public var target: [UInt8]?
    /// 1.1, `provider-address`: the provider whose toolbar line carries this name.
    public var provider: String?
    /// The fields after the kind, as sent: the selected paths.
    public var paths: [[UInt8]]

    public init(kind: String, target: [UInt8]? = nil, provider: String? = nil, paths: [[UInt8]]) {
        self.kind = kind
        self.target = target
        self.provider = provider
        self.paths = paths
    }

    public static let usage = "usage: MENU items|container|sidebar|toolbar [target=<path>] <path>... | MENU toolbar provider=<name>"

    /// `ERR bad-request` without a kind of menu.
    public init(_ req: WireRequest) throws(Err) {
        guard let kind = req.fields.first?.string, MenuItem.kinds.contains(kind) else { throw Err("bad-request", message: Self.usage) }
        self.init(kind: kind, target: req.options["target"], provider: req.option("provider"), paths: req.fields.dropFirst().map(\.bytes))
    }

    public var request: Request {
        var f: [RequestField] = [.word(kind)]
        if let target { f.append(.option("target", target)) }
        if let provider { f.append(.option("provider", provider)) }
        return Request(.menu, f + paths.map(RequestField.path))
    }

    /// Whether it selects anything (a path or a target).
    public var selects: Bool { !paths.isEmpty || target != nil }
}

/// `ACTION <action-id> [target=<path>] [provider=<name>] <path>... [reply=1]`.
public struct ActionRequest: Sendable, Equatable {
    public var id: String
    public var target: [UInt8]?
    /// 1.1, `provider-address`: the provider whose toolbar line carries this name.
    public var provider: String?
    /// The fields after the id, as sent: the selected paths.
    public var paths: [[UInt8]]
    /// 1.2, `action-reply`: the client waits for the provider's answer.
    public var reply: Bool

    public init(id: String, target: [UInt8]? = nil, provider: String? = nil, paths: [[UInt8]], reply: Bool = false) {
        self.id = id
        self.target = target
        self.provider = provider
        self.paths = paths
        self.reply = reply
    }

    public static let usage = "usage: ACTION <action-id> [target=<path>] <path>... [reply=1]"

    /// `ERR bad-request` without an action id.
    public init(_ req: WireRequest) throws(Err) {
        guard let id = req.fields.first?.bytes, WireParser.isID(id) else { throw Err("bad-request", message: Self.usage) }
        self.init(id: String(decoding: id, as: UTF8.self), target: req.options["target"], provider: req.option("provider"),
                  paths: req.fields.dropFirst().map(\.bytes), reply: req.option("reply") == "1")
    }

    public var request: Request {
        var f: [RequestField] = [.word(id)]
        if let target { f.append(.option("target", target)) }
        if let provider { f.append(.option("provider", provider)) }
        f += paths.map(RequestField.path)
        if reply { f.append(.option("reply", "1")) }
        return Request(.action, f)
    }

    /// Whether it selects anything (a path or a target).
    public var selects: Bool { !paths.isEmpty || target != nil }
}

/// `ANSWER <token> [message=<text>] [failed=1]` (1.2, `action-reply`): a provider's answer to an
/// action whose client asked for one.
public struct Answer: Sendable, Equatable {
    public var token: String
    public var message: [UInt8]?
    public var failed: Bool

    public init(token: String, message: [UInt8]? = nil, failed: Bool = false) {
        self.token = token
        self.message = message
        self.failed = failed
    }

    public static let usage = "usage: ANSWER <token> [message=<text>] [failed=1]"

    /// `ERR bad-request` without one token.
    public init(_ req: WireRequest) throws(Err) {
        guard req.fields.count == 1, !req.fields[0].isPath, WireParser.isTag(req.fields[0].bytes) else {
            throw Err("bad-request", message: Self.usage)
        }
        self.init(token: req.fields[0].string, message: req.options["message"], failed: req.option("failed") == "1")
    }

    public var request: Request {
        var f: [RequestField] = [.word(token)]
        if let message { f.append(.option("message", message)) }
        if failed { f.append(.option("failed", "1")) }
        return Request(.answer, f)
    }
}

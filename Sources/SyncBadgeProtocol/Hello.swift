/// `HELLO proto=1 role=<role> [name=<text>] [roots=0]` (PROTOCOL.md, "Handshake"): the first
/// request of every connection.
public struct Hello: Sendable, Equatable {
    /// The protocol version asked for; the daemon speaks `1`.
    public var proto: String?
    /// Nil when missing or not a role of the protocol.
    public var role: Role?
    /// Nil or empty: the daemon names the client after its process.
    public var name: String?
    /// 1.1, `roots-optout`: false asks for no `* ROOT` (nor `* TOOLBAR`) pushes.
    public var rootPushes: Bool

    public init(proto: String? = "1", role: Role?, name: String?, rootPushes: Bool = true) {
        self.proto = proto
        self.role = role
        self.name = name
        self.rootPushes = rootPushes
    }

    /// Reads what the request says; the daemon decides what is missing or unsupported.
    public init(_ req: WireRequest) {
        self.init(proto: req.option("proto"), role: req.option("role").flatMap(Role.init(rawValue:)),
                  name: req.options["name"].map { String(decoding: $0, as: UTF8.self) }, rootPushes: req.option("roots") != "0")
    }

    public var request: Request {
        var f: [RequestField] = []
        if let proto { f.append(.option("proto", proto)) }
        if let role { f.append(.option("role", role.rawValue)) }
        if let name { f.append(.option("name", name)) }
        if !rootPushes { f.append(.option("roots", "0")) }
        return Request(.hello, f)
    }
}

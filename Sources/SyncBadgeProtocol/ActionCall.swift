/// `* ACTION <action-id> [target=<path>] <path>... from=<client-name> [reply=<token>]`: a
/// client chose one of the provider's menu items.
public struct ActionCall: MessageLine {
    public static let kind = MessageKind.action

    public var id: String
    public var paths: [[UInt8]]
    /// The folder a background menu was opened on.
    public var target: [UInt8]?
    /// The client's name.
    public var from: String?
    /// 1.2: the token to `ANSWER` with, when the client asked for an answer.
    public var reply: String?

    public init(id: String, target: [UInt8]? = nil, paths: [[UInt8]], from: String?, reply: String? = nil) {
        self.id = id
        self.target = target
        self.paths = paths
        self.from = from
        self.reply = reply
    }

    public init?(_ m: WireMessage) {
        guard m.messageKind == .action, let id = m.fields.first, !id.isPath else { return nil }
        self.id = id.string
        paths = m.fields.dropFirst().filter(\.isPath).map(\.bytes)
        target = m.options["target"]
        from = m.option("from")
        reply = m.option("reply")
    }

    /// `ACTION <id> [target=] <path>... from= [reply=]`, in the contract's order.
    public func wireLine(head: String) -> WireLine {
        var line = Self.start(head)
        line.word(id)
        if let target { line.option("target", target) }
        for p in paths { line.field(p) }
        if let from { line.option("from", from) }
        if let reply { line.option("reply", reply) }
        return line
    }
}

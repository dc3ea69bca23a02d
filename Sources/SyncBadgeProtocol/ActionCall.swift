/// `* ACTION <action-id> [target=<path>] <path>... from=<client-name> [reply=<token>]`: a
/// client chose one of the provider's menu items.
public struct ActionCall: Sendable, Equatable {
    public var id: String
    public var paths: [[UInt8]]
    /// The folder a background menu was opened on.
    public var target: [UInt8]?
    /// The client's name.
    public var from: String?
    /// 1.2: the token to `ANSWER` with, when the client asked for an answer.
    public var reply: String?

    public init?(_ m: WireMessage) {
        guard m.messageKind == .action, let id = m.fields.first, !id.isPath else { return nil }
        self.id = id.string
        paths = m.fields.dropFirst().filter(\.isPath).map(\.bytes)
        target = m.options["target"]
        from = m.option("from")
        reply = m.option("reply")
    }
}

/// The final line of an answer that failed: `<tag> ERR <code> [supported=<versions>]
/// [message=<text>]` (PROTOCOL.md, "Requests, responses, pushes": the codes).
public struct Err: MessageLine, Error {
    public static let kind = MessageKind.err

    public var code: String
    public var message: [UInt8]?
    /// `unsupported-version`'s: the versions the daemon speaks.
    public var supported: String?

    public init(_ code: String, message: [UInt8]? = nil, supported: String? = nil) {
        self.code = code
        self.message = message
        self.supported = supported
    }

    public init(_ code: String, message: String) {
        self.init(code, message: Array(message.utf8))
    }

    public init?(_ m: WireMessage) {
        guard m.messageKind == .err, let code = m.fields.first, !code.isPath else { return nil }
        self.code = code.string
        message = m.options["message"]
        supported = m.option("supported")
    }

    public func wireLine(head: String) -> WireLine {
        var line = Self.start(head)
        line.word(code)
        if let supported { line.option("supported", supported) }
        if let message { line.option("message", message) }
        return line
    }

    /// The message as text, for people.
    public var messageText: String? { message.map { String(decoding: $0, as: UTF8.self) } }
}

/// `* CHANGED <path> gen=<n> what=create|modify|delete|move [from=<path>]`: a provider's
/// change feed (`SUBSCRIBE-CHANGES`).
public struct Changed: MessageLine {
    public static let kind = MessageKind.changed

    public enum What: String, Sendable, CaseIterable {
        case create, modify, delete, move
    }

    public var path: [UInt8]
    public var gen: UInt64?
    /// Nil for a word this protocol version does not know.
    public var what: What?
    /// The old path of a move, which left a tombstone.
    public var from: [UInt8]?

    public init(path: [UInt8], gen: UInt64?, what: What?, from: [UInt8]? = nil) {
        self.path = path
        self.gen = gen
        self.what = what
        self.from = from
    }

    public init?(_ m: WireMessage) {
        guard m.messageKind == .changed, let p = m.fields.first, p.isPath else { return nil }
        path = p.bytes
        gen = m.option("gen").flatMap { UInt64($0) }
        what = m.option("what").flatMap(What.init(rawValue:))
        from = m.options["from"]
    }

    public func wireLine(head: String) -> WireLine {
        var line = Self.start(head)
        line.field(path)
        if let gen { line.option("gen", String(gen)) }
        if let what { line.option("what", what.rawValue) }
        if let from { line.option("from", from) }
        return line
    }
}

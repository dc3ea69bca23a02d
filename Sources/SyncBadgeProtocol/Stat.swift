/// One `STAT <key> <value>` line of the answer to `STATS`.
public struct Stat: MessageLine {
    public static let kind = MessageKind.stat

    public var key: String
    public var value: Int

    public init(_ key: String, _ value: Int) {
        self.key = key
        self.value = value
    }

    public init?(_ m: WireMessage) {
        guard m.messageKind == .stat, m.fields.count >= 2, !m.fields[0].isPath, let v = Int(m.fields[1].string) else { return nil }
        key = m.fields[0].string
        value = v
    }

    public func wireLine(head: String) -> WireLine {
        var line = Self.start(head)
        line.word(key)
        line.word(String(value))
        return line
    }
}

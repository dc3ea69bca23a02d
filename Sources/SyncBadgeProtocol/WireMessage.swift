/// A received response or push line, as a client sees it: `<tag>|* <KIND> fields...`.
public struct WireMessage: Sendable, Equatable {
    /// The request's tag, or `*` for a push.
    public var head: String
    public var kind: String
    public var fields: [WireRequest.Field]
    public var options: [String: [UInt8]]

    public var isPush: Bool { head == "*" }

    public func option(_ key: String) -> String? {
        options[key].map { String(decoding: $0, as: UTF8.self) }
    }

    public init(head: String, kind: String, fields: [WireRequest.Field] = [], options: [String: [UInt8]] = [:]) {
        self.head = head
        self.kind = kind
        self.fields = fields
        self.options = options
    }

    /// Parses a line without its LF; nil when it is not a well-formed message.
    public init?(line raw: some Collection<UInt8>) {
        var line = Array(raw)[...]
        if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
        let parts = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count >= 2, let head = parts.first, !parts[1].isEmpty,
              head.elementsEqual([UInt8(ascii: "*")]) || WireParser.isTag(head)
        else { return nil }
        self.head = String(decoding: head, as: UTF8.self)
        self.kind = String(decoding: parts[1], as: UTF8.self)
        guard let (fields, options) = WireParser.decodeFields(parts.dropFirst(2)) else { return nil }
        self.fields = fields
        self.options = options
    }
}

/// One request line, split and decoded (PROTOCOL.md, "Framing" and "Requests").
public struct WireRequest: Sendable, Equatable {
    /// A non-option field, decoded; `isPath` when it started with `/`.
    public struct Field: Sendable, Equatable {
        public var bytes: [UInt8]
        public var isPath: Bool { bytes.first == PathBytes.slash }
        public var string: String { String(decoding: bytes, as: UTF8.self) }
        public init(_ bytes: [UInt8]) { self.bytes = bytes }
    }

    public var tag: String
    public var verb: String
    public var fields: [Field]
    public var options: [String: [UInt8]]

    public init(tag: String, verb: String, fields: [Field] = [], options: [String: [UInt8]] = [:]) {
        self.tag = tag
        self.verb = verb
        self.fields = fields
        self.options = options
    }

    public func option(_ key: String) -> String? {
        options[key].map { String(decoding: $0, as: UTF8.self) }
    }

    public var paths: [[UInt8]] { fields.filter(\.isPath).map(\.bytes) }
}

/// What a received line is.
public enum LineParse: Sendable, Equatable {
    /// An empty line: ignored.
    case empty
    /// No valid tag: the connection gets `* BYE bad-request` and is closed.
    case badTag
    /// A tagged line that is not a well-formed request: `<tag> ERR bad-request`.
    case malformed(tag: String)
    case request(WireRequest)
}

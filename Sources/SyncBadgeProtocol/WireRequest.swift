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

public enum WireParser {
    // Inlinable, as `isTag` and `isID`: the daemon's STATUS path checks every request's tag,
    // and a generic call across the module boundary cost it a metadata lookup each time.
    @usableFromInline
    static func isTagByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }

    @inlinable
    public static func isTag(_ s: some Collection<UInt8>) -> Bool {
        (1...32).contains(s.count) && s.allSatisfy(isTagByte)
    }

    /// Ids (badges, actions): `[A-Za-z0-9._-]{1,64}`.
    @inlinable
    public static func isID(_ s: some Collection<UInt8>) -> Bool {
        (1...64).contains(s.count) && s.allSatisfy(isTagByte)
    }

    /// Option key at the start of a raw field (`[a-z][a-z0-9-]*=`): the index of `=`, if any.
    static func optionSplit(_ f: ArraySlice<UInt8>) -> Int? {
        guard let first = f.first, first >= UInt8(ascii: "a"), first <= UInt8(ascii: "z") else { return nil }
        for i in f.indices.dropFirst() {
            let b = f[i]
            if b == UInt8(ascii: "=") { return i }
            let ok = (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || b == UInt8(ascii: "-")
            if !ok { return nil }
        }
        return nil
    }

    /// Parses one line without its LF. A trailing CR is dropped.
    public static func parse(_ raw: some Collection<UInt8>) -> LineParse {
        var line = Array(raw)[...]
        if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
        if line.isEmpty { return .empty }
        let parts = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard let tagBytes = parts.first, isTag(tagBytes) else { return .badTag }
        let tag = String(decoding: tagBytes, as: UTF8.self)
        guard parts.count >= 2, !parts[1].isEmpty else { return .malformed(tag: tag) }
        let verbBytes = parts[1]
        guard let verbDecoded = PercentEncoding.decode(verbBytes) else { return .malformed(tag: tag) }
        guard let (fields, options) = decodeFields(parts.dropFirst(2)) else { return .malformed(tag: tag) }
        return .request(WireRequest(tag: tag, verb: String(decoding: verbDecoded, as: UTF8.self), fields: fields, options: options))
    }

    /// Classifies and decodes fields: `key=value` options by their form, the rest positional.
    /// Nil for an empty field or a malformed escape.
    static func decodeFields(_ parts: some Sequence<ArraySlice<UInt8>>) -> ([WireRequest.Field], [String: [UInt8]])? {
        var fields: [WireRequest.Field] = []
        var options: [String: [UInt8]] = [:]
        for f in parts {
            if f.isEmpty { return nil }
            if f.first != PathBytes.slash, let eq = optionSplit(f) {
                guard let value = PercentEncoding.decode(f[(eq + 1)...]) else { return nil }
                options[String(decoding: f[f.startIndex..<eq], as: UTF8.self)] = value
            } else {
                guard let value = PercentEncoding.decode(f) else { return nil }
                fields.append(.init(value))
            }
        }
        return (fields, options)
    }
}

/// Builds one outgoing line: fields percent-encoded and joined by one space, ending in LF.
public struct WireLine: Sendable {
    public private(set) var bytes: [UInt8]

    public init(_ first: String) {
        bytes = Array(first.utf8)
    }

    /// A line already encoded, without its LF.
    public init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Appends a field as it is: for tags, verbs, kinds and state names that never need escaping.
    public mutating func word(_ s: String) {
        bytes.append(UInt8(ascii: " "))
        bytes.append(contentsOf: s.utf8)
    }

    /// Appends a field, percent-encoded.
    public mutating func field(_ value: some Collection<UInt8>) {
        bytes.append(UInt8(ascii: " "))
        PercentEncoding.encode(Array(value), into: &bytes)
    }

    /// Appends `key=value` with the value percent-encoded.
    public mutating func option(_ key: String, _ value: some Collection<UInt8>) {
        bytes.append(UInt8(ascii: " "))
        bytes.append(contentsOf: key.utf8)
        bytes.append(UInt8(ascii: "="))
        PercentEncoding.encode(Array(value), into: &bytes)
    }

    public mutating func option(_ key: String, _ value: String) {
        option(key, Array(value.utf8))
    }

    public func terminated() -> [UInt8] { bytes + [UInt8(ascii: "\n")] }
}

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

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

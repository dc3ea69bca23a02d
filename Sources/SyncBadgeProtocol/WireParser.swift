/// Splits and decodes request lines (PROTOCOL.md, "Framing").
public enum WireParser {
    // Inlinable, as `isTag` and `isID`: the daemon's STATUS path checks every request's tag,
    // and a generic call across the module boundary cost it a metadata lookup each time.
    @inlinable
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

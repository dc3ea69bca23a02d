#if canImport(SyncBadgeCore)
import SyncBadgeCore
#endif

/// What must hold for any bytes a client could send (`make fuzz`, and the corpus replay test):
///   - parsing never crashes, whatever the bytes (the daemon parses untrusted input);
///   - percent-encoding round-trips every byte string exactly, leaving no separator;
///   - a parsed request, encoded again field by field, parses back to the same request;
///   - the parser for answers and pushes (the clients' side) never crashes either.
/// Each broken rule is returned as a sentence: the fuzzer aborts on the first (a crash is what
/// libFuzzer keeps), a test reports them all as its own failure.
enum FuzzChecks {
    static func violations(_ bytes: [UInt8]) -> [String] {
        var found: [String] = []
        // Every line of the input, as the frame decoder splits it.
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            if let v = lineViolation(Array(line)) { found.append(v) }
        }
        let encoded = PercentEncoding.encode(bytes)
        if encoded.contains(UInt8(ascii: " ")) || encoded.contains(UInt8(ascii: "\n")) {
            found.append("encoding left a separator")
        }
        if PercentEncoding.decode(encoded) != bytes { found.append("percent-encoding does not round-trip") }
        _ = WireMessage(line: bytes)
        return found
    }

    static func lineViolation(_ line: [UInt8]) -> String? {
        guard case .request(let req) = WireParser.parse(line) else { return nil }
        var again = WireLine(req.tag)
        again.field(Array(req.verb.utf8))
        for f in req.fields { again.field(f.bytes) }
        for (k, v) in req.options.sorted(by: { $0.key < $1.key }) { again.option(k, v) }
        guard case .request(let back) = WireParser.parse(again.bytes) else {
            return "a re-encoded request no longer parses: \(again.bytes)"
        }
        return roundTripViolation(original: req, back: back)
    }

    /// Compares a request with what it parses back to once re-encoded. A positional field that
    /// reads as `key=value` once encoded (`a%3Db` decodes to `a=b`, which needs no escape) comes
    /// back as an option, overridden by a real option of the same key; everything else must come
    /// back exactly, in order.
    static func roundTripViolation(original req: WireRequest, back: WireRequest) -> String? {
        if back.tag != req.tag || back.verb != req.verb { return "tag or verb changed in a round trip" }
        var fields: [WireRequest.Field] = []
        var options: [String: [UInt8]] = [:]
        for f in req.fields {
            let encoded = PercentEncoding.encode(f.bytes)
            if case .request(let one) = WireParser.parse(Array("t V ".utf8) + encoded), one.fields.isEmpty,
               let (key, value) = one.options.first {
                options[key] = value
            } else {
                fields.append(f)
            }
        }
        options.merge(req.options) { _, real in real }
        if back.fields != fields { return "fields changed in a round trip: \(req.fields) became \(back.fields)" }
        if back.options != options { return "options changed in a round trip: \(options) became \(back.options)" }
        return nil
    }
}

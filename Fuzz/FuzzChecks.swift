#if canImport(SyncBadgeCore)
import SyncBadgeCore
#endif

/// What must hold for any bytes a client could send (`make fuzz`, and the corpus replay test):
///   - parsing never crashes, whatever the bytes (the daemon parses untrusted input);
///   - percent-encoding round-trips every byte string exactly, leaving no separator;
///   - a parsed request, encoded again field by field, parses back to the same request;
///   - the parser for answers and pushes (the clients' side) never crashes either.
enum FuzzChecks {
    static func check(_ bytes: [UInt8]) {
        // Every line of the input, as the frame decoder splits it.
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            checkLine(Array(line))
        }
        let encoded = PercentEncoding.encode(bytes)
        precondition(!encoded.contains(UInt8(ascii: " ")) && !encoded.contains(UInt8(ascii: "\n")), "encoding left a separator")
        precondition(PercentEncoding.decode(encoded) == bytes, "percent-encoding does not round-trip")
        _ = WireMessage(line: bytes)
    }

    static func checkLine(_ line: [UInt8]) {
        guard case .request(let req) = WireParser.parse(line) else { return }
        var again = WireLine(req.tag)
        again.field(Array(req.verb.utf8))
        for f in req.fields { again.field(f.bytes) }
        for (k, v) in req.options.sorted(by: { $0.key < $1.key }) { again.option(k, v) }
        guard case .request(let back) = WireParser.parse(again.bytes) else {
            preconditionFailure("a re-encoded request no longer parses: \(again.bytes)")
        }
        precondition(back.tag == req.tag && back.verb == req.verb, "tag or verb changed in a round trip")
        // A positional field that reads as `key=value` once decoded comes back as an option:
        // the rest must come back exactly.
        if back.fields.count == req.fields.count {
            precondition(back.fields == req.fields, "fields changed in a round trip")
        }
        for (k, v) in req.options { precondition(back.options[k] == v, "option \(k) changed in a round trip") }
    }
}

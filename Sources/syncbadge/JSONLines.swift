import SyncBadgeClient
import SyncBadgeProtocol

enum JSON {
    static func string(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 {
                    let hex = String(u.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }

    /// A path as JSON: text when it is valid UTF-8, else its percent-encoded wire form with
    /// `"path_encoded": true`.
    static func path(_ p: [UInt8], key: String = "path") -> String {
        if let s = String(validating: p, as: UTF8.self) { return "\(string(key)):\(string(s))" }
        return "\(string(key)):\(string(String(decoding: PercentEncoding.encode(p), as: UTF8.self))),\"\(key)_encoded\":true"
    }

    static func item(_ i: Item) -> String {
        var fields = [path(i.path), "\"state\":\(string(i.stateName))", "\"badge\":\(string(i.badge))", "\"kind\":\(string(i.kind.name))"]
        if let g = i.gen { fields.append("\"gen\":\(g)") }
        if let p = i.progress { fields.append("\"progress\":\(p)") }
        if let m = i.message { fields.append("\"message\":\(string(m))") }
        if let c = i.counts {
            let parts = SyncState.allCases.filter { c[$0] != 0 }.map { "\(string($0.name)):\(c[$0])" }
            fields.append("\"counts\":{\(parts.joined(separator: ","))}")
        }
        return "{" + fields.joined(separator: ",") + "}"
    }
}

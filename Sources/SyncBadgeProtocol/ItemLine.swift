/// The one `ITEM` encoder: `<head> ITEM <path> <state> badge=<id> kind=<kind> [progress=]
/// [message=] gen=<n> [counts=]`, appended to a buffer the caller keeps. The hot paths (STATUS,
/// LIST) call it straight from the tree (`StateTree.appendItemLine`), pushes through
/// `Item.wireLine`; both therefore say the same bytes.
public enum ItemLine {
    /// `pathIsPlain`: the path is printable ASCII without `%`, so its encoding is itself (a
    /// path taken from a request that `PathBytes.plainPath` accepted).
    public static func append(head: ArraySlice<UInt8>, path: ArraySlice<UInt8>, pathIsPlain: Bool = false,
                              state: SyncState, badge: String,
                              kind: EntryKind, progress: UInt8?, message: String?, gen: UInt64,
                              counts: StateCounts?, into out: inout [UInt8]) {
        out.append(contentsOf: head)
        append(" ITEM ", &out)
        if pathIsPlain {
            out.append(contentsOf: path)
        } else {
            PercentEncoding.encode(path, into: &out)
        }
        out.append(UInt8(ascii: " "))
        append(state.name, &out)
        append(" badge=", &out)
        appendEncoded(badge, &out)
        append(" kind=", &out)
        append(kind.name, &out)
        if let progress {
            append(" progress=", &out)
            appendDecimal(UInt64(progress), &out)
        }
        if let message {
            append(" message=", &out)
            appendEncoded(message, &out)
        }
        append(" gen=", &out)
        appendDecimal(gen, &out)
        if let counts {
            append(" counts=", &out)
            var first = true
            for s in SyncState.allCases where counts[s] != 0 {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                append(s.name, &out)
                out.append(UInt8(ascii: ":"))
                appendDecimal(UInt64(counts[s]), &out)
            }
        }
    }

    @inline(__always)
    static func append(_ s: String, _ out: inout [UInt8]) {
        var s = s
        s.withUTF8 { out.append(contentsOf: $0) }
    }

    @inline(__always)
    static func appendEncoded(_ s: String, _ out: inout [UInt8]) {
        var s = s
        s.withUTF8 { PercentEncoding.encode($0, into: &out) }
    }

    /// A decimal without `String(describing:)`'s allocation.
    static func appendDecimal(_ v: UInt64, _ out: inout [UInt8]) {
        if v < 10 {
            out.append(UInt8(ascii: "0") + UInt8(v))
            return
        }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var n = 0
        var v = v
        withUnsafeMutableBytes(of: &digits) { d in
            while v > 0 {
                d[n] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
                n += 1
            }
            for k in stride(from: n - 1, through: 0, by: -1) { out.append(d[k]) }
        }
    }
}

extension Item: MessageLine {
    public static let kind = MessageKind.item

    public func wireLine(head: String) -> WireLine {
        guard let state, let gen else { return Self.outsideLine(head: head, path: path, kind: kind) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(path.count + 64)
        ItemLine.append(head: Array(head.utf8)[...], path: path[...], state: state, badge: badge, kind: kind,
                        progress: progress, message: message, gen: gen, counts: counts, into: &bytes)
        return WireLine(bytes: bytes)
    }

    /// A path under no root: `<head> ITEM <path> outside badge=outside kind=<kind>`.
    public static func outsideLine(head: String, path: [UInt8], kind: EntryKind) -> WireLine {
        var line = WireLine(head)
        line.word(MessageKind.item.rawValue)
        line.field(path)
        line.word(outsideName)
        line.option("badge", outsideName)
        line.option("kind", kind.name)
        return line
    }
}

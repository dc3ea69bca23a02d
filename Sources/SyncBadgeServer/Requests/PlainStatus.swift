import Glibc
import NIOCore
import SyncBadgeCore

/// `STATUS` as prompts, file managers and scripts send it, often many per write: answered from
/// the request's bytes straight into the output, with no `WireRequest`, `String` or dictionary
/// per request and no allocation once the scratch buffers have grown (PERFORMANCE.md,
/// "Pipelined STATUS"). Only the plain form takes this way: every field a path with no escape
/// (`PathBytes.plainPath`), every path an entry or tombstone under a root. Anything else (an
/// option, an escape, a CR, a path outside every root or not found) goes the general way, which
/// answers the same bytes.
struct PlainStatus {
    private static let verb: [UInt8] = Array(" STATUS ".utf8)
    private static let ok: [UInt8] = Array(" OK\n".utf8)

    private var line: [UInt8] = []
    private var found: [(id: StateTree.NodeID, start: Int, end: Int, ascii: Bool)] = []
    private(set) var answered: [UInt8] = []

    /// True when `request` (a line without its LF) was a plain `STATUS`, whose answer is then
    /// in `answered` until the next request. One method for the whole request: the hub, a
    /// class, then checks its access to these buffers and to the tree once per request rather
    /// than once per use (swift_beginAccess was a tenth of the time).
    mutating func answer(_ request: ByteBuffer, tree: inout StateTree) -> Bool {
        // `<tag> STATUS /…`: cheap checks before any copy, on the bytes in place (each use of
        // a ByteBufferView checks its access to the buffer's storage).
        let tagEnd: Int? = request.withUnsafeReadableBytes { raw in
            guard raw.count > Self.verb.count + 1, raw[raw.count - 1] != UInt8(ascii: "\r"),
                  let space = raw.firstIndex(of: UInt8(ascii: " ")), raw.count - space > Self.verb.count,
                  Self.verb.withUnsafeBytes({ verb in memcmp(raw.baseAddress! + space, verb.baseAddress!, verb.count) == 0 })
            else { return nil }
            line.removeAll(keepingCapacity: true)
            line.append(contentsOf: raw.assumingMemoryBound(to: UInt8.self))
            return space
        }
        guard let tagEnd else { return false }
        guard WireParser.isTag(line[..<tagEnd]) else { return false }
        answered.removeAll(keepingCapacity: true)
        guard tree.appendPlainStatus(line[...], tag: 0..<tagEnd, fieldsFrom: tagEnd + Self.verb.count,
                                     found: &found, into: &answered) else { return false }
        answered.append(contentsOf: line[..<tagEnd])
        answered.append(contentsOf: Self.ok)
        return true
    }

    /// Once the answer is written: a line of thousands of paths does not keep its buffers for
    /// the daemon's life.
    mutating func trim() {
        if answered.capacity > 1 << 16 || line.capacity > 1 << 16 {
            self = PlainStatus()
        }
    }
}

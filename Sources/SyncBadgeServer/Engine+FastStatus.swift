import NIOCore
import SyncBadgeCore

/// `STATUS` as prompts, file managers and scripts send it, often many per write: answered from
/// the request's bytes straight into the output, with no `WireRequest`, `String` or dictionary
/// per request and no allocation once the scratch buffers have grown (PERFORMANCE.md,
/// "Pipelined STATUS"). Only the plain form takes this way: every field a path with no escape,
/// every path an entry or tombstone under a root. Anything else (an option, an escape, a CR,
/// a path outside every root or not found) goes the general way, which answers the same bytes.
extension Engine {
    private static let statusVerb: [UInt8] = Array(" STATUS ".utf8)

    /// True when the line was answered here.
    func fastStatus(_ buffer: ByteBuffer, _ s: Session) -> Bool {
        let view = buffer.readableBytesView
        // `<tag> STATUS /…`: cheap checks before any copy.
        guard view.count > Self.statusVerb.count + 1, view.last != UInt8(ascii: "\r"),
              let space = view.firstIndex(of: UInt8(ascii: " ")),
              view[space...].starts(with: Self.statusVerb) else { return false }
        fastLine.removeAll(keepingCapacity: true)
        fastLine.append(contentsOf: view)
        let line = fastLine[...]
        let tagEnd = space - view.startIndex
        guard WireParser.isTag(line[..<tagEnd]) else { return false }
        fastNodes.removeAll(keepingCapacity: true)
        var i = tagEnd + Self.statusVerb.count
        while i <= line.endIndex {
            var j = i
            while j < line.endIndex && line[j] != UInt8(ascii: " ") { j += 1 }
            let field = line[i..<j]
            guard PathBytes.isNormalizedAbsolute(field), !field.contains(UInt8(ascii: "%")),
                  let id = tree.find(slice: field) else { return false }
            fastNodes.append((id, i, j))
            i = j + 1
        }
        fastOut.removeAll(keepingCapacity: true)
        let tag = line[..<tagEnd]
        for (id, start, end) in fastNodes {
            tree.appendItemLine(id, path: line[start..<end], head: tag, into: &fastOut)
        }
        fastOut.append(contentsOf: tag)
        fastOut.append(contentsOf: Self.ok)
        s.writeLines(fastOut)
        // A line of thousands of paths does not keep its buffers for the daemon's life.
        if fastOut.capacity > 1 << 16 || fastLine.capacity > 1 << 16 {
            fastOut = []
            fastLine = []
            fastNodes = []
        }
        return true
    }

    private static let ok: [UInt8] = Array(" OK\n".utf8)
}

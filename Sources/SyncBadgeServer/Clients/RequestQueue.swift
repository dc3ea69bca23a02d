import NIOCore
import SyncBadgeCore

/// One client's requests in arrival order (PROTOCOL.md: answered strictly in order). While a
/// request waits for something slow (a root scan, a database write, an `ANSWER`), the lines
/// after it queue here, and go on once it is answered.
struct RequestQueue {
    private var queued: [ByteBuffer] = []
    private var head = 0
    /// A request is waiting for its answer.
    var waiting = false

    /// Nothing waits and nothing is queued: a line can be answered at once.
    var isIdle: Bool { !waiting && head == queued.count }

    mutating func enqueue(_ line: ByteBuffer) {
        queued.append(line)
    }

    /// The next queued line to answer, unless a request waits.
    mutating func next() -> ByteBuffer? {
        guard !waiting, head < queued.count else { return nil }
        let line = queued[head]
        head += 1
        if head == queued.count {
            queued.removeAll(keepingCapacity: true)
            head = 0
        }
        return line
    }

    /// The `SET` requests queued next, up to the first line that is something else: pipelined
    /// SETs share one barrier and one commit.
    mutating func takeSets() -> [WireRequest] {
        var sets: [WireRequest] = []
        while head < queued.count,
              case .request(let r) = WireParser.parse(queued[head].readableBytesView), r.verb == Verb.set.rawValue {
            sets.append(r)
            head += 1
        }
        if head == queued.count {
            queued.removeAll(keepingCapacity: true)
            head = 0
        }
        return sets
    }
}

import NIOCore
import SyncBadgeCore

/// One client's requests in arrival order (PROTOCOL.md: answered strictly in order). While a
/// request waits for something slow (a root scan, a database write, an `ANSWER`), the lines
/// after it queue here, and go on once it is answered.
struct RequestQueue {
    private var queued: [ByteBuffer] = []
    private var head = 0
    /// Whose turn it is: the next line's, or the answer of the request being handled.
    private(set) var turn = Turn.free

    enum Turn: Equatable {
        /// The next line may be answered.
        case free
        /// A request is being answered; the lines after it wait.
        case awaitingAnswer
    }

    var waiting: Bool { turn == .awaitingAnswer }

    /// Nothing waits and nothing is queued: a line can be answered at once.
    var isIdle: Bool { turn == .free && head == queued.count }

    /// A request starts being answered. Only from `free`: two requests of one client are never
    /// answered at once (PROTOCOL.md: in order).
    mutating func awaitAnswer() {
        assert(turn == .free, "a second request answered while one waits")
        turn = .awaitingAnswer
    }

    /// The request is answered: the lines after it go on. Whether one was awaited.
    @discardableResult
    mutating func answered() -> Bool {
        defer { turn = .free }
        return turn == .awaitingAnswer
    }

    mutating func enqueue(_ line: ByteBuffer) {
        queued.append(line)
    }

    /// The next queued line to answer, unless a request waits.
    mutating func next() -> ByteBuffer? {
        guard turn == .free, head < queued.count else { return nil }
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

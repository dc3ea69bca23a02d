import NIOCore
import SyncBadgeCore

/// What the hub has to say to each client, by client id (in the client's slot, ClientSlot),
/// until its connection writes it
/// out: the hub appends answers and pushes here and never calls into a connection; at the
/// end of a read or of an event batch the hub hands each connection what it holds
/// (`take`). No I/O.
struct Outbox {
    /// Output held before reading stops, and pushes are dropped in favour of `* RESET`.
    static let highWater = 1 << 20

    private struct Pending {
        var bytes: ByteBuffer
        /// In `ready`: it has bytes, or a close, to hand over.
        var listed = false
        /// Closed once what it holds is written (`BYE`): nothing more is added.
        var close = false
    }

    private let allocator: ByteBufferAllocator
    private var pending: [Pending?] = []
    /// The client in each slot of `pending` (0: none), apart from it so that finding a slot
    /// reads no `Pending`.
    private var owners: [Int] = []
    /// Clients with something to hand over, in the order they got it.
    private var ready: [Int] = []
    /// The buffers a plain `STATUS` is answered in. Here, not in the hub: the hub is a class,
    /// and each of its properties a line touches costs a dynamic exclusivity check, more
    /// when nested in another (the answer's buffers, the tree, then the client's output were
    /// three, a tenth of a pipelined STATUS's time; PERFORMANCE.md, "Session 13").
    private var plainStatus = PlainStatus()

    init(allocator: ByteBufferAllocator = ByteBufferAllocator()) {
        self.allocator = allocator
    }

    mutating func open(_ id: Int) {
        let i = ClientSlot.index(of: id)
        if i >= pending.count {
            pending.append(contentsOf: repeatElement(nil, count: i + 1 - pending.count))
            owners.append(contentsOf: repeatElement(0, count: i + 1 - owners.count))
        }
        owners[i] = id
        pending[i] = Pending(bytes: allocator.buffer(capacity: 4096))
    }

    /// The connection is gone: what it did not take is dropped.
    mutating func closed(_ id: Int) {
        guard let i = slot(id) else { return }
        owners[i] = 0
        pending[i] = nil
    }

    /// The slot of an open client. Never for 0, a free slot's mark.
    private func slot(_ id: Int) -> Int? {
        let i = ClientSlot.index(of: id)
        return id != 0 && i < owners.count && owners[i] == id ? i : nil
    }

    /// Bytes held for the client and not taken yet.
    mutating func heldBytes(_ id: Int) -> Int {
        guard let i = slot(id) else { return 0 }
        return Self.held(&pending[i]!)
    }

    private static func held(_ p: inout Pending) -> Int { p.bytes.readableBytes }

    var hasReady: Bool { !ready.isEmpty }

    // MARK: Adding

    /// Bytes already framed (whole lines, LFs included).
    mutating func writeLines(_ id: Int, _ bytes: [UInt8]) {
        // Not through `append`'s closure: a pipelined STATUS's every answer comes here, and the
        // closure retained and released the array each time.
        guard let i = slot(id) else { return }
        if Self.writeLines(&pending[i]!, bytes) { ready.append(id) }
    }

    private static func writeLines(_ p: inout Pending, _ bytes: [UInt8]) -> Bool {
        guard !p.close else { return false }
        p.bytes.writeBytes(bytes)
        return list(&p)
    }

    /// Answers `request` into the client's output when it is a plain `STATUS` (PlainStatus);
    /// false, with nothing written, for any other line.
    mutating func answerPlainStatus(_ request: ByteBuffer, for id: Int, tree: inout StateTree) -> Bool {
        guard plainStatus.answer(request, tree: &tree) else { return false }
        if let i = slot(id), Self.writeLines(&pending[i]!, plainStatus.answered) { ready.append(id) }
        plainStatus.trim()
        return true
    }

    mutating func write(_ id: Int, _ line: WireLine) {
        append(id) {
            $0.writeBytes(line.bytes)
            $0.writeInteger(UInt8(ascii: "\n"))
        }
    }

    mutating func ok(_ id: Int, _ tag: String, _ ok: Ok = .plain) {
        write(id, ok.wireLine(head: tag))
    }

    mutating func error(_ id: Int, _ tag: String, _ err: Err) {
        write(id, err.wireLine(head: tag))
    }

    mutating func error(_ id: Int, _ tag: String, _ code: String, message: [UInt8]? = nil) {
        error(id, tag, Err(code, message: message))
    }

    /// Closes the connection once what it holds is written.
    mutating func close(_ id: Int) {
        guard let i = slot(id) else { return }
        if Self.close(&pending[i]!) { ready.append(id) }
    }

    /// In place: the entry is changed where it is, so its buffer is not copied. (Reading a
    /// field of a copy of `Pending` costs a retain and a release of its buffer, on every line
    /// of a pipelined STATUS.)
    private mutating func append(_ id: Int, _ body: (inout ByteBuffer) -> Void) {
        guard let i = slot(id) else { return }
        if Self.append(&pending[i]!, body) { ready.append(id) }
    }

    /// Whether the client is newly ready.
    private static func close(_ p: inout Pending) -> Bool {
        guard !p.close else { return false }
        p.close = true
        return list(&p)
    }

    private static func append(_ p: inout Pending, _ body: (inout ByteBuffer) -> Void) -> Bool {
        guard !p.close else { return false }
        body(&p.bytes)
        return list(&p)
    }

    private static func list(_ p: inout Pending) -> Bool {
        guard !p.listed else { return false }
        p.listed = true
        return true
    }

    // MARK: Handing over

    /// The clients with something to hand over, swapped into `batch` (empty on entry), whose
    /// storage is reused from one delivery to the next.
    mutating func takeReady(into batch: inout [Int]) {
        swap(&ready, &batch)
    }

    /// What the client's connection is to write now, and whether to close it after.
    ///
    /// A write held by a client that does not read keeps its buffer's whole storage alive:
    /// a 70-byte push must not pin a buffer grown for a big listing. Small chunks are copied
    /// into buffers of their own size; a mostly full buffer is handed over as it is.
    mutating func take(_ id: Int) -> (chunk: ByteBuffer?, close: Bool) {
        guard let i = slot(id) else { return (nil, false) }
        return Self.take(&pending[i]!, allocator)
    }

    private static func take(_ p: inout Pending, _ allocator: ByteBufferAllocator) -> (chunk: ByteBuffer?, close: Bool) {
        p.listed = false
        let held = p.bytes.readableBytes
        guard held > 0 else { return (nil, p.close) }
        let chunk: ByteBuffer
        if held * 2 >= p.bytes.capacity {
            chunk = p.bytes
            p.bytes = allocator.buffer(capacity: 4096)
        } else {
            var exact = allocator.buffer(capacity: held)
            exact.writeBuffer(&p.bytes)
            chunk = exact
            p.bytes.clear()
        }
        return (chunk, p.close)
    }
}

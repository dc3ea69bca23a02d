import NIOCore
import SyncBadgeCore

/// What the hub has to say to each client, by client id, until its connection writes it
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
    private var pending: [Int: Pending] = [:]
    /// Clients with something to hand over, in the order they got it.
    private var ready: [Int] = []

    init(allocator: ByteBufferAllocator = ByteBufferAllocator()) {
        self.allocator = allocator
    }

    mutating func open(_ id: Int) {
        pending[id] = Pending(bytes: allocator.buffer(capacity: 4096))
    }

    /// The connection is gone: what it did not take is dropped.
    mutating func closed(_ id: Int) {
        pending.removeValue(forKey: id)
    }

    /// Bytes held for the client and not taken yet.
    func heldBytes(_ id: Int) -> Int {
        pending[id]?.bytes.readableBytes ?? 0
    }

    var hasReady: Bool { !ready.isEmpty }

    // MARK: Adding

    /// Bytes already framed (whole lines, LFs included).
    mutating func writeLines(_ id: Int, _ bytes: [UInt8]) {
        append(id) { $0.writeBytes(bytes) }
    }

    mutating func write(_ id: Int, _ line: WireLine) {
        append(id) {
            $0.writeBytes(line.bytes)
            $0.writeInteger(UInt8(ascii: "\n"))
        }
    }

    mutating func ok(_ id: Int, _ tag: String, _ extra: (inout WireLine) -> Void = { _ in }) {
        var line = WireLine(tag)
        line.word("OK")
        extra(&line)
        write(id, line)
    }

    mutating func error(_ id: Int, _ tag: String, _ code: String, message: [UInt8]? = nil, extra: String? = nil) {
        var line = WireLine(tag)
        line.word("ERR")
        line.word(code)
        if let extra { line.word(extra) }
        if let message { line.option("message", message) }
        write(id, line)
    }

    /// Closes the connection once what it holds is written.
    mutating func close(_ id: Int) {
        guard let i = pending.index(forKey: id), !pending.values[i].close else { return }
        pending.values[i].close = true
        list(i, id)
    }

    /// In place: the dictionary's value is changed where it is, so its buffer is not copied.
    private mutating func append(_ id: Int, _ body: (inout ByteBuffer) -> Void) {
        guard let i = pending.index(forKey: id), !pending.values[i].close else { return }
        body(&pending.values[i].bytes)
        list(i, id)
    }

    private mutating func list(_ i: Dictionary<Int, Pending>.Index, _ id: Int) {
        guard !pending.values[i].listed else { return }
        pending.values[i].listed = true
        ready.append(id)
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
        guard let i = pending.index(forKey: id) else { return (nil, false) }
        pending.values[i].listed = false
        let close = pending.values[i].close
        let held = pending.values[i].bytes.readableBytes
        guard held > 0 else { return (nil, close) }
        let chunk: ByteBuffer
        if held * 2 >= pending.values[i].bytes.capacity {
            chunk = pending.values[i].bytes
            pending.values[i].bytes = allocator.buffer(capacity: 4096)
        } else {
            var exact = allocator.buffer(capacity: held)
            exact.writeBuffer(&pending.values[i].bytes)
            chunk = exact
            pending.values[i].bytes.clear()
        }
        return (chunk, close)
    }
}

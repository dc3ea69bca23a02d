import NIOCore
import SyncBadgeCore

/// One client connection. Requests are answered strictly in order: while one waits for
/// something slow (a root scan, a database write), later lines queue behind it. Output is
/// gathered and written once per read batch or event batch.
final class Session: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Output held before reading stops, and pushes are dropped in favour of `* RESET`.
    static let outputHighWater = 1 << 20

    let engine: Engine
    let id: Int
    let peerPID: Int32
    private(set) var context: ChannelHandlerContext?
    var role: Role?
    var name: String
    /// What this connection missed while it read too slowly.
    var backpressure = Backpressure()
    /// `HELLO roots=0`: no `* ROOT` pushes (protocol 1.1, `roots-optout`).
    var wantsRootPushes = true
    /// Roots whose change feed this connection subscribed to.
    var subscriptions: Set<[UInt8]> = []
    /// A provider's menu items by kind, in definition order.
    var menus: [String: [MenuItem]] = [:]

    private var out: ByteBuffer
    /// Bytes read and not framed yet: the start of a line whose LF has not come.
    private var inbound: ByteBuffer?
    private var framer = LineFramer()
    /// Lines received while a request waits, in order.
    private var queued: [ByteBuffer] = []
    private var queuedHead = 0
    private var waiting = false
    private(set) var isClosing = false

    init(engine: Engine, id: Int, peerPID: Int32, allocator: ByteBufferAllocator) {
        self.engine = engine
        self.id = id
        self.peerPID = peerPID
        self.name = "pid-\(peerPID)"
        self.out = allocator.buffer(capacity: 4096)
    }

    var isActive: Bool { context != nil && !isClosing }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        engine.sessionOpened(self)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        engine.sessionClosed(self)
    }

    /// Every complete line of a read is answered here, in one call: no pipeline hop per line.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var read = unwrapInboundIn(data)
        guard !isClosing, !framer.failed else { return }
        if var rest = inbound {
            inbound = nil
            // Only a partial line is left over: moved to the front so that the buffer does not
            // grow by a read's worth each time.
            rest.discardReadBytes()
            rest.writeBuffer(&read)
            read = rest
        }
        while !isClosing, let frame = framer.next(&read) {
            switch frame {
            case .line(let line):
                if waiting || queuedHead < queued.count {
                    queued.append(line)
                } else {
                    process(line)
                }
            case .tooLong:
                // At once, not behind a request that waits for a scan or a commit (PROTOCOL.md:
                // as soon as the daemon holds more than that without an LF); what queued is
                // dropped.
                bye("too-long")
            }
        }
        if read.readableBytes > 0 && !isClosing { inbound = read }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        endOfBatch()
    }

    /// A batch of requests is done (a read, or the lines that queued behind a slow request):
    /// what they pushed to other connections (a CLAIM's `* ROOT`, say) goes out now as well,
    /// not with whatever event comes next (PROTOCOL.md: a push goes out as soon as its event
    /// is processed).
    private func endOfBatch() {
        engine.flushDirty()
        flush()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        guard context.channel.isWritable else { return }
        resumeReadingIfDrained()
        guard backpressure.hasMissed else { return }
        let catchUp = backpressure.caughtUp(observing: { engine.observerIndex.isObserving(id, $0) },
                                            subscribed: { subscriptions.contains($0) })
        for missed in catchUp {
            switch missed {
            case .root(let root): write(engine.currentRootLine(root))
            case .badge(let badge): if let line = engine.badgeLine(badge) { write(line) }
            case .toolbar(let name): write(engine.toolbarLine("*", engine.toolbars.current(named: name)))
            case .reset(let node): engine.writeReset(node, to: self)
            case .resetChanges(let root):
                var line = WireLine("*")
                line.word("RESET-CHANGES")
                line.field(root)
                write(line)
            }
        }
        flush()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }

    // MARK: Requests

    private func process(_ line: ByteBuffer) {
        guard !isClosing else { return }
        if role != nil && engine.fastStatus(line, self) { return }
        switch WireParser.parse(line.readableBytesView) {
        case .empty:
            return
        case .badTag:
            bye("bad-request")
        case .malformed(let tag):
            error(tag, "bad-request")
        case .request(let request):
            if request.verb == Verb.set.rawValue && role == .provider {
                // Pipelined SETs share one barrier and one commit.
                waiting = !engine.handleSets([request] + takeQueuedSets(), from: self)
            } else if !engine.handle(request, from: self) {
                waiting = true
            }
        }
    }

    /// The `SET` requests queued next, up to the first line that is something else.
    private func takeQueuedSets() -> [WireRequest] {
        var sets: [WireRequest] = []
        while queuedHead < queued.count,
              case .request(let r) = WireParser.parse(queued[queuedHead].readableBytesView), r.verb == Verb.set.rawValue {
            sets.append(r)
            queuedHead += 1
        }
        return sets
    }

    /// The slow request answered: go on with the lines that queued behind it.
    func resume() {
        waiting = false
        while !waiting && !isClosing && queuedHead < queued.count {
            let line = queued[queuedHead]
            queuedHead += 1
            process(line)
        }
        if queuedHead == queued.count {
            queued.removeAll(keepingCapacity: true)
            queuedHead = 0
        }
        endOfBatch()
    }

    // MARK: Output

    /// Bytes already framed (whole lines, LFs included).
    func writeLines(_ bytes: [UInt8]) {
        out.writeBytes(bytes)
    }

    func write(_ line: WireLine) {
        out.writeBytes(line.bytes)
        out.writeInteger(UInt8(ascii: "\n"))
    }

    func ok(_ tag: String, _ extra: (inout WireLine) -> Void = { _ in }) {
        var line = WireLine(tag)
        line.word("OK")
        extra(&line)
        write(line)
    }

    func error(_ tag: String, _ code: String, message: [UInt8]? = nil, extra: String? = nil) {
        var line = WireLine(tag)
        line.word("ERR")
        line.word(code)
        if let extra { line.word(extra) }
        if let message { line.option("message", message) }
        write(line)
    }

    /// A push: written, or for a slow reader dropped and made up for once it catches up
    /// (Backpressure). Every client gets `* ROOT` and `* BADGE`, so a client that never reads
    /// would otherwise hold them all.
    func push(_ line: WireLine, _ what: Backpressure.Push) {
        guard isActive else { return }
        if case .root = what, !wantsRootPushes { return }
        guard backpressure.push(what, backedUp: isBackedUp) else { return }
        write(line)
        engine.markDirty(self)
    }

    var isBackedUp: Bool {
        guard let context else { return false }
        return !context.channel.isWritable || out.readableBytes > Self.outputHighWater
    }

    func flush() {
        guard let context, out.readableBytes > 0 else { return }
        // A write held by a client that does not read keeps its buffer's whole storage alive:
        // a 70-byte push must not pin a buffer grown for a big listing. Small chunks are copied
        // into buffers of their own size; a mostly full buffer is handed over as it is.
        let chunk: ByteBuffer
        if out.readableBytes * 2 >= out.capacity {
            chunk = out
            out = context.channel.allocator.buffer(capacity: 4096)
        } else {
            var exact = context.channel.allocator.buffer(capacity: out.readableBytes)
            exact.writeBuffer(&out)
            chunk = exact
            out.clear()
        }
        context.writeAndFlush(wrapOutboundOut(chunk), promise: nil)
        // Not once the write failed and closed the channel (a client gone with pushes unread):
        // pausing reads on a channel on its way out trips swift-nio's registration assertion.
        if !context.channel.isWritable && context.channel.isActive {
            // Stop reading requests from a client that does not read its answers.
            try? context.channel.syncOptions?.setOption(ChannelOptions.autoRead, value: false)
        }
    }

    private func resumeReadingIfDrained() {
        guard let context, context.channel.isActive else { return }
        try? context.channel.syncOptions?.setOption(ChannelOptions.autoRead, value: true)
    }

    /// `* BYE <reason>`, then close.
    func bye(_ reason: String) {
        guard !isClosing else { return }
        var line = WireLine("*")
        line.word("BYE")
        line.word(reason)
        write(line)
        close()
    }

    /// Flushes what is pending and closes.
    func close() {
        guard !isClosing, let context else { return }
        flush()
        isClosing = true
        context.close(promise: nil)
    }
}

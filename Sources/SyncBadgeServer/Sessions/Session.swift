import NIOCore
import SyncBadgeCore

/// One client connection, a thin adapter between NIO and the hub: it frames the lines it
/// reads and hands each to the hub with its client id, and writes what the hub hands it
/// from the outbox (once per read batch or event batch). It keeps no state of the client's
/// own (Clients) and never reads the hub's.
final class Session: ChannelInboundHandler, ClientConnection {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Output held before reading stops, and pushes are dropped in favour of `* RESET`.
    static let outputHighWater = Outbox.highWater

    let hub: Hub
    /// Given by the hub once the handler is added.
    private(set) var id = 0
    let peerPID: Int32
    private var context: ChannelHandlerContext?
    private var reader = LineReader()
    private var isClosing = false

    init(hub: Hub, peerPID: Int32) {
        self.hub = hub
        self.peerPID = peerPID
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        id = hub.opened(peerPID: peerPID, connection: self)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        hub.closed(id)
    }

    /// Every complete line of a read is handed over here, in one call: no pipeline hop per line.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !isClosing else { return }
        reader.read(unwrapInboundIn(data), line: { hub.received($0, from: id) }, tooLong: { hub.tooLong(id) })
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        hub.readComplete(id)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        let writable = context.channel.isWritable
        if writable { resumeReadingIfDrained() }
        hub.writabilityChanged(id, writable: writable)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }

    // MARK: Output (ClientConnection)

    func write(_ chunk: ByteBuffer) {
        guard let context else { return }
        context.writeAndFlush(wrapOutboundOut(chunk), promise: nil)
        // Not once the write failed and closed the channel (a client gone with pushes unread):
        // pausing reads on a channel on its way out trips swift-nio's registration assertion.
        if !context.channel.isWritable && context.channel.isActive {
            // Stop reading requests from a client that does not read its answers.
            try? context.channel.syncOptions?.setOption(ChannelOptions.autoRead, value: false)
        }
    }

    func close() {
        guard !isClosing, let context else { return }
        isClosing = true
        context.close(promise: nil)
    }

    private func resumeReadingIfDrained() {
        guard let context, context.channel.isActive else { return }
        try? context.channel.syncOptions?.setOption(ChannelOptions.autoRead, value: true)
    }
}

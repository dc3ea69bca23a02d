import NIOCore

/// Splits input at LF: each line goes on as a `ByteBuffer` without its LF. A peer holding more
/// than `maxLineLength` bytes without an LF gets a `LineTooLong` user event once, after the lines
/// before it, and nothing after it is decoded (the connection is closed).
///
/// Lines travel as plain `ByteBuffer`s, which `NIOAny` carries without boxing or a dynamic cast
/// (as an enum, unwrapping each line was 4% of a pipelined `STATUS`: PERFORMANCE.md).
struct LineFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    struct LineTooLong: Sendable {}

    static let maxLineLength = 65_536

    let maxLineLength: Int
    var searchedUpTo = 0
    var failed = false

    init(maxLineLength: Int = LineFrameDecoder.maxLineLength) {
        self.maxLineLength = maxLineLength
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        if failed {
            buffer.moveReaderIndex(to: buffer.writerIndex)
            return .needMoreData
        }
        let view = buffer.readableBytesView
        let start = view.startIndex + searchedUpTo
        if let lf = view[start...].firstIndex(of: UInt8(ascii: "\n")) {
            let length = lf - view.startIndex
            // A CR before the LF is not part of the line, so it does not count against the limit.
            let contentLength = length > 0 && view[lf - 1] == UInt8(ascii: "\r") ? length - 1 : length
            if contentLength > maxLineLength {
                return tooLong(context: context, buffer: &buffer)
            }
            let line = buffer.readSlice(length: length)!
            buffer.moveReaderIndex(forwardBy: 1)
            searchedUpTo = 0
            context.fireChannelRead(Self.wrapInboundOut(line))
            return .continue
        }
        searchedUpTo = view.count
        let trailingCR = view.last == UInt8(ascii: "\r") ? 1 : 0
        if view.count - trailingCR > maxLineLength {
            return tooLong(context: context, buffer: &buffer)
        }
        return .needMoreData
    }

    mutating func tooLong(context: ChannelHandlerContext, buffer: inout ByteBuffer) -> DecodingState {
        failed = true
        buffer.moveReaderIndex(to: buffer.writerIndex)
        context.fireUserInboundEventTriggered(LineTooLong())
        return .needMoreData
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        // A last line without LF is not a complete message.
        buffer.moveReaderIndex(to: buffer.writerIndex)
        return .needMoreData
    }
}

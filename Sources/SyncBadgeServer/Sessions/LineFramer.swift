#if canImport(Glibc)
import Glibc
#endif
import NIOCore

/// Splits input at LF (PROTOCOL.md, "Framing"): each line comes out as a slice of the input
/// without its LF. A peer holding more than `maxLineLength` bytes without an LF is `tooLong`
/// once, after the lines before it, and nothing after it is framed (the connection closes).
///
/// A plain struct the session calls on each read, not a `ByteToMessageDecoder` in the
/// pipeline: NIO's handler cost a pipeline hop, an `NIOAny` and a generic decode loop per line,
/// about a third of a pipelined `STATUS` (PERFORMANCE.md).
struct LineFramer {
    enum Frame {
        case line(ByteBuffer)
        case tooLong
    }

    static let maxLineLength = 65_536

    let maxLineLength: Int
    /// How far the unread bytes were searched for an LF already, so that a long line arriving
    /// in many reads is not searched from its start each time.
    private var searchedUpTo = 0
    private(set) var failed = false

    init(maxLineLength: Int = LineFramer.maxLineLength) {
        self.maxLineLength = maxLineLength
    }

    /// The next complete line of `buffer`, moving past it; nil when `buffer` holds no complete
    /// line yet (or the input already was too long).
    mutating func next(_ buffer: inout ByteBuffer) -> Frame? {
        if failed { return nil }
        let lf = buffer.withUnsafeReadableBytes { bytes -> Int? in
            guard searchedUpTo < bytes.count, let base = bytes.baseAddress,
                  let found = memchr(base + searchedUpTo, 0x0A, bytes.count - searchedUpTo) else { return nil }
            return UnsafeRawPointer(found) - base
        }
        guard let lf else {
            searchedUpTo = buffer.readableBytes
            let trailingCR = buffer.readableBytes > 0 && buffer.getInteger(at: buffer.writerIndex - 1, as: UInt8.self) == UInt8(ascii: "\r") ? 1 : 0
            return buffer.readableBytes - trailingCR > maxLineLength ? fail(&buffer) : nil
        }
        // A CR before the LF is not part of the line, so it does not count against the limit.
        let contentLength = lf > 0 && buffer.getInteger(at: buffer.readerIndex + lf - 1, as: UInt8.self) == UInt8(ascii: "\r") ? lf - 1 : lf
        if contentLength > maxLineLength { return fail(&buffer) }
        let line = buffer.readSlice(length: lf)!
        buffer.moveReaderIndex(forwardBy: 1)
        searchedUpTo = 0
        return .line(line)
    }

    private mutating func fail(_ buffer: inout ByteBuffer) -> Frame {
        failed = true
        buffer.moveReaderIndex(to: buffer.writerIndex)
        return .tooLong
    }
}

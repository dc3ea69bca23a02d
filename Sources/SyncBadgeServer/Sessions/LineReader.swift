import NIOCore

/// A connection's reads framed into lines, across reads (LineFramer does one read): a line
/// cut between reads is handed over once its LF comes, and nothing is framed after a line too
/// long or once the receiver takes no more.
struct LineReader {
    /// Bytes read and not framed yet: the start of a line whose LF has not come.
    private var inbound: ByteBuffer?
    private var framer = LineFramer()
    /// The receiver took no more lines, or one was too long: nothing more is framed.
    private(set) var stopped = false

    /// Hands each complete line of `read` to `line`, in order, until it returns false.
    mutating func read(_ read: ByteBuffer, line: (ByteBuffer) -> Bool, tooLong: () -> Void) {
        guard !stopped else { return }
        var read = read
        if var rest = inbound {
            inbound = nil
            // Only a partial line is left over: moved to the front so that the buffer does not
            // grow by a read's worth each time.
            rest.discardReadBytes()
            rest.writeBuffer(&read)
            read = rest
        }
        while !stopped, let frame = framer.next(&read) {
            switch frame {
            case .line(let l):
                if !line(l) { stopped = true }
            case .tooLong:
                stopped = true
                tooLong()
            }
        }
        if read.readableBytes > 0 && !stopped { inbound = read }
    }
}

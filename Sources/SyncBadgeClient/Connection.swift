#if canImport(Glibc)
import Glibc
#endif
import SyncBadgeProtocol

public enum ClientError: Error, CustomStringConvertible, Equatable {
    /// Nothing answers on the socket.
    case noDaemon(String)
    /// The daemon answered `ERR <code>`.
    case server(code: String, message: String?)
    /// The connection closed (with the daemon's `* BYE` reason, if it gave one).
    case closed(String?)
    case timeout
    case malformed(String)

    public var description: String {
        switch self {
        case .noDaemon(let path): "no daemon answers on \(path)"
        case .server(let code, let message): message.map { "\(code): \($0)" } ?? code
        case .closed(let reason): "the daemon closed the connection" + (reason.map { " (\($0))" } ?? "")
        case .timeout: "the daemon did not answer in time"
        case .malformed(let line): "malformed line from the daemon: \(line)"
        }
    }
}

/// A complete answer: its data lines and the final `OK`.
public struct Reply: Sendable {
    public var data: [WireMessage]
    public var ok: WireMessage
}

/// A blocking connection to `syncbadged`: small and quick to start, for the CLI, scripts and
/// tests. Pushes that arrive while waiting for an answer are kept for `nextPush`.
public final class Connection {
    public let socketPath: String
    public private(set) var epoch = ""
    public private(set) var capabilities: [String] = []
    let fd: Int32
    var buffer: [UInt8] = []
    var start = 0
    var nextTag = 1
    var pushes: [WireMessage] = []
    var pushHead = 0
    public private(set) var closedReason: String?

    /// Connects without saying `HELLO`.
    public init(socketPath: String) throws {
        self.socketPath = socketPath
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ClientError.noDaemon(socketPath) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(socketPath.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            close(fd)
            throw ClientError.noDaemon(socketPath)
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: bytes) }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard rc == 0 else {
            close(fd)
            throw ClientError.noDaemon(socketPath)
        }
        self.fd = fd
    }

    /// Connects and says `HELLO` with the given role; `rootPushes: false` asks for no `* ROOT`
    /// pushes (for a connection on which nothing reads pushes).
    public convenience init(socketPath: String, role: Role, name: String, rootPushes: Bool = true, timeout: Double? = nil) throws {
        try self.init(socketPath: socketPath)
        try hello(role: role, name: name, rootPushes: rootPushes, timeout: timeout)
    }

    /// Says `HELLO`, keeping the daemon's epoch and capabilities.
    @discardableResult
    public func hello(role: Role, name: String, rootPushes: Bool = true, timeout: Double? = nil) throws -> Reply {
        let reply = try request(.hello(role: role, name: name, rootPushes: rootPushes), timeout: timeout)
        let ok = Ok(reply.ok)
        epoch = ok?.epoch ?? ""
        capabilities = ok?.caps ?? []
        return reply
    }

    deinit { close(fd) }

    /// The socket, for a caller that waits on it with `poll` beside other descriptors. Lines
    /// already read into the buffer do not make it readable: drain `nextPush(timeout: 0)` first.
    public var descriptor: Int32 { fd }

    // MARK: Requests

    /// Sends a request without waiting; returns its tag.
    @discardableResult
    public func send(_ request: Request) throws -> String {
        let tag = String(nextTag)
        nextTag += 1
        try sendRaw(request.wireLine(tag: tag).terminated())
        return tag
    }

    /// Sends a verb spelled by hand, for tests that speak the wire as it is (an unknown verb,
    /// say); everything else sends a `Request`. Behind `@_spi(Wire)`, so that no client spells
    /// a verb by accident.
    @_spi(Wire) @discardableResult
    public func send(_ verb: String, _ fields: [RequestField] = []) throws -> String {
        let tag = String(nextTag)
        nextTag += 1
        var line = WireLine(tag)
        line.word(verb)
        for f in fields { line.append(f) }
        try sendRaw(line.terminated())
        return tag
    }

    public func sendRaw(_ bytes: [UInt8]) throws {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ClientError.closed(closedReason)
            }
            off += n
        }
    }

    /// Reads the answer to `tag`: data lines until the final line. `ERR` throws.
    public func reply(to tag: String, timeout: Double? = nil) throws -> Reply {
        var data: [WireMessage] = []
        while true {
            let m = try readMessage(timeout: timeout)
            if m.isPush {
                pushes.append(m)
                continue
            }
            guard m.head == tag else { throw ClientError.malformed("answer for tag \(m.head) while waiting for \(tag)") }
            switch m.messageKind {
            case .ok: return Reply(data: data, ok: m)
            case .err:
                let err = Err(m)
                throw ClientError.server(code: err?.code ?? "?", message: err?.messageText)
            default: data.append(m)
            }
        }
    }

    public func request(_ request: Request, timeout: Double? = nil) throws -> Reply {
        try reply(to: try send(request), timeout: timeout)
    }

    /// `send(_:_:)`'s hand-spelled verb, and its answer.
    @_spi(Wire)
    public func request(_ verb: String, _ fields: [RequestField] = [], timeout: Double? = nil) throws -> Reply {
        try reply(to: try send(verb, fields), timeout: timeout)
    }

    /// The next push, waiting at most `timeout` seconds (forever when nil); nil on timeout.
    public func nextPush(timeout: Double?, interruptible: Bool = false) throws -> WireMessage? {
        if pushHead < pushes.count {
            defer {
                pushHead += 1
                if pushHead == pushes.count {
                    pushes.removeAll()
                    pushHead = 0
                }
            }
            return pushes[pushHead]
        }
        while true {
            do {
                let m = try readMessage(timeout: timeout, interruptible: interruptible)
                if m.isPush { return m }
                throw ClientError.malformed("unexpected answer for tag \(m.head)")
            } catch ClientError.timeout {
                return nil
            }
        }
    }

    // MARK: Reading

    /// The next raw line without its LF.
    public func readLine(timeout: Double?, interruptible: Bool = false) throws -> [UInt8] {
        while true {
            if let lf = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[start..<lf])
                start = lf + 1
                if start > 65536 && start * 2 > buffer.count {
                    buffer.removeFirst(start)
                    start = 0
                }
                return line
            }
            if let timeout {
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ms = Int32(max(0, min(timeout * 1000, Double(Int32.max))))
                let rc = poll(&p, 1, ms)
                if rc == 0 { throw ClientError.timeout }
                if rc < 0 && errno != EINTR { throw ClientError.closed(closedReason) }
                // With `interruptible`, a signal (e.g. SIGWINCH) ends the wait early so the
                // caller can react; otherwise waiting goes on.
                if rc < 0 {
                    if interruptible { throw ClientError.timeout }
                    continue
                }
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { throw ClientError.closed(closedReason) }
            buffer.append(contentsOf: chunk[0..<n])
        }
    }

    func readMessage(timeout: Double?, interruptible: Bool = false) throws -> WireMessage {
        let line = try readLine(timeout: timeout, interruptible: interruptible)
        guard let m = WireMessage(line: line) else {
            throw ClientError.malformed(String(decoding: line, as: UTF8.self))
        }
        if m.isPush, let bye = Bye(m) { closedReason = bye.reason }
        return m
    }
}

extension Connection {
    /// Relays bytes both ways between two descriptors (e.g. stdin/stdout) and the daemon until
    /// either side closes: what `syncbadge bridge` does for shells that cannot open sockets.
    public func relay(input: Int32, output: Int32) {
        func writeAll(_ fd: Int32, _ bytes: ArraySlice<UInt8>) -> Bool {
            var off = bytes.startIndex
            while off < bytes.endIndex {
                let n = bytes[off...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return false }
                off += n
            }
            return true
        }
        // Bytes already read past the last line belong to the client too.
        if start < buffer.count {
            guard writeAll(output, buffer[start...]) else { return }
        }
        buffer.removeAll()
        start = 0
        var fds = [pollfd(fd: input, events: Int16(POLLIN), revents: 0), pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let rc = poll(&fds, 2, -1)
            if rc < 0 {
                if errno == EINTR { continue }
                return
            }
            if fds[0].revents != 0 {
                let n = chunk.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return }
                do { try sendRaw(Array(chunk[0..<n])) } catch { return }
            }
            if fds[1].revents != 0 {
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return }
                guard writeAll(output, chunk[0..<n]) else { return }
            }
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials

/// The socket's directory: created 0700, and refused when another user owns it or anyone else
/// may enter it (PROTOCOL.md, "Transport").
enum SocketDirectory {
    /// A path's directory as NSString's `deletingLastPathComponent` gives it ("" for a bare
    /// name, "/" for a name in the root), with no Foundation (docs/PACKAGING.md).
    static func parent(of path: String) -> String {
        var p = Substring(path)
        while p.count > 1 && p.hasSuffix("/") { p = p.dropLast() }
        guard let slash = p.lastIndex(of: "/") else { return "" }
        var dir = p[..<slash]
        while dir.hasSuffix("/") { dir = dir.dropLast() }
        return dir.isEmpty ? "/" : String(dir)
    }

    static func prepare(forSocket socketPath: String) throws {
        let dir = parent(of: socketPath)
        guard !dir.isEmpty else { throw DaemonError.socketDirectory("the socket path \(socketPath) has no directory") }
        var st = stat()
        if lstat(dir, &st) != 0 {
            guard errno == ENOENT else {
                throw DaemonError.socketDirectory("cannot inspect \(dir): \(String(cString: strerror(errno)))")
            }
            try FileManager.default.createDirectory(atPath: parent(of: dir), withIntermediateDirectories: true)
            guard mkdir(dir, 0o700) == 0 || errno == EEXIST else {
                throw DaemonError.socketDirectory("cannot create \(dir): \(String(cString: strerror(errno)))")
            }
            guard lstat(dir, &st) == 0 else {
                throw DaemonError.socketDirectory("cannot inspect \(dir): \(String(cString: strerror(errno)))")
            }
        }
        guard st.st_mode & S_IFMT == S_IFDIR else {
            throw DaemonError.socketDirectory("refusing \(dir): not a directory")
        }
        guard st.st_uid == getuid() else {
            throw DaemonError.socketDirectory("refusing \(dir): owned by uid \(st.st_uid), not by uid \(getuid())")
        }
        guard st.st_mode & 0o077 == 0 else {
            throw DaemonError.socketDirectory(
                "refusing \(dir): mode \(String(st.st_mode & 0o777, radix: 8)) lets other users in; run `chmod 700 \(dir)`")
        }
        if answers(socketPath) { throw DaemonError.alreadyRunning(socketPath) }
    }

    /// Takes `<socket>.lock` for the daemon's lifetime: of two daemons started at once (two
    /// clients spawning one), only one gets it; the other exits and its clients reach the first.
    /// Returns the descriptor, which must stay open.
    static func lock(forSocket socketPath: String) throws -> Int32 {
        let fd = open(socketPath + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw DaemonError.socketDirectory("cannot open \(socketPath).lock: \(String(cString: strerror(errno)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw DaemonError.alreadyRunning(socketPath)
        }
        return fd
    }

    /// Whether something accepts connections on the socket (a stale file does not).
    static func answers(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { return false }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return rc == 0
    }
}

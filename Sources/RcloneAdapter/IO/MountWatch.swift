#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Whether the mount point is an rclone mount, told at once when the mount table changes: the
/// kernel wakes a `poll` on /proc/self/mountinfo (POLLPRI) at each mount and unmount, so the
/// thread sleeps in the kernel otherwise.
public final class MountWatch: Sendable {
    let mountPoint: String
    let onChange: @Sendable (Bool) -> Void

    public init(mountPoint: String, onChange: @escaping @Sendable (Bool) -> Void) {
        self.mountPoint = mountPoint
        self.onChange = onChange
    }

    /// Whether `mountinfo` lists an rclone file system (`fuse.rclone`) at `mountPoint`.
    public static func isRcloneMount(_ mountinfo: String, at mountPoint: String) -> Bool {
        for line in mountinfo.split(separator: "\n") {
            // id parent major:minor root mount-point options... - fstype source superoptions
            let f = line.split(separator: " ", omittingEmptySubsequences: false)
            guard f.count > 5, let dash = f.firstIndex(of: "-"), dash + 1 < f.count else { continue }
            if unescape(f[4]) == mountPoint && f[dash + 1] == "fuse.rclone" { return true }
        }
        return false
    }

    /// mountinfo writes space, tab, newline and backslash as octal escapes.
    static func unescape(_ s: Substring) -> String {
        var out: [UInt8] = []
        let b = Array(s.utf8)
        var i = 0
        while i < b.count {
            if b[i] == UInt8(ascii: "\\"), i + 3 < b.count,
               let v = UInt8(String(decoding: b[(i + 1)...(i + 3)], as: UTF8.self), radix: 8) {
                out.append(v)
                i += 4
            } else {
                out.append(b[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func table() -> String { readAll("/proc/self/mountinfo") }

    /// A /proc file read to its end. Not `String(contentsOfFile:)`: Foundation trusts the size
    /// `stat` gives, 0 for /proc, and stops after one page, so a mount table longer than 4 KB
    /// (one container or a few snaps) lost the rclone mount near its end, and the adapter
    /// waited for a mount that was there.
    static func readAll(_ path: String) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(fd, &buf, buf.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            out.append(contentsOf: buf[0..<n])
        }
        return String(decoding: out, as: UTF8.self)
    }

    public var present: Bool { Self.isRcloneMount(Self.table(), at: mountPoint) }

    public func start() {
        let t = Thread { [self] in self.main() }
        t.start()
    }

    func main() {
        let fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        var last = present
        onChange(last)
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            // The table must be read to the end for the next change to wake the poll again.
            while read(fd, &buf, buf.count) > 0 {}
            var p = pollfd(fd: fd, events: Int16(POLLPRI), revents: 0)
            let rc = poll(&p, 1, -1)
            if rc < 0 && errno == EINTR { continue }
            _ = lseek(fd, 0, SEEK_SET)
            let now = present
            if now != last {
                last = now
                onChange(now)
            }
        }
    }
}

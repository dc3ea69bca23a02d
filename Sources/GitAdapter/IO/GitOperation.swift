#if canImport(Glibc)
import Glibc
#endif

/// A push, pull or fetch that SyncBadge started: its process and the descriptor of its stderr,
/// and what the daemon is shown of it.
final class GitOperation {
    let pid: pid_t
    let stderr: Int32
    var progress: OperationProgress

    init(kind: String, running: RunningGit, now: ContinuousClock.Instant) {
        pid = running.pid
        stderr = running.stderr
        progress = OperationProgress(kind: kind, now: now)
    }

    var kind: String { progress.kind }

    enum Output { case more, ended }

    /// The exit status, once reaped: its descriptor is closed then.
    private(set) var status: Int32?

    /// Reads what git wrote so far (the descriptor is non-blocking).
    func read() -> Output {
        // Reaped: its descriptor is closed, and its number may be another file's by now.
        guard status == nil else { return .ended }
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buf.withUnsafeMutableBytes { Glibc.read(stderr, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return .more }  // EAGAIN: more later
            if n == 0 { return .ended }
            progress.reader.feed(Array(buf[0..<n]))
        }
    }

    /// After `.ended`: its exit status, waited for.
    func reap() -> Int32 {
        if let status { return status }
        close(stderr)
        progress.reader.finish()
        let s = ProcessGitRunner.wait(pid)
        status = s
        return s
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// A push, pull or fetch that SyncBadge started: its `syncing` on the root, with git's progress.
final class GitOperation {
    let kind: String
    let pid: pid_t
    var stderr: Int32
    var reader = ProgressReader()
    /// Reply tokens of the actions waiting for its end, with their deadline for an interim answer.
    var replies: [(token: String, deadline: ContinuousClock.Instant)] = []
    /// What was last sent to the daemon, so that only changes go out.
    var shown: Verdict?
    var lastSent = ContinuousClock.now

    init(kind: String, running: RunningGit) {
        self.kind = kind
        pid = running.pid
        stderr = running.stderr
    }

    var verdict: Verdict {
        let what = "git \(kind)" + (reader.phase.map { ": \($0)" } ?? "")
        return Verdict(.syncing, what, progress: reader.percent ?? 0)
    }
}

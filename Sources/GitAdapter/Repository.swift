#if canImport(Glibc)
import Glibc
#endif

/// One working tree the adapter follows: where git keeps its state, what the daemon shows
/// (the model), what git said last, and what is left to do.
final class Repository {
    /// The working tree's top level, as git names it (symbolic links resolved): the root.
    let top: String
    let topBytes: [UInt8]
    let gitDir: String
    let commonDir: String
    var model = RepoModel()
    /// The last full pass's view: its unpushed paths serve the incremental passes.
    var view: GitView?
    /// Listed and reconciled since the last (re)connection.
    var built = false
    var needsFull = true
    /// When a full pass asked for by the watcher runs: a burst of git's writes settles first.
    var fullAt: ContinuousClock.Instant?
    /// Paths the daemon reported changed, with their generation (nil: to be asked).
    var dirty: [[UInt8]: UInt64?] = [:]
    /// `git status` failed: the repository cannot be read.
    var statusError: String?
    /// The last push, pull or fetch started here failed.
    var operationError: String?
    var operation: GitOperation?
    var claimed = false

    init(top: String, gitDir: String, commonDir: String) {
        self.top = top
        topBytes = Array(top.utf8)
        self.gitDir = gitDir
        self.commonDir = commonDir
    }

    var name: String { String(top.split(separator: "/").last ?? "/") }

    /// The path relative to the top level; "" for the top level; nil outside.
    func relative(_ path: [UInt8]) -> [UInt8]? {
        if path == topBytes { return [] }
        guard path.count > topBytes.count + 1, path[topBytes.count] == UInt8(ascii: "/"),
              path.starts(with: topBytes) else { return nil }
        return Array(path[(topBytes.count + 1)...])
    }

    func absolute(_ rel: [UInt8]) -> [UInt8] { rel.isEmpty ? topBytes : topBytes + [UInt8(ascii: "/")] + rel }

    /// The top level's own state: a running operation, git's error, or the branch's baseline.
    func rootVerdict(baseline: Verdict) -> Verdict {
        if let op = operation { return op.verdict }
        if let e = statusError { return Verdict(.error, e) }
        if let e = operationError { return Verdict(.error, e) }
        return baseline
    }
}

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

/// Where git keeps a working tree's state: `git rev-parse` in the directory.
struct Location: Equatable {
    var top: String
    var gitDir: String
    var commonDir: String

    static func find(_ dir: String, git: any GitRunner) -> Result<Location, GitFailure> {
        let out = git.run(["rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir", "--git-common-dir"], in: dir)
        guard out.ok else { return .failure(GitFailure(message: out.message)) }
        let lines = String(decoding: out.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
        guard lines.count == 3 else { return .failure(GitFailure(message: "\(dir) is not a git working tree")) }
        return .success(Location(top: lines[0], gitDir: lines[1], commonDir: lines[2]))
    }
}

struct GitFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

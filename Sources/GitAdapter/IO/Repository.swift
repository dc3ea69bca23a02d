/// One working tree the adapter follows: where git keeps its state, what the daemon shows
/// (the model), what git said last, and when its next pass runs.
final class Repository {
    /// The working tree's top level, as git names it (symbolic links resolved): the root.
    let top: String
    let topBytes: [UInt8]
    let gitDir: String
    let commonDir: String
    var model = RepoModel()
    var schedule = PassSchedule()
    /// The last full pass's view: its unpushed paths serve the incremental passes.
    var view: GitView?
    /// `git status` failed: the repository cannot be read.
    var statusError: String?
    /// The last push, pull or fetch started here failed.
    var operationError: String?
    var operation: GitOperation?

    init(_ location: Location) {
        top = location.top
        topBytes = Array(top.utf8)
        gitDir = location.gitDir
        commonDir = location.commonDir
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
        if let op = operation { return op.progress.verdict }
        if let e = statusError { return Verdict(.error, e) }
        if let e = operationError { return Verdict(.error, e) }
        return baseline
    }
}

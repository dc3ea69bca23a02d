import Logging
import SyncBadgeClient
import SyncBadgeCore

/// Menu actions turned into git: the quick ones (log, stage, unstage) run to their end and are
/// answered with what git said; a push, pull or fetch runs in the background, its progress on
/// the root's badge, and is answered at its end or after `OperationProgress.answerWithin`.
/// An error from the daemon's connection is the link's `lost`.
final class Operations {
    let git: any GitRunner
    let logger: Logger
    let link: DaemonLink
    let repos: RepositoryList
    let passes: PassRunner
    /// Pushes and pulls of trees no longer followed: left to finish, then reaped.
    private(set) var orphans: [GitOperation] = []

    init(git: any GitRunner, logger: Logger, link: DaemonLink, repos: RepositoryList, passes: PassRunner) {
        self.git = git
        self.logger = logger
        self.link = link
        self.repos = repos
        self.passes = passes
    }

    func call(_ a: ActionCall) {
        let action = GitAction(id: a.id)
        func answer(_ ans: ActionAnswer) {
            if !ans.failed { logger.debug("\(a.id): \(ans.message ?? "done")") } else { logger.notice("\(a.id) failed: \(ans.message ?? "")") }
            if let token = a.reply { link.answer(token, ans) }
        }
        if action == .fetchAll {
            for r in repos.sorted where r.operation == nil { start(r, "fetch", token: nil) }
            return answer(GitAction.fetchingAll(repos.byTop.count))
        }
        // A folder's background menu may name the folder as its target alone; paths of one
        // repository at a time, the first naming it.
        let paths = a.paths.isEmpty ? a.target.map { [$0] } ?? [] : a.paths
        guard let first = paths.first, let r = repos.containing(first) else {
            return answer(ActionAnswer("not in a followed working tree", failed: true))
        }
        let rels = paths.compactMap { r.relative($0) }.filter { !GitView.isGitDirectory($0) }
        switch action {
        case .log, .stage, .unstage:
            let hasHead = action != .unstage || git.run(["rev-parse", "--verify", "-q", "HEAD"], in: r.top).ok
            guard let (arguments, pathspec) = action.command(rels, hasHead: hasHead) else { return }
            answer(action.answer(git.run(arguments, paths: pathspec, in: r.top), count: rels.count))
        case .operation(let kind):
            if let op = r.operation { return answer(ActionAnswer("git \(op.kind) is still running in \(r.top)", failed: true)) }
            start(r, kind, token: a.reply)
            if r.operation == nil { answer(ActionAnswer(r.operationError ?? "git \(kind) did not start", failed: true)) }
        case .unknown(let id):
            answer(ActionAnswer("unknown action \(id)", failed: true))
        case .fetchAll:
            break
        }
    }

    func start(_ r: Repository, _ kind: String, token: String?) {
        let op: GitOperation
        do {
            op = GitOperation(kind: kind, running: try git.start([kind, "--progress"], in: r.top), now: .now)
        } catch {
            r.operationError = "\(error)"
            return
        }
        if let token, link.canAnswer { op.progress.waiting(token, now: .now) }
        r.operation = op
        logger.info("\(r.top): git \(kind) started")
        show(r, op, throttled: false)
    }

    /// The root's `syncing` with git's latest phase and percentage.
    func show(_ r: Repository, _ op: GitOperation, throttled: Bool) {
        guard let v = op.progress.toShow(now: .now, throttled: throttled), r.schedule.claimed, r.schedule.built,
              let s = link.connection else { return }
        op.progress.sent(v, now: .now)
        do {
            try passes.send(r, [RepoModel.PlannedSet(rel: [], verdict: v, gen: r.model[RepoModel.root].gen)], s)
        } catch {
            link.lost(error)
        }
    }

    /// What git wrote: shown, or its end.
    func output(_ r: Repository, _ op: GitOperation) -> GitOperation.Output {
        let out = op.read()
        if out == .more { show(r, op, throttled: true) }
        return out
    }

    /// Its end (after the watcher saw the refs it changed, so that their events do not clear
    /// what it left): the root's error or none, the answers owed, and a full pass at once.
    func finish(_ r: Repository, _ op: GitOperation, status: Int32) {
        r.operation = nil
        let error = op.progress.error(status: status)
        r.operationError = error
        logger.info("\(r.top): git \(op.kind) \(error.map { "failed: \($0)" } ?? "done")")
        r.schedule.fullNow(.now)
        for reply in op.progress.replies { link.answer(reply.token, op.progress.final(error: error)) }
    }

    /// Actions that waited long enough: told it runs.
    func answerLate() {
        for r in repos.sorted {
            guard let op = r.operation else { continue }
            for token in op.progress.due(now: .now) { link.answer(token, op.progress.interim) }
        }
    }

    var deadlines: [ContinuousClock.Instant] { repos.byTop.values.compactMap { $0.operation?.progress.nextDeadline } }

    /// An operation of a tree no longer listed, left to finish. One already reaped (it ended
    /// in the same wake-up as the list's change) is done: polled, its closed descriptor would
    /// wake the loop at once, for ever.
    func orphan(_ op: GitOperation) {
        if op.status == nil { orphans.append(op) }
    }

    func reapIfDone(_ op: GitOperation) {
        guard op.read() == .ended else { return }
        _ = op.reap()
        orphans.removeAll { $0 === op }
    }
}

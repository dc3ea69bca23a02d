import Logging
import SyncBadgeClient
import SyncBadgeCore

/// Carries out one repository's passes on the daemon's connection: listings, `git status`, and
/// the `SET`s the model plans. A `ClientError` thrown means the connection is gone.
struct PassRunner {
    let git: any GitRunner
    let logger: Logger

    static let statusArguments = ["status", "--porcelain=v2", "-z", "--branch", "--ignored=matching", "--untracked-files=all"]

    func run(_ pass: PassSchedule.Pass, _ r: Repository, _ s: ProviderConnection) throws {
        switch pass {
        case .rebuild: try rebuild(r, s)
        case .full: try fullPass(r, s)
        case .incremental: try incrementalPass(r, s)
        }
    }

    /// Everything the daemon holds for the tree (listings and pending paths), then a full pass.
    func rebuild(_ r: Repository, _ s: ProviderConnection) throws {
        let started = ContinuousClock.now
        r.model = RepoModel()
        // The top level's own state and generation: `LIST` gives those of its children only.
        if let top = try s.status([r.topBytes]).first, let top {
            r.model.upsert([], isDirectory: true, gen: top.gen ?? 0, shown: Self.shown(top))
        }
        try walk(r, from: RepoModel.root, s)
        for item in try s.changes(r.topBytes) {
            guard let rel = r.relative(item.path), !GitView.isGitDirectory(rel) else { continue }
            r.model.upsert(rel, isDirectory: item.kind == .dir, gone: item.kind == .gone, gen: item.gen ?? 0, shown: Self.shown(item))
        }
        r.schedule.rebuilt()
        logger.debug("\(r.top): \(r.model.count) entries listed in \(ContinuousClock.now - started)")
        try fullPass(r, s)
    }

    static func shown(_ item: Item) -> Verdict {
        // A path under no root is not listed, and shows nothing yet.
        Verdict(item.state ?? .unknown, item.message, progress: item.progress.map(Int.init))
    }

    /// Lists a directory and everything below it into the model, level by level, with the
    /// listings pipelined. Ignored directories (and `.git`) are not entered.
    func walk(_ r: Repository, from start: RepoModel.ID, _ s: ProviderConnection) throws {
        var level = [start]
        while !level.isEmpty {
            let listings = try s.list(level.map { r.absolute(r.model[$0].rel) })
            var next: [RepoModel.ID] = []
            for (dir, items) in zip(level, listings) {
                guard let items else { continue }
                let base = r.model[dir].rel
                let children = items.map { item -> (rel: [UInt8], isDirectory: Bool, gen: UInt64, shown: Verdict) in
                    let rel = base.isEmpty ? item.name : base + [UInt8(ascii: "/")] + item.name
                    return (rel, item.kind == .dir, item.gen ?? 0, Self.shown(item))
                }
                r.model.listed(dir, children: children)
                for c in children where c.isDirectory && c.shown != .ignored && !GitView.isGitDirectory(c.rel) {
                    if let id = r.model.find(c.rel) { next.append(id) }
                }
            }
            level = next
        }
    }

    /// `git status` of the whole tree, the commits not pushed, and the `SET`s that differ.
    func fullPass(_ r: Repository, _ s: ProviderConnection) throws {
        let started = ContinuousClock.now
        try resolveGenerations(r, r.schedule.take(full: true), s)
        let out = git.run(Self.statusArguments, in: r.top)
        guard out.ok, let status = try? GitStatus.parse(out.stdout) else {
            let error = out.ok ? "cannot read git status" : out.message
            r.statusError = error
            logger.warning("\(r.top): git status failed: \(error)")
            try send(r, [RepoModel.PlannedSet(rel: [], verdict: r.rootVerdict(baseline: .synced), gen: r.model[RepoModel.root].gen)], s)
            return
        }
        r.statusError = nil
        var unpushed: [[UInt8]: Int] = [:]
        if status.branch.hasUpstream, (status.branch.ahead ?? 0) > 0 {
            // `-c`: a merge counts for the paths its result changed from every parent (a
            // resolved conflict), not for those it brought from the upstream, which has them.
            let log = git.run(["log", "-c", "--format=%x01", "--name-only", "-z", "--no-renames", "@{upstream}..HEAD"], in: r.top)
            if log.ok { unpushed = UnpushedLog.parse(log.stdout) } else { logger.warning("\(r.top): git log failed: \(log.message)") }
        }
        let gitDone = ContinuousClock.now
        let view = GitView(status: status, unpushed: unpushed)
        r.view = view
        let judge = view.judge(root: r.rootVerdict(baseline: view.baseline))
        for d in r.model.unknownDirectories(judge: judge) { try walk(r, from: d, s) }
        let plan = r.model.plan(judge: judge)
        let planned = ContinuousClock.now
        try send(r, plan, s)
        logger.debug("\(r.top): full pass, \(status.entries.count) status records, \(plan.count) SETs: git \(gitDone - started), plan \(planned - gitDone), SETs \(ContinuousClock.now - planned)")
    }

    /// `git status -- <paths>` for the paths the daemon reported changed.
    func incrementalPass(_ r: Repository, _ s: ProviderConnection) throws {
        let dirty = r.schedule.take(full: false)
        try resolveGenerations(r, dirty, s)
        // A new directory's contents are learnt from the daemon first.
        for rel in dirty.keys {
            if let id = r.model.find(rel), r.model[id].isDirectory, !r.model[id].childrenKnown, !r.model[id].gone {
                try walk(r, from: id, s)
            }
        }
        let paths = dirty.keys.sorted { $0.lexicographicallyPrecedes($1) }
        let out = git.run(["--literal-pathspecs"] + Self.statusArguments, paths: paths, in: r.top)
        guard out.ok, let status = try? GitStatus.parse(out.stdout) else {
            r.schedule.requestFull(settle: false, now: .now)
            return
        }
        // The branch line of a partial status is as good as a full one's, but the unpushed
        // paths come from the last full pass: a new commit is a ref change, which makes one.
        let view = GitView(status: status, unpushed: r.view?.unpushed ?? [:])
        let judge = view.judge(root: r.rootVerdict(baseline: view.baseline))
        try send(r, r.model.plan(changed: paths, ignoredDirectories: view.ignoredDirectories, judge: judge), s)
    }

    /// Generations the daemon did not give with a change (the old path of a move): asked.
    func resolveGenerations(_ r: Repository, _ dirty: [[UInt8]: UInt64?], _ s: ProviderConnection) throws {
        let unknown = dirty.filter { $0.value == nil }.map(\.key)
        guard !unknown.isEmpty else { return }
        let items = try s.status(unknown.map { r.absolute($0) })
        for (rel, item) in zip(unknown, items) {
            guard let item else {
                if let id = r.model.find(rel) { r.model.remove(id) }
                continue
            }
            r.model.upsert(rel, isDirectory: item.kind == .dir, gone: item.kind == .gone, gen: item.gen ?? 0, shown: Self.shown(item))
        }
    }

    func send(_ r: Repository, _ plan: [RepoModel.PlannedSet], _ s: ProviderConnection) throws {
        guard !plan.isEmpty else { return }
        let outcomes = try s.set(plan.map { $0.verdict.set(r.absolute($0.rel), gen: $0.gen, recursive: $0.recursive) })
        let (stale, refused) = r.model.answered(plan, outcomes)
        for (rel, gen) in stale { r.schedule.changed(rel, gen: gen) }
        for (p, why) in refused { logger.warning("\(p): \(why)") }
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Logging
import SyncBadgeClient
import SyncBadgeCore

/// The adapter's loop, on one thread: the daemon's pushes, inotify on the git directories and
/// on the list of repositories, and the stderr of running pushes and pulls, all in one `poll`.
/// With nothing to do it sleeps in `poll` with no timeout (no timer while idle).
public final class GitProvider {
    public static let menus: [MenuDefinition] = [
        MenuDefinition(kind: "items", id: "git.log", title: "Show log"),
        MenuDefinition(kind: "items", id: "git.stage", title: "Stage", states: [.pending, .conflict]),
        MenuDefinition(kind: "items", id: "git.unstage", title: "Unstage", states: [.pending]),
        MenuDefinition(kind: "container", id: "git.pull", title: "Pull"),
        MenuDefinition(kind: "container", id: "git.push", title: "Push"),
        MenuDefinition(kind: "container", id: "git.fetch", title: "Fetch"),
        MenuDefinition(kind: "toolbar", id: "git.fetch-all", title: "Fetch every repository"),
    ]
    /// A watcher's wake-up waits this long for the rest of git's writes before the full pass.
    static let settle = Duration.milliseconds(30)
    /// A push or pull still running when this is over gets its answer at once ("running: the
    /// folder shows its progress"): the client waits for an answer 10 seconds at most, and the
    /// root's badge tells the rest.
    static let answerWithin = Duration.seconds(3)
    /// More changed paths than this make a full pass instead of `git status -- <paths>`.
    static let incrementalLimit = 256

    let socketPath: String
    let git: any GitRunner
    let logger: Logger
    let watcher: GitWatcher
    let reposFile: String
    let commandLine: [String]
    let home: String
    let name: String
    var repos: [String: Repository] = [:]
    /// Directories named (on the command line or in the file) that are not working trees, and
    /// why: said once each.
    var refused: [String: String] = [:]
    var daemon: ProviderConnection?
    var retryAt: ContinuousClock.Instant?
    var backoff = 0.05
    var saidLost = false
    var toolbar: ToolbarItem?
    /// Pushes and pulls of trees no longer followed: left to finish, then reaped.
    var orphans: [GitOperation] = []

    public init(socketPath: String, repositories: [String], reposFile: String, home: String, git: any GitRunner,
                name: String = "git", logger: Logger) throws {
        self.socketPath = socketPath
        self.git = git
        self.logger = logger
        self.reposFile = reposFile
        self.home = home
        self.name = name
        commandLine = repositories
        watcher = try GitWatcher()
    }

    // MARK: The loop

    public func run() -> Never {
        // Started from a program that blocks signals (a test runner, some supervisors), the
        // mask is inherited: SIGTERM and SIGINT must end the adapter as their default does.
        var none = sigset_t()
        sigemptyset(&none)
        sigprocmask(SIG_SETMASK, &none, nil)
        let dir = ReposFile.directory(of: reposFile)
        // The directory must exist to be watched: the file may appear later.
        try? ReposFile.makeDirectories(dir)
        watcher.watchDirectory(dir, key: "\u{0}config")
        reloadRepositories()
        while true {
            if daemon == nil, retryAt.map({ ContinuousClock.now >= $0 }) ?? true { connect() }
            drainPushes()
            work()
            drainPushes()
            waitForInput()
        }
    }

    func waitForInput() {
        var fds = [pollfd(fd: watcher.fd, events: Int16(POLLIN), revents: 0)]
        if let s = daemon { fds.append(pollfd(fd: s.connection.descriptor, events: Int16(POLLIN), revents: 0)) }
        let ops = repos.values.compactMap { r in r.operation.map { (r, $0) } }
        for (_, op) in ops { fds.append(pollfd(fd: op.stderr, events: Int16(POLLIN), revents: 0)) }
        let orphans = self.orphans
        for op in orphans { fds.append(pollfd(fd: op.stderr, events: Int16(POLLIN), revents: 0)) }
        var deadline: ContinuousClock.Instant?
        func earliest(_ t: ContinuousClock.Instant?) {
            guard let t else { return }
            deadline = deadline.map { min($0, t) } ?? t
        }
        if daemon == nil { earliest(retryAt) }
        for r in repos.values where r.claimed {
            if r.needsFull || !r.built { earliest(r.fullAt ?? .now) } else if !r.dirty.isEmpty { earliest(.now) }
        }
        for (_, op) in ops { for reply in op.replies { earliest(reply.deadline) } }
        var timeout: Int32 = -1
        if let deadline {
            let left = deadline - .now
            let ms = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000
            timeout = Int32(clamping: max(0, ms + 1))
        }
        let rc = poll(&fds, nfds_t(fds.count), timeout)
        if rc < 0 { return }
        // The watcher first: events of an operation's own writes come before its exit.
        if fds[0].revents != 0 { watcherEvents() }
        let first = fds.count - ops.count - orphans.count
        for (i, (repo, op)) in ops.enumerated() where fds[first + i].revents != 0 {
            operationOutput(repo, op)
        }
        for (i, op) in orphans.enumerated() where fds[first + ops.count + i].revents != 0 { reapIfDone(op) }
        answerLateOperations()
    }

    /// Every push the connection holds (read or buffered), then nothing more to read.
    func drainPushes() {
        guard let s = daemon else { return }
        do {
            while let m = try s.connection.nextPush(timeout: 0) { handle(m) }
        } catch {
            lost(error)
        }
    }

    func work() {
        guard daemon != nil else { return }
        for r in repos.values.sorted(by: { $0.top < $1.top }) {
            guard daemon != nil else { return }
            do {
                if !r.claimed { continue }
                if !r.built {
                    try rebuild(r)
                } else if r.needsFull, (r.fullAt ?? .now) <= .now {
                    try fullPass(r)
                } else if !r.dirty.isEmpty && !r.needsFull {
                    try incrementalPass(r)
                }
            } catch let e as ClientError {
                lost(e)
            } catch {
                logger.warning("\(r.top): \(error)")
            }
        }
        updateToolbar()
    }

    // MARK: The daemon

    func connect() {
        do {
            let s = try ProviderConnection(socketPath: socketPath, name: name)
            daemon = s
            for m in Self.menus { try s.define(m) }
            toolbar = nil
            if saidLost { logger.notice("syncbadged is back (epoch \(s.epoch)): claiming and rebuilding every root") }
            saidLost = false
            backoff = 0.05
            retryAt = nil
            for r in repos.values.sorted(by: { $0.top < $1.top }) { claim(r) }
            updateToolbar()
        } catch {
            lost(error)
        }
    }

    func claim(_ r: Repository) {
        guard let s = daemon else { return }
        r.built = false
        r.claimed = false
        do {
            try s.claim(r.topBytes)
            r.claimed = true
            logger.info("following \(r.top)")
        } catch let e as ClientError {
            if case .server(let code, let message) = e {
                // Another engine's root, or inside one (roots do not nest): said, and left alone.
                logger.warning("cannot claim \(r.top): \(code)\(message.map { " \($0)" } ?? "")")
            } else {
                lost(e)
            }
        } catch {
            logger.warning("cannot claim \(r.top): \(error)")
        }
    }

    func lost(_ error: any Error) {
        if !saidLost { logger.warning("syncbadged is not answering on \(socketPath): \(error); retrying") }
        saidLost = true
        daemon = nil
        for r in repos.values {
            r.built = false
            r.claimed = false
        }
        retryAt = .now + .milliseconds(Int(backoff * 1000))
        backoff = min(backoff * 2, 2)
    }

    func handle(_ m: WireMessage) {
        switch m.messageKind {
        case .changed:
            guard let c = Changed(m), let r = repository(containing: c.path), let rel = r.relative(c.path) else { return }
            if GitView.isGitDirectory(rel) { return }
            let gen = c.gen
            let what = c.what ?? .modify
            if let from = c.from, let fromRel = r.relative(from), !GitView.isGitDirectory(fromRel) {
                _ = r.model.changed(fromRel, gen: 0, isDirectory: false, gone: true)
                r.dirty[fromRel] = .some(nil)
            }
            if what == .delete {
                _ = r.model.changed(rel, gen: gen ?? 0, isDirectory: false, gone: true)
            } else {
                // A directory created or moved in brings contents to list; an attribute change does not.
                let isDir = Self.isDirectory(c.path)
                let known = isDir && what == .modify && r.model.find(rel).map { r.model[$0].isDirectory && r.model[$0].childrenKnown } == true
                _ = r.model.changed(rel, gen: gen ?? 0, isDirectory: isDir, gone: false)
                if known, let id = r.model.find(rel) { r.model.setChildrenKnown(id, true) }
            }
            r.dirty[rel] = .some(gen)
            if PathBytes.lastComponent(rel).elementsEqual(".gitignore".utf8) { requestFull(r, settle: false) }
        case .resetChanges:
            guard let reset = ResetChanges(m), let r = repository(containing: reset.path) else { return }
            r.built = false
        case .action:
            if let a = ActionCall(m) { action(a) }
        default:
            break
        }
    }

    static func isDirectory(_ path: [UInt8]) -> Bool {
        var st = stat()
        let rc = (path + [0]).withUnsafeBufferPointer { buf in
            buf.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buf.count) { lstat($0, &st) }
        }
        return rc == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    func repository(containing path: [UInt8]) -> Repository? {
        repos.values.first { $0.relative(path) != nil }
    }

    // MARK: Passes

    func requestFull(_ r: Repository, settle: Bool) {
        if !r.needsFull { r.fullAt = settle ? .now + Self.settle : .now }
        r.needsFull = true
    }

    /// Everything the daemon holds for the tree (listings and pending paths), then a full pass.
    func rebuild(_ r: Repository) throws {
        guard let s = daemon else { return }
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
        r.built = true
        r.dirty = [:]
        r.needsFull = true
        r.fullAt = nil
        logger.debug("\(r.top): \(r.model.count) entries listed in \(ContinuousClock.now - started)")
        try fullPass(r)
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
    func fullPass(_ r: Repository) throws {
        let started = ContinuousClock.now
        r.needsFull = false
        r.fullAt = nil
        let dirty = r.dirty
        r.dirty = [:]
        try resolveGenerations(r, dirty)
        let out = git.run(["status", "--porcelain=v2", "-z", "--branch", "--ignored=matching", "--untracked-files=all"], in: r.top)
        guard out.ok, let status = try? GitStatus.parse(out.stdout) else {
            r.statusError = out.ok ? "cannot read git status" : out.message
            logger.warning("\(r.top): git status failed: \(r.statusError!)")
            try send(r, [RepoModel.PlannedSet(rel: [], verdict: r.rootVerdict(baseline: .synced), gen: r.model[RepoModel.root].gen)])
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
        let judge = self.judge(r, view)
        let unknown = r.model.unknownDirectories(judge: judge)
        for d in unknown { try walk(r, from: d, daemon!) }
        let plan = r.model.plan(judge: judge)
        let planned = ContinuousClock.now
        try send(r, plan)
        logger.debug("\(r.top): full pass, \(status.entries.count) status records, \(plan.count) SETs: git \(gitDone - started), plan \(planned - gitDone), SETs \(ContinuousClock.now - planned)")
    }

    /// `git status -- <paths>` for the paths the daemon reported changed.
    func incrementalPass(_ r: Repository) throws {
        let dirty = r.dirty
        r.dirty = [:]
        // The top level itself changed (its attributes): a full pass, not a pathspec of "".
        if dirty.count > Self.incrementalLimit || dirty.keys.contains([]) {
            r.dirty = dirty
            return try fullPass(r)
        }
        try resolveGenerations(r, dirty)
        // A new directory's contents are learnt from the daemon first.
        for rel in dirty.keys {
            if let id = r.model.find(rel), r.model[id].isDirectory, !r.model[id].childrenKnown, !r.model[id].gone {
                try walk(r, from: id, daemon!)
            }
        }
        let paths = dirty.keys.sorted { $0.lexicographicallyPrecedes($1) }
        let out = git.run(["--literal-pathspecs", "status", "--porcelain=v2", "-z", "--branch", "--ignored=matching", "--untracked-files=all"],
                          paths: paths, in: r.top)
        guard out.ok, let status = try? GitStatus.parse(out.stdout) else {
            requestFull(r, settle: false)
            return
        }
        var view = GitView(status: status, unpushed: r.view?.unpushed ?? [:])
        // The branch line of a partial status is as good as a full one's, but the unpushed
        // paths come from the last full pass: a new commit is a ref change, which makes one.
        if r.view == nil { view.unpushed = [:] }
        let judge = self.judge(r, view)
        var plan: [RepoModel.PlannedSet] = []
        var covered = Set<[UInt8]>()
        for rel in paths {
            guard let id = r.model.find(rel) else { continue }
            // A path below another changed directory is planned with it.
            if Self.ancestors(of: rel).contains(where: { covered.contains($0) }) { continue }
            covered.insert(rel)
            let above = Self.ancestors(of: rel).contains { view.ignoredDirectories.contains($0) || GitView.isGitDirectory($0) }
            plan += r.model.plan(from: id, ancestorIgnored: above, judge: judge)
        }
        try send(r, plan)
    }

    static func ancestors(of rel: [UInt8]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var p = rel
        while !p.isEmpty {
            p = RepoModel.parent(of: p)
            if !p.isEmpty { out.append(p) }
        }
        return out
    }

    func judge(_ r: Repository, _ view: GitView) -> RepoModel.Judge {
        let root = r.rootVerdict(baseline: view.baseline)
        return { node, above in
            node.rel.isEmpty ? root : view.verdict(node.rel, isDirectory: node.isDirectory, gone: node.gone, ancestorIgnored: above)
        }
    }

    /// Generations the daemon did not give with a change (the old path of a move): asked.
    func resolveGenerations(_ r: Repository, _ dirty: [[UInt8]: UInt64?]) throws {
        let unknown = dirty.filter { $0.value == nil }.map(\.key)
        guard !unknown.isEmpty, let s = daemon else { return }
        let items = try s.status(unknown.map { r.absolute($0) })
        for (rel, item) in zip(unknown, items) {
            guard let item else {
                if let id = r.model.find(rel) { r.model.remove(id) }
                continue
            }
            r.model.upsert(rel, isDirectory: item.kind == .dir, gone: item.kind == .gone, gen: item.gen ?? 0, shown: Self.shown(item))
        }
    }

    func send(_ r: Repository, _ plan: [RepoModel.PlannedSet]) throws {
        guard !plan.isEmpty, let s = daemon else { return }
        let outcomes = try s.set(plan.map { $0.verdict.set(r.absolute($0.rel), gen: $0.gen, recursive: $0.recursive) })
        for (p, o) in zip(plan, outcomes) {
            switch o {
            case .success(.applied):
                r.model.applied(p)
            case .success(.stale(let gen)):
                // Changed since: its `* CHANGED` brings it back.
                r.model.stale(p.rel, gen: gen)
                r.dirty[p.rel] = gen
            case .success(.notFound):
                if let id = r.model.find(p.rel) { r.model.remove(id) }
            case .failure(let why):
                logger.warning("\(p): \(why)")
            }
        }
    }

    // MARK: The list of repositories

    func watcherEvents() {
        for (key, names) in watcher.drain() {
            if key == "\u{0}config" {
                if names.contains(String(reposFile.split(separator: "/").last ?? "")) { reloadRepositories() }
                continue
            }
            guard let r = repos[key] else { continue }
            logger.trace("\(r.top): git changed \(names.sorted())")
            // A push or fetch that worked, from anywhere, ends the error a failed one left.
            if r.operationError != nil, names.contains(where: { $0.contains("/refs/remotes/") }) { r.operationError = nil }
            requestFull(r, settle: true)
        }
    }

    func reloadRepositories() {
        let listed = ReposFile.read(reposFile).map { ReposFile.parse($0, home: home) } ?? []
        var wanted: [String: Location] = [:]
        var stillRefused: [String: String] = [:]
        for dir in commandLine + listed {
            switch Location.find(dir, git: git) {
            case .success(let loc): wanted[loc.top] = loc
            case .failure(let f):
                if refused[dir] != f.message { logger.warning("not following \(dir): \(f.message)") }
                stillRefused[dir] = f.message
            }
        }
        refused = stillRefused
        var dropped = false
        for (top, r) in repos where wanted[top] == nil {
            logger.info("no longer following \(top)")
            watcher.unwatch(key: top)
            repos[top] = nil
            if let op = r.operation { orphans.append(op) }
            guard let s = daemon, r.claimed else { continue }
            if s.capabilities.contains("unclaim") {
                do { try s.unclaim(r.topBytes) } catch { dropped = true }
            } else {
                // Claims have no undo before 1.2: a new connection claims the rest.
                dropped = true
            }
        }
        for (top, loc) in wanted.sorted(by: { $0.key < $1.key }) where repos[top] == nil {
            let r = Repository(top: loc.top, gitDir: loc.gitDir, commonDir: loc.commonDir)
            repos[top] = r
            watcher.watchRepository(key: top, gitDir: loc.gitDir, commonDir: loc.commonDir)
            if daemon != nil && !dropped { claim(r) }
        }
        if dropped, daemon != nil {
            daemon = nil
            retryAt = nil
        }
        updateToolbar()
    }

    func updateToolbar() {
        guard let s = daemon else { return }
        let sorted = repos.values.sorted { $0.top < $1.top }
        let name = ToolbarText.name(sorted.map { ($0.name, $0.view?.branch) })
        let tooltip = sorted.isEmpty ? "git: no working tree followed"
            : "git: " + sorted.map { "\($0.top) (\($0.view.map { ToolbarText.branch($0.branch) } ?? "?")\($0.view?.branch.upstream.map { ", upstream \($0)" } ?? ""))" }
                .joined(separator: "; ")
        let item = ToolbarItem(name: name, tooltip: tooltip)
        guard toolbar != item else { return }
        do {
            try s.define(item)
            toolbar = item
        } catch {
            lost(error)
        }
    }

    // MARK: Actions

    func action(_ a: ActionCall) {
        let id = a.id
        var paths = a.paths
        // A folder's background menu may name the folder as its target alone.
        if paths.isEmpty, let target = a.target { paths = [target] }
        let token = a.reply
        func answer(_ message: String?, failed: Bool = false) {
            if !failed { logger.debug("\(id): \(message ?? "done")") } else { logger.notice("\(id) failed: \(message ?? "")") }
            guard let token, let s = daemon, s.canAnswer else { return }
            do { try s.answer(token, message: message, failed: failed) } catch { lost(error) }
        }
        if id == "git.fetch-all" {
            for r in repos.values.sorted(by: { $0.top < $1.top }) where r.operation == nil { startOperation(r, "fetch", token: nil) }
            return answer("fetching \(repos.count) repositor\(repos.count == 1 ? "y" : "ies")")
        }
        // Paths of one repository at a time; the first names it.
        guard let first = paths.first, let r = repository(containing: first) else { return answer("not in a followed working tree", failed: true) }
        let rels = paths.compactMap { r.relative($0) }.filter { !GitView.isGitDirectory($0) }
        switch id {
        case "git.log":
            let out = git.run(["--literal-pathspecs", "log", "-n", "10", "--date=short", "--format=%h %ad %an: %s"],
                              paths: rels.contains([]) ? [] : rels, in: r.top)
            guard out.ok else { return answer(out.message, failed: true) }
            let text = String(decoding: out.stdout, as: UTF8.self).trimmingSpaces
            answer(text.isEmpty ? "no commit changed \(rels.count == 1 ? "it" : "them")" : text)
        case "git.stage":
            let out = git.run(["--literal-pathspecs", "add", "-A"], paths: rels.map { $0.isEmpty ? Array(".".utf8) : $0 }, in: r.top)
            out.ok ? answer("staged \(rels.count) path\(rels.count == 1 ? "" : "s")") : answer(out.message, failed: true)
        case "git.unstage":
            let hasHead = git.run(["rev-parse", "--verify", "-q", "HEAD"], in: r.top).ok
            let args = hasHead ? ["--literal-pathspecs", "restore", "--staged"] : ["--literal-pathspecs", "rm", "--cached", "-r", "-q"]
            let out = git.run(args, paths: rels.map { $0.isEmpty ? Array(".".utf8) : $0 }, in: r.top)
            out.ok ? answer("unstaged \(rels.count) path\(rels.count == 1 ? "" : "s")") : answer(out.message, failed: true)
        case "git.pull", "git.push", "git.fetch":
            let kind = String(id.dropFirst(4))
            if let op = r.operation { return answer("git \(op.kind) is still running in \(r.top)", failed: true) }
            startOperation(r, kind, token: token)
            if r.operation == nil { answer(r.operationError ?? "git \(kind) did not start", failed: true) }
        default:
            answer("unknown action \(id)", failed: true)
        }
    }

    func startOperation(_ r: Repository, _ kind: String, token: String?) {
        do {
            let running = try git.start([kind, "--progress"], in: r.top)
            let op = GitOperation(kind: kind, running: running)
            if let token, daemon?.canAnswer == true { op.replies.append((token, .now + Self.answerWithin)) }
            r.operation = op
            logger.info("\(r.top): git \(kind) started")
            showOperation(r, op)
        } catch {
            r.operationError = "\(error)"
        }
    }

    /// The root's `syncing` with git's latest phase and percentage.
    func showOperation(_ r: Repository, _ op: GitOperation) {
        let v = op.verdict
        guard v != op.shown, r.claimed, r.built else { return }
        op.shown = v
        op.lastSent = .now
        do {
            try send(r, [RepoModel.PlannedSet(rel: [], verdict: v, gen: r.model[RepoModel.root].gen)])
        } catch {
            lost(error)
        }
    }

    func operationOutput(_ r: Repository, _ op: GitOperation) {
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buf.withUnsafeMutableBytes { read(op.stderr, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { break }  // EAGAIN: more later
            if n == 0 { return finishOperation(r, op) }
            op.reader.feed(Array(buf[0..<n]))
        }
        // A percentage a few times a second at most: each `SET` is a durable write.
        if op.verdict.message != op.shown?.message || ContinuousClock.now - op.lastSent >= .milliseconds(200) {
            showOperation(r, op)
        }
    }

    func finishOperation(_ r: Repository, _ op: GitOperation) {
        close(op.stderr)
        op.reader.finish()
        let status = ProcessGitRunner.wait(op.pid)
        // The refs it changed come before its end: their events must not clear what it left.
        watcherEvents()
        r.operation = nil
        let ok = status == 0
        if ok {
            r.operationError = nil
        } else {
            let said = op.reader.failureMessage
            r.operationError = said.isEmpty ? "git \(op.kind) failed (exit status \(status))" : said
        }
        logger.info("\(r.top): git \(op.kind) \(ok ? "done" : "failed: \(r.operationError!)")")
        for reply in op.replies {
            guard let s = daemon, s.canAnswer else { break }
            do {
                try s.answer(reply.token, message: ok ? "git \(op.kind): done" : r.operationError, failed: !ok)
            } catch {
                lost(error)
            }
        }
        // The root's own state at once; the rest with the full pass the refs ask for.
        requestFull(r, settle: false)
        r.fullAt = .now
    }

    func reapIfDone(_ op: GitOperation) {
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buf.withUnsafeMutableBytes { read(op.stderr, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return }
            if n == 0 { break }
        }
        close(op.stderr)
        _ = ProcessGitRunner.wait(op.pid)
        orphans.removeAll { $0 === op }
    }

    func answerLateOperations() {
        for r in repos.values {
            guard let op = r.operation else { continue }
            let due = op.replies.filter { $0.deadline <= .now }
            guard !due.isEmpty else { continue }
            op.replies.removeAll { $0.deadline <= .now }
            for reply in due {
                guard let s = daemon else { break }
                do {
                    try s.answer(reply.token, message: "git \(op.kind) is running: the folder shows its progress", failed: false)
                } catch {
                    lost(error)
                }
            }
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Logging
import SyncBadgeClient
import SyncBadgeCore

/// The adapter's loop, on one thread: the daemon's pushes, inotify on the git directories and
/// on the list of repositories, and the stderr of running pushes and pulls, all in one `poll`.
/// With nothing to do it sleeps in `poll` with no timeout (no timer while idle). It routes
/// each to its owner: the daemon's connection (`DaemonLink`), the working trees
/// (`RepositoryList`), their passes (`PassRunner`) and the menu actions (`Operations`).
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

    let logger: Logger
    let link: DaemonLink
    let repos: RepositoryList
    let passes: PassRunner
    let operations: Operations

    public init(socketPath: String, repositories: [String], reposFile: String, home: String, git: any GitRunner,
                name: String = "git", logger: Logger) throws {
        self.logger = logger
        link = DaemonLink(socketPath: socketPath, name: name, menus: Self.menus, logger: logger)
        repos = try RepositoryList(reposFile: reposFile, commandLine: repositories, home: home, git: git, logger: logger)
        passes = PassRunner(git: git, logger: logger)
        operations = Operations(git: git, logger: logger, link: link, repos: repos, passes: passes)
        link.onLost = { [repos] in
            for r in repos.byTop.values { r.schedule.unclaimed() }
        }
    }

    public func run() -> Never {
        // Started from a program that blocks signals (a test runner, some supervisors), the
        // mask is inherited: SIGTERM and SIGINT must end the adapter as their default does.
        var none = sigset_t()
        sigemptyset(&none)
        sigprocmask(SIG_SETMASK, &none, nil)
        repos.watchFile()
        reload()
        while true {
            connect()
            drainPushes()
            work()
            drainPushes()
            waitForInput()
        }
    }

    func waitForInput() {
        var set = PollSet()
        let watcher = set.add(repos.watcher.fd)
        // The daemon's pushes are read at the top of the loop.
        if let s = link.connection { set.add(s.connection.descriptor) }
        let running = repos.sorted.compactMap { r in r.operation.map { (r, $0, set.add($0.stderr)) } }
        let orphans = operations.orphans.map { ($0, set.add($0.stderr)) }
        set.wake(at: link.wake)
        for r in repos.byTop.values { set.wake(at: r.schedule.wake(now: .now)) }
        for d in operations.deadlines { set.wake(at: d) }
        guard set.wait() else { return }
        // The watcher first: events of an operation's own writes come before its exit.
        if set.ready(watcher) { watcherEvents() }
        for (r, op, i) in running where set.ready(i) {
            guard operations.output(r, op) == .ended else { continue }
            let status = op.reap()
            // The refs it changed come before its end: their events must not clear what it left.
            watcherEvents()
            operations.finish(r, op, status: status)
        }
        for (op, i) in orphans where set.ready(i) { operations.reapIfDone(op) }
        operations.answerLate()
    }

    /// Every push the connection holds (read or buffered), then nothing more to read.
    func drainPushes() {
        guard let s = link.connection else { return }
        do {
            while let m = try s.connection.nextPush(timeout: 0) { handle(m) }
        } catch {
            link.lost(error)
        }
    }

    /// The passes that are due, one repository after another.
    func work() {
        for r in repos.sorted {
            guard let s = link.connection else { return }
            guard let pass = r.schedule.next(now: .now) else { continue }
            do {
                try passes.run(pass, r, s)
            } catch let e as ClientError {
                link.lost(e)
            } catch {
                logger.warning("\(r.top): \(error)")
            }
        }
        updateToolbar()
    }

    func connect() {
        do {
            guard try link.connectIfDue() else { return }
            for r in repos.sorted { claim(r) }
            updateToolbar()
        } catch {
            link.lost(error)
        }
    }

    func claim(_ r: Repository) {
        guard let s = link.connection else { return }
        r.schedule.unclaimed()
        do {
            try s.claim(r.topBytes)
            r.schedule.claimAccepted()
            logger.info("following \(r.top)")
        } catch ClientError.server(let code, let message) {
            // Another engine's root, or inside one (roots do not nest): said, and left alone.
            logger.warning("cannot claim \(r.top): \(code)\(message.map { " \($0)" } ?? "")")
        } catch {
            link.lost(error)
        }
    }

    func handle(_ m: WireMessage) {
        switch m.messageKind {
        case .changed:
            guard let c = Changed(m), let r = repos.containing(c.path), let rel = r.relative(c.path), !GitView.isGitDirectory(rel) else { return }
            let what = c.what ?? .modify
            let from = c.from.flatMap { r.relative($0) }.flatMap { GitView.isGitDirectory($0) ? nil : $0 }
            r.model.reported(rel, gen: c.gen ?? 0, what: what, isDirectory: what != .delete && Self.isDirectory(c.path), from: from)
            if let from { r.schedule.changed(from, gen: nil) }
            r.schedule.changed(rel, gen: c.gen)
            if PathBytes.lastComponent(rel).elementsEqual(".gitignore".utf8) { r.schedule.requestFull(settle: false, now: .now) }
        case .resetChanges:
            guard let reset = ResetChanges(m), let r = repos.containing(reset.path) else { return }
            r.schedule.changesLost()
        case .action:
            if let a = ActionCall(m) { operations.call(a) }
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

    func watcherEvents() {
        if repos.watcherEvents() { reload() }
    }

    /// The list of working trees read again: those dropped are unclaimed (their running
    /// operations left to finish), the new ones claimed.
    func reload() {
        let (added, dropped) = repos.reload()
        var reconnect = false
        for r in dropped {
            if let op = r.operation { operations.orphan(op) }
            guard let s = link.connection, r.schedule.claimed else { continue }
            if s.capabilities.contains("unclaim") {
                do { try s.unclaim(r.topBytes) } catch { reconnect = true }
            } else {
                // Claims have no undo before 1.2: a new connection claims the rest.
                reconnect = true
            }
        }
        if reconnect, link.connection != nil {
            link.drop()
        } else {
            for r in added { claim(r) }
        }
        updateToolbar()
    }

    func updateToolbar() {
        guard link.connection != nil else { return }
        link.define(ToolbarText.item(repos.sorted.map { ($0.top, $0.view?.branch) }))
    }
}

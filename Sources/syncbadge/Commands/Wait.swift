#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FoundationEssentials
import SyncBadgeClient
import SyncBadgeProtocol

/// `syncbadge wait`: returns once paths are synced, reading pushes.
struct Wait: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait",
        abstract: "Wait until paths are synced (a directory: everything below it).",
        discussion: """
            Follows the daemon's pushes (no polling) until every path is synced; an ignored path \
            counts as done. On a terminal it shows what is left and what is syncing; otherwise it \
            prints nothing. For scripts: `cp report.odt ~/Sync/ && syncbadge wait ~/Sync/report.odt \
            && poweroff`. If the daemon restarts meanwhile, it waits for it and goes on.

            Exit codes: 0 synced; 1 a path is in error or conflict (each one below a directory is \
            printed with its message), or the daemon refused (a path outside every root, say); \
            124 the --timeout passed first, as timeout(1) exits.
            """)

    /// timeout(1)'s exit status.
    static let timeoutExit: Int32 = 124

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The paths to wait for (default: the current directory).") var paths: [String] = []
    @Option(help: "Give up after this many seconds (exit 124).") var timeout: Double?
    @Flag(help: "JSON Lines: each path's final item (and each entry in error or conflict).") var json = false

    func validate() throws {
        if let timeout, !(timeout > 0) { throw ValidationError("--timeout must be a positive number of seconds") }
    }

    func run() throws {
        CLI.unblockSignals()
        let targets = (paths.isEmpty ? ["."] : paths).map(CLI.absolute)
        let deadline = timeout.map { monotonicNow() + $0 }
        let showProgress = isatty(STDERR_FILENO) == 1 && !json
        var c = try connection.connect(name: "syncbadge-wait")
        while true {
            switch follow(c, targets, deadline: deadline, showProgress: showProgress) {
            case .finished(let progress):
                if showProgress { Output.write("\r\u{1B}[K", to: STDERR_FILENO) }
                report(c, progress)
                if case .failed = progress.verdict { throw ExitCode(1) }
                return
            case .timedOut(let progress):
                if showProgress { Output.write("\r\u{1B}[K", to: STDERR_FILENO) }
                if json {
                    for p in targets { if let i = progress.items[p] { printLine(JSON.item(i)) } }
                } else {
                    Output.write("syncbadge: timed out: \(progress.progressLine)\n", to: STDERR_FILENO)
                }
                throw ExitCode(Self.timeoutExit)
            case .daemonGone:
                if showProgress { Output.write("\r\u{1B}[Kthe daemon went away; waiting for it to come back", to: STDERR_FILENO) }
                // The timeout holds while the daemon is away too.
                guard let again = connection.reconnect(name: "syncbadge-wait", until: deadline) else {
                    if showProgress { Output.write("\r\u{1B}[K", to: STDERR_FILENO) }
                    Output.write("syncbadge: timed out while the daemon was away\n", to: STDERR_FILENO)
                    throw ExitCode(Self.timeoutExit)
                }
                c = again
            }
        }
    }

    enum Outcome {
        case finished(WaitProgress)
        case timedOut(WaitProgress)
        case daemonGone
    }

    /// Observes each path (a directory itself, a file through its parent) before it reads the
    /// path's state, so that no change falls between the two; then every push that concerns a
    /// path updates it, until the verdict is in, the deadline passes or the daemon goes.
    func follow(_ c: Connection, _ targets: [[UInt8]], deadline: Double?, showProgress: Bool) -> Outcome {
        var progress = WaitProgress(paths: targets)
        let nolist = c.capabilities.contains("observe-nolist")
        do {
            let first = try c.request(Request(.status, targets.map { .path($0) }))
            var observed: Set<[UInt8]> = []
            for item in first.data.compactMap(Item.init) {
                if item.isOutside {
                    CLI.fail("\(PathBytes.display(item.path)): not inside any registered root (add one with `syncbadge add DIR`)")
                }
                let dir = item.kind == .dir ? item.path : PathBytes.parent(item.path)
                guard observed.insert(dir).inserted else { continue }
                let reply = try c.request(.observe(dir, list: !nolist))
                for i in reply.data.compactMap(Item.init) { progress.heard(i) }
            }
        } catch ClientError.server(let code, let message) {
            CLI.fail(ClientError.server(code: code, message: message), about: nil)
        } catch {
            return .daemonGone
        }
        // Read again now that every change is pushed: what changed before the OBSERVE.
        if !reread(c, targets, into: &progress) { return .daemonGone }
        while true {
            if showProgress { Output.write("\r\u{1B}[K" + progress.progressLine, to: STDERR_FILENO) }
            if progress.verdict != .waiting { return .finished(progress) }
            let remaining = deadline.map { $0 - monotonicNow() }
            if let remaining, remaining <= 0 { return .timedOut(progress) }
            let push: WireMessage?
            do {
                push = try c.nextPush(timeout: remaining)
            } catch {
                return .daemonGone
            }
            guard let m = push else { continue }
            switch m.messageKind {
            case .item:
                if let i = Item(m) { progress.heard(i) }
                if !progress.deletions.isEmpty, !reread(c, progress.deletions, into: &progress) { return .daemonGone }
            case .reset, .gone:
                // Pushes were dropped, or a path went: read every path again.
                if !reread(c, targets, into: &progress) { return .daemonGone }
            case .bye:
                return .daemonGone
            default:
                continue
            }
        }
    }

    /// Reads these paths' states again, one by one: a tombstone that went is a synced deletion.
    /// False when the daemon went away.
    func reread(_ c: Connection, _ paths: [[UInt8]], into progress: inout WaitProgress) -> Bool {
        for p in paths {
            do {
                for i in try c.request(Request(.status, [.path(p)])).data.compactMap(Item.init) { progress.heard(i) }
            } catch ClientError.server(let code, _) where code == "not-found" && progress.items[p]?.kind == .gone {
                progress.deletionSynced(p)
            } catch ClientError.server(let code, let message) {
                CLI.fail(ClientError.server(code: code, message: message), about: p)
            } catch {
                return false
            }
        }
        return true
    }

    /// The outcome: nothing when synced (but --json's items); each entry in error or conflict
    /// with its message, found below a failed directory by its counts.
    func report(_ c: Connection, _ progress: WaitProgress) {
        guard case .failed(let failed) = progress.verdict else {
            if json { for p in progress.paths { if let i = progress.items[p] { printLine(JSON.item(i)) } } }
            return
        }
        for p in failed {
            guard let item = progress.items[p] else { continue }
            for bad in item.kind == .dir ? failures(c, below: item) : [item] {
                if json {
                    printLine(JSON.item(bad))
                } else {
                    Output.write("syncbadge: \(PathBytes.display(bad.path)): \(bad.stateName)\(bad.message.map { " (\($0))" } ?? "")\n", to: STDERR_FILENO)
                }
            }
        }
    }

    /// The entries in error or conflict below a directory (itself included), following only
    /// the subdirectories whose counts hold one.
    func failures(_ c: Connection, below dir: Item) -> [Item] {
        func failed(_ i: Item) -> Bool { i.state == .error || i.state == .conflict }
        var out: [Item] = []
        var stack = [dir]
        while let d = stack.popLast() {
            let below = d.counts.map { $0[.error] + $0[.conflict] } ?? 0
            guard below > 0 else {
                // Its own state, then.
                if failed(d) { out.append(d) }
                continue
            }
            guard let children = try? c.request(Request(.list, [.path(d.path)])).data.compactMap(Item.init) else { continue }
            for child in children.reversed() where failed(child) {
                if child.kind == .dir { stack.append(child) } else { out.append(child) }
            }
        }
        return out
    }
}

#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FoundationEssentials
import SyncBadgeClient
import SyncBadgeProtocol

/// `syncbadge set`: a provider's report, for shell-script sync engines.
struct SetState: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Report the sync state of paths (as a sync engine).",
        discussion: """
            STATE is one of unknown, pending, syncing, synced, error, conflict, ignored. With --gen, \
            a path whose generation is newer (it changed since the engine looked) is left alone \
            and reported as stale. `synced` records each file's identity: later events that leave \
            it unchanged do not make it pending again. The answer comes once the state is durable. \
            Exits 2 when a report was stale.

            A `syncing` set by a sync engine's connection ends when that connection closes, and \
            this command's connection closes when it returns. So `set syncing` holds a lease: the \
            path stays syncing for --lease seconds (default 900, 15 minutes) unless a later `set` \
            reports it, then returns to pending. Give the transfer's expected length, with room \
            to spare.
            """)

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "unknown, pending, syncing, synced, error, conflict or ignored.") var state: String
    @Argument(help: "The paths to report.") var paths: [String]
    @Option(help: "Progress, 0-100.") var progress: Int?
    @Option(help: "A message to show with the state.") var message: String?
    @Option(help: "The generation the engine saw (from `changes` or `status --json`).") var gen: UInt64?
    @Option(help: "A badge id to show instead of the state's own.") var badge: String?
    @Flag(help: "Apply to everything below each path too.") var recursive = false
    @Option(help: "With syncing: seconds it stays syncing unless reported again (1-86400; default 900).") var lease: Int?
    @Flag(help: "JSON Lines output: each path's generation, and whether the report was stale.") var json = false

    /// The lease of a `set syncing` without --lease: a one-shot command's connection ends at once.
    static let defaultLease = 900

    func validate() throws {
        guard SyncState(name: state) != nil else {
            throw ValidationError("'\(state)' is not a state: use unknown, pending, syncing, synced, error, conflict or ignored")
        }
        guard !paths.isEmpty else { throw ValidationError("give at least one path") }
        if let progress, !(0...100).contains(progress) { throw ValidationError("--progress must be 0-100") }
        if let lease {
            guard (1...86_400).contains(lease) else { throw ValidationError("--lease must be 1-86400 seconds") }
            guard SyncState(name: state) == .syncing else { throw ValidationError("--lease applies to syncing only") }
        }
    }

    func run() throws {
        let c = try connection.connect(role: .provider)
        // `validate` accepted the name.
        let state = SyncState(name: state) ?? .unknown
        let lease = state == .syncing && c.capabilities.contains("lease") ? lease ?? Self.defaultLease : nil
        // Pipelined: every SET goes out at once and shares one commit.
        let targets = paths.map(CLI.absolute)
        var tags: [String] = []
        for p in targets {
            let set = SetRequest(state, p, gen: gen, progress: progress.map { UInt8($0) }, message: message, badge: badge,
                                 recursive: recursive, lease: lease)
            tags.append(try c.send(set.request))
        }
        var stale = false
        for (p, tag) in zip(targets, tags) {
            let reply = CLI.run(p) { try c.reply(to: tag) }
            if json {
                printLine("{\(JSON.path(p)),\"gen\":\(reply.ok.option("gen") ?? "null"),\"stale\":\(reply.ok.option("stale") == "1")}")
            }
            if reply.ok.option("stale") == "1" {
                stale = true
                Output.write("syncbadge: \(PathBytes.display(p)): stale, it changed since generation \(gen ?? 0) (now \(reply.ok.option("gen") ?? "?"))\n", to: STDERR_FILENO)
            }
        }
        if stale { throw ExitCode(2) }
    }
}

/// `syncbadge changes`: what a sync engine has to upload.
struct Changes: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "changes",
        abstract: "List the pending paths of a root (as a sync engine); --follow streams new changes.",
        discussion: """
            Prints one path per line (with -z: NUL-terminated and unescaped, safe for any file \
            name). Deleted paths are listed too: their tombstones stay until `syncbadge set synced` \
            reports the deletion. With --follow, each later change is printed as it happens, and \
            if the daemon had to drop some, or restarted, the full list is printed again.
            """)

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The root.") var root: String
    @Flag(help: "Keep running and print changes as they happen.") var follow = false
    @Flag(name: .customShort("z"), help: "Terminate paths with NUL instead of a newline.") var nul = false
    @Flag(help: "JSON Lines: path, gen, and for followed changes what and from.") var json = false

    func run() throws {
        let path = CLI.absolute(root)
        var c = try connection.connect(role: .provider)
        guard follow else { return listAll(c, path) }
        CLI.unblockSignals()
        // When the daemon restarts, subscribe again and list everything again: what changed
        // while it was away is in that list.
        while true {
            stream(c, path)
            Output.write("syncbadge: the daemon went away; waiting for it to come back\n", to: STDERR_FILENO)
            c = connection.reconnect(role: .provider)
        }
    }

    /// Lists, then prints each change pushed, until the daemon goes away.
    func stream(_ c: Connection, _ path: [UInt8]) {
        // Subscribe first so that nothing between the listing and the feed is missed.
        _ = CLI.run(path) { try c.request(Request(.subscribeChanges, [.path(path)])) }
        listAll(c, path)
        while true {
            guard let m = try? c.nextPush(timeout: nil) else { return }
            switch m.kind {
            case "CHANGED":
                guard let p = m.fields.first?.bytes else { continue }
                if json {
                    var f = [JSON.path(p), "\"gen\":\(m.option("gen") ?? "0")", "\"what\":\(JSON.string(m.option("what") ?? ""))"]
                    if let from = m.options["from"] { f.append(JSON.path(from, key: "from")) }
                    emit("{" + f.joined(separator: ",") + "}")
                } else {
                    emit(p)
                }
            case "RESET-CHANGES":
                listAll(c, path)
            case "BYE":
                return
            default:
                continue
            }
        }
    }

    func listAll(_ c: Connection, _ path: [UInt8]) {
        let reply = CLI.run(path) { try c.request(Request(.changes, [.path(path)])) }
        for i in reply.data.compactMap(Item.init) {
            if json { emit(JSON.item(i)) } else { emit(i.path) }
        }
    }

    func emit(_ line: String) {
        Output.write(line + (nul ? "\0" : "\n"))
    }

    func emit(_ path: [UInt8]) {
        Output.write(path + [nul ? 0 : 0x0A])
    }
}

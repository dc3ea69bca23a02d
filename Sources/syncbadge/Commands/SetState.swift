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
            let ok = Ok(CLI.run(p) { try c.reply(to: tag) }.ok) ?? .plain
            if json {
                printLine("{\(JSON.path(p)),\"gen\":\(ok.gen.map(String.init) ?? "null"),\"stale\":\(ok.stale)}")
            }
            if ok.stale {
                stale = true
                Output.write("syncbadge: \(PathBytes.display(p)): stale, it changed since generation \(gen ?? 0) (now \(ok.gen.map(String.init) ?? "?"))\n", to: STDERR_FILENO)
            }
        }
        if stale { throw ExitCode(2) }
    }
}

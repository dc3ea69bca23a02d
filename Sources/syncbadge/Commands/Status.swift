#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FoundationEssentials
import SyncBadgeClient
import SyncBadgeCore
import SyncBadgeProtocol

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the state of paths (default: the current directory).",
        discussion: "A directory's state is the worst in its subtree; its counts say how many entries are in each state.")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "Paths to show.") var paths: [String] = []
    @Flag(help: "JSON Lines output.") var json = false
    @Flag(help: "Stable output for scripts: STATE<TAB>BADGE<TAB>PATH per line (paths percent-encoded).") var porcelain = false
    @Flag(name: .customShort("z"), help: "With --porcelain: NUL-terminated lines and paths as they are, like `git status -z`.") var nul = false
    @Flag(name: .customLong("exit-status"), help: "Exit 1 when any path is not synced.") var exitStatus = false

    func validate() throws {
        if nul && !porcelain { throw ValidationError("-z goes with --porcelain") }
        if json && porcelain { throw ValidationError("choose --json or --porcelain") }
    }

    func run() throws {
        try StatusReport(endpoint: connection.endpoint, paths: paths, json: json, porcelain: porcelain,
                         nul: nul, exitStatus: exitStatus).run()
    }
}

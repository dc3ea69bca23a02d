#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import SyncBadgeClient

/// `syncbadge bridge`: stdin/stdout relayed to the daemon's socket, for shells (bash) and
/// scripts that cannot open a Unix socket. The client speaks the protocol itself.
struct Bridge: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bridge",
        abstract: "Relay standard input and output to the daemon's socket (for shells and scripts).",
        discussion: "Starts the daemon if none answers (unless --no-spawn). Exits when either side closes.")

    @OptionGroup var connection: ConnectionOptions

    func run() throws {
        CLI.unblockSignals()
        signal(SIGPIPE, SIG_IGN)
        let c = try connection.connect(hello: false)
        c.relay(input: STDIN_FILENO, output: STDOUT_FILENO)
    }
}

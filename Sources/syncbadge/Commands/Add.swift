#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FoundationEssentials
import SyncBadgeClient
import SyncBadgeCore
import SyncBadgeProtocol

struct Add: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Register a directory as a root: watch it and track every entry in it.",
        discussion: "Returns once every directory is watched and every entry indexed.")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The directory to register.") var dir: String
    @Flag(name: .customLong("no-default-ignores"), help: "Do not ignore editor swap and backup files (*.swp, *~, .#*).")
    var noDefaultIgnores = false

    func run() throws {
        let path = CLI.absolute(dir)
        let c = try connection.connect(role: .admin)
        _ = CLI.run(path) { try c.request(.addRoot(path, ignoreDefaults: !noDefaultIgnores)) }
        printLine("watching \(PathBytes.display(path))")
    }
}

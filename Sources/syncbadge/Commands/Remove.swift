#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FoundationEssentials
import SyncBadgeClient
import SyncBadgeCore
import SyncBadgeProtocol

struct Remove: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "remove", abstract: "Stop watching a root and forget its states.")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The root to remove.") var dir: String

    func run() throws {
        let path = CLI.absolute(dir)
        let c = try connection.connect(role: .admin)
        _ = CLI.run(path) { try c.request(Request(.removeRoot, [.path(path)])) }
        printLine("removed \(PathBytes.display(path))")
    }
}

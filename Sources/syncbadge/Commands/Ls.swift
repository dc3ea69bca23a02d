#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FoundationEssentials
import SyncBadgeClient
import SyncBadgeCore
import SyncBadgeProtocol

struct Ls: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ls", abstract: "List a directory's entries with their badges (default: the current directory).")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The directory to list.") var dir: String = "."
    @Flag(help: "JSON Lines output.") var json = false

    func run() throws {
        let path = CLI.absolute(dir)
        let c = try connection.connect()
        let reply = CLI.run(path) { try c.request(Request(.list, [.path(path)])) }
        let style = Style(badgeLines: json ? [] : CLI.run(nil) { try c.request(Request(.badges)) }.data)
        for i in reply.data.compactMap(Item.init) {
            printLine(json ? JSON.item(i) : i.humanLine(style, name: PathBytes.display(i.name)))
        }
    }
}

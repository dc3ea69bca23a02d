#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FoundationEssentials
import SyncBadgeClient
import SyncBadgeProtocol

/// `syncbadge menu`: the context menu a file browser would show.
struct Menu: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "menu",
        abstract: "List the menu items for paths, with the ids `syncbadge action` takes.",
        discussion: "Items come from the sync engine that claimed the root, then the built-in ones (Ignore, Stop ignoring, Show details).")

    enum Kind: String, ExpressibleByArgument, CaseIterable {
        case items, container, sidebar, toolbar
    }

    @OptionGroup var connection: ConnectionOptions
    @Option(help: "items (the selection), container (a directory's background), sidebar or toolbar.") var kind: Kind = .items
    @Option(help: "The directory the menu is shown in (for container, sidebar and toolbar menus).") var target: String?
    @Argument(help: "The selected paths (default: the current directory).") var paths: [String] = []
    @Flag(help: "JSON Lines output.") var json = false

    func run() throws {
        let c = try connection.connect()
        let selected = (paths.isEmpty && target == nil ? ["."] : paths).map(CLI.absolute)
        let request = Request.menu(kind: kind.rawValue, target: target.map(CLI.absolute), paths: selected)
        let reply = CLI.run(selected.first) { try c.request(request) }
        for item in reply.data.compactMap(MenuItem.init) {
            if json {
                printLine("{\"id\":\(JSON.string(item.id)),\"title\":\(JSON.string(item.title)),\"enabled\":\(item.enabled)}")
            } else {
                printLine("\(item.id.padded(to: 22)) \(item.title)\(item.enabled ? "" : " (disabled)")")
            }
        }
    }
}

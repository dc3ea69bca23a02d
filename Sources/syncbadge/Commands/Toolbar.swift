#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FoundationEssentials
import SyncBadgeClient
import SyncBadgeProtocol

/// `syncbadge toolbar`: the sync engines' toolbar items.
struct Toolbar: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "toolbar", abstract: "Show the toolbar item of each sync engine.")

    @OptionGroup var connection: ConnectionOptions
    @Flag(help: "JSON Lines output.") var json = false

    func run() throws {
        let c = try connection.connect()
        let reply = CLI.run(nil) { try c.request(Request(.toolbar)) }
        for t in reply.data.compactMap(ProviderToolbar.init) {
            let name = t.item?.name ?? "", tip = t.item?.tooltip ?? "", provider = t.provider
            if json {
                printLine("{\"name\":\(JSON.string(name)),\"tooltip\":\(JSON.string(tip)),\"provider\":\(JSON.string(provider))}")
            } else {
                printLine("\(name) — \(tip) (\(provider))")
            }
        }
        if reply.data.isEmpty && !json { printLine("no sync engine has a toolbar item") }
    }
}

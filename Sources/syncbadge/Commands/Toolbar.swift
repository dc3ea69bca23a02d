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
        for m in reply.data where m.messageKind == .toolbar {
            let name = m.option("name") ?? "", tip = m.option("tooltip") ?? "", provider = m.option("provider") ?? ""
            if json {
                printLine("{\"name\":\(JSON.string(name)),\"tooltip\":\(JSON.string(tip)),\"provider\":\(JSON.string(provider))}")
            } else {
                printLine("\(name) — \(tip) (\(provider))")
            }
        }
        if reply.data.isEmpty && !json { printLine("no sync engine has a toolbar item") }
    }
}

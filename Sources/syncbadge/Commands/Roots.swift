#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FoundationEssentials
import SyncBadgeClient
import SyncBadgeCore
import SyncBadgeProtocol

struct Roots: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "roots", abstract: "List the registered roots and their states.")

    @OptionGroup var connection: ConnectionOptions
    @Flag(help: "JSON Lines output.") var json = false

    func run() throws {
        let c = try connection.connect()
        let reply = CLI.run(nil) { try c.request(Request(.roots)) }
        let style = Style(badgeLines: json ? [] : CLI.run(nil) { try c.request(Request(.badges)) }.data)
        for root in reply.data.compactMap(Root.init) {
            let path = root.path
            let state = root.stateName
            if json {
                var f = [JSON.path(path), "\"state\":\(JSON.string(state))"]
                if let w = root.watches { f.append("\"watches\":\(w)") }
                f.append("\"scanning\":\(root.scanning)")
                if let d = root.degraded { f.append("\"degraded\":\(JSON.string(d))") }
                printLine("{" + f.joined(separator: ",") + "}")
            } else {
                var line = "\(style.glyph(state)) \(style.paint(state.padded(to: 8), badge: state)) \(PathBytes.display(path))"
                if let w = root.watches { line += "  (\(w) watches)" }
                if root.scanning { line += "  scanning…" }
                if let d = root.degraded { line += "  degraded: \(d)" }
                printLine(line)
            }
        }
        if reply.data.isEmpty && !json { printLine("no roots; add one with `syncbadge add DIR`") }
    }
}

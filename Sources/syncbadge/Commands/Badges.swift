#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FoundationEssentials
import SyncBadgeClient
import SyncBadgeCore
import SyncBadgeProtocol

struct Badges: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "badges", abstract: "Show the badge set: id, glyph, ASCII fallback, label and image.")

    @OptionGroup var connection: ConnectionOptions
    @Flag(help: "JSON Lines output.") var json = false

    func run() throws {
        let c = try connection.connect()
        let reply = CLI.run(nil) { try c.request(Request(.badges)) }
        let style = Style(badgeLines: reply.data)
        for m in reply.data where m.messageKind == .badge {
            let id = m.fields.first?.string ?? "?"
            if json {
                var f = ["\"id\":\(JSON.string(id))"]
                for k in ["label", "glyph", "ascii", "color"] { f.append("\(JSON.string(k)):\(JSON.string(m.option(k) ?? ""))") }
                if let img = m.options["image"] { f.append(JSON.path(img, key: "image")) }
                printLine("{" + f.joined(separator: ",") + "}")
            } else {
                let image = m.options["image"].map { PathBytes.display($0) } ?? ""
                printLine("\(style.glyph(id)) \(m.option("ascii") ?? "") \(id.padded(to: 9)) \(m.option("label") ?? "")  \(image)")
            }
        }
    }
}

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
        for badge in reply.data.compactMap(Badge.init) {
            let id = badge.id
            if json {
                var f = ["\"id\":\(JSON.string(id))"]
                for (k, v) in [("label", badge.label), ("glyph", badge.glyph), ("ascii", badge.ascii), ("color", badge.color)] {
                    f.append("\(JSON.string(k)):\(JSON.string(v))")
                }
                if let img = badge.image { f.append(JSON.path(img, key: "image")) }
                printLine("{" + f.joined(separator: ",") + "}")
            } else {
                let image = badge.image.map { PathBytes.display($0) } ?? ""
                printLine("\(style.glyph(id)) \(badge.ascii) \(id.padded(to: 9)) \(badge.label)  \(image)")
            }
        }
    }
}

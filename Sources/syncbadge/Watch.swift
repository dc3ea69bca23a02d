#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import SyncBadgeClient
import SyncBadgeCore

/// A live view of one directory, driven by `OBSERVE` pushes.
struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Watch a directory's badges change live (default: the current directory).",
        discussion: "On a terminal the view redraws in place; otherwise every change is printed as a line. Ctrl-C stops.")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The directory to watch.") var dir: String = "."
    @Flag(help: "Print each change as a JSON line instead of drawing a view.") var json = false

    func run() throws {
        let path = CLI.absolute(dir)
        let c = try connection.connect()
        let style = Style(badgeLines: CLI.run(nil) { try c.request("BADGES") }.data)
        let listing = CLI.run(path) { try c.request("OBSERVE", [.path(path)]) }
        var entries: [[UInt8]: Item] = [:]
        for i in listing.data.compactMap(Item.init) { entries[i.name] = i }
        var me = CLI.run(path) { try c.request("STATUS", [.path(path)]) }.data.compactMap(Item.init).first
        let live = isatty(STDOUT_FILENO) == 1 && !json
        if live {
            draw(path, me, entries, style)
        } else if !json {
            printLine("watching \(PathBytes.display(path)) (\(entries.count) entries)")
        }
        while true {
            let push: WireMessage?
            do {
                push = try c.nextPush(timeout: nil)
            } catch {
                CLI.fail("\(error)", code: error as? ClientError == .closed("shutdown") ? 0 : 1)
            }
            guard let m = push else { continue }
            switch m.kind {
            case "ITEM":
                guard let i = Item(m) else { continue }
                if i.path == path { me = i } else { entries[i.name] = i }
                if json { printLine(JSON.item(i)) } else if !live { printLine(i.humanLine(style, name: PathBytes.display(i.path))) }
            case "GONE":
                guard let p = m.fields.first?.bytes else { continue }
                if p == path {
                    if !live { printLine("gone \(PathBytes.display(p))") }
                    return
                }
                entries.removeValue(forKey: Array(PathBytes.lastComponent(p)))
                if json { printLine("{\(JSON.path(p)),\"gone\":true}") } else if !live { printLine("gone \(PathBytes.display(p))") }
            case "RESET":
                entries.removeAll()
                for i in CLI.run(path) { try c.request("LIST", [.path(path)]) }.data.compactMap(Item.init) { entries[i.name] = i }
            case "BYE":
                if !live { printLine("daemon said goodbye (\(m.fields.first?.string ?? ""))") }
                return
            default:
                continue
            }
            if live { draw(path, me, entries, style) }
        }
    }

    func draw(_ path: [UInt8], _ me: Item?, _ entries: [[UInt8]: Item], _ style: Style) {
        var out = "\u{1B}[H\u{1B}[2J"
        let head = me.map { "\(style.glyph($0.badge)) \($0.state)  \($0.countSummary(style))" } ?? ""
        out += "\(PathBytes.display(path))  \(head)\n"
        out += String(repeating: "─", count: 40) + "\n"
        for (name, i) in entries.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            out += i.humanLine(style, name: PathBytes.display(name)) + "\n"
        }
        out += "\n(Ctrl-C to stop)\n"
        FileHandle.standardOutput.write(Data(out.utf8))
    }
}

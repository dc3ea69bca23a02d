#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FoundationEssentials
import Synchronization
import SyncBadgeClient
import SyncBadgeProtocol

/// Set by SIGWINCH: the live view redraws for the new size.
private let resized = Atomic<Bool>(false)

/// A live view of one directory, driven by `OBSERVE` pushes.
struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Watch a directory's badges change live (default: the current directory).",
        discussion: """
            On a terminal the view redraws in place (a summary line, then one line per entry, with \
            a progress bar for what is syncing) and follows the terminal's size; otherwise every \
            change is printed as a line. When the daemon restarts, the view waits for it and \
            carries on. Ctrl-C stops.
            """)

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The directory to watch.") var dir: String = "."
    @Flag(help: "Print each change as a JSON line instead of drawing a view.") var json = false

    func run() throws {
        CLI.unblockSignals()
        let path = CLI.absolute(dir)
        let live = isatty(STDOUT_FILENO) == 1 && !json
        if live { signal(SIGWINCH) { _ in resized.store(true, ordering: .relaxed) } }
        var c = try connection.connect()
        // A daemon restart ends one session; the view waits for the next and carries on.
        while follow(c, path, live) {
            if live {
                Output.write("\u{1B}[H\(PathBytes.display(path))  (the daemon went away; waiting for it to come back)\u{1B}[K\n\u{1B}[J")
            } else if !json {
                printLine("the daemon went away; waiting for it to come back")
            }
            c = connection.reconnect()
        }
    }

    /// Observes `path` and shows what is pushed, until the watched directory is gone (false)
    /// or the daemon goes away (true).
    func follow(_ c: Connection, _ path: [UInt8], _ live: Bool) -> Bool {
        let style = Style(badgeLines: CLI.run(nil) { try c.request(Request(.badges)) }.data)
        let listing = CLI.run(path) { try c.request(Request(.observe, [.path(path)])) }
        var entries: [[UInt8]: Item] = [:]
        for i in listing.data.compactMap(Item.init) { entries[i.name] = i }
        var me = CLI.run(path) { try c.request(Request(.status, [.path(path)])) }.data.compactMap(Item.init).first
        if live {
            draw(path, me, entries, style)
        } else if !json {
            printLine("watching \(PathBytes.display(path)) (\(entries.count) entries)")
        }
        while true {
            let push: WireMessage?
            do {
                // Live: wake up for SIGWINCH too (it interrupts the wait); otherwise block.
                push = try c.nextPush(timeout: live ? 3600 : nil, interruptible: live)
            } catch {
                return true
            }
            guard let m = push else {
                if resized.exchange(false, ordering: .relaxed) { draw(path, me, entries, style) }
                continue
            }
            switch m.messageKind {
            case .item:
                guard let i = Item(m) else { continue }
                if i.path == path { me = i } else { entries[i.name] = i }
                if json { printLine(JSON.item(i)) } else if !live { printLine(i.humanLine(style, name: PathBytes.display(i.path))) }
            case .gone:
                guard let p = Gone(m)?.path else { continue }
                if p == path {
                    if !live { printLine("gone \(PathBytes.display(p))") }
                    return false
                }
                entries.removeValue(forKey: Array(PathBytes.lastComponent(p)))
                if json { printLine("{\(JSON.path(p)),\"gone\":true}") } else if !live { printLine("gone \(PathBytes.display(p))") }
            case .reset:
                entries.removeAll()
                let listing = CLI.run(path) { try c.request(Request(.list, [.path(path)])) }
                for i in listing.data.compactMap(Item.init) { entries[i.name] = i }
            case .bye:
                if !live && !json { printLine("daemon said goodbye (\(Bye(m)?.reason ?? ""))") }
                return true
            default:
                continue
            }
            if live { draw(path, me, entries, style) }
        }
    }

    static func terminalSize() -> (cols: Int, rows: Int) {
        var ws = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &ws) == 0, ws.ws_col > 0 else { return (80, 24) }
        return (Int(ws.ws_col), Int(ws.ws_row))
    }

    /// `[####······]` (the percentage is already on the line)
    static func progressBar(_ percent: Int, width: Int = 10) -> String {
        let filled = max(0, min(width, percent * width / 100))
        return "[" + String(repeating: "#", count: filled) + String(repeating: "·", count: width - filled) + "]"
    }

    /// Redraws in place: home, each line overwritten and cleared to its end, then the rest of
    /// the screen cleared; no full-screen clear, so nothing flickers.
    func draw(_ path: [UInt8], _ me: Item?, _ entries: [[UInt8]: Item], _ style: Style) {
        let (cols, rows) = Self.terminalSize()
        var lines: [String] = []
        let summary = me.map { "\(style.glyph($0.badge)) \($0.stateName)  \($0.countSummary(style))" } ?? ""
        lines.append("\(PathBytes.display(path))  \(summary)")
        lines.append(String(repeating: "─", count: min(cols, 60)))
        let sorted = entries.sorted { $0.key.lexicographicallyPrecedes($1.key) }
        let room = max(1, rows - 4)
        for (name, i) in sorted.prefix(room) {
            var line = i.humanLine(style, name: PathBytes.display(name))
            if i.state == .syncing, let p = i.progress { line += "  " + Self.progressBar(Int(p)) }
            lines.append(line)
        }
        if sorted.count > room { lines.append("… \(sorted.count - room) more") }
        lines.append("(Ctrl-C to stop)")
        var out = "\u{1B}[H"
        for l in lines { out += Self.truncate(l, to: cols) + "\u{1B}[K\n" }
        out += "\u{1B}[J"
        Output.write(out)
    }

    /// Cuts a line to the terminal's width, counting visible characters (not escape codes).
    static func truncate(_ s: String, to width: Int) -> String {
        var out = ""
        var visible = 0
        var inEscape = false
        for ch in s {
            if ch == "\u{1B}" { inEscape = true }
            if inEscape {
                out.append(ch)
                if ch.isLetter && ch != "[" { inEscape = false }
                continue
            }
            if visible >= width - 1 { break }
            out.append(ch)
            visible += 1
        }
        return out + (inEscape ? "" : "\u{1B}[0m")
    }
}

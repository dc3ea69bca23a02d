#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FoundationEssentials
import SyncBadgeClient
import SyncBadgeCore
import SyncBadgeProtocol

// Every command names itself: the default name comes from `String(describing: Self.self)`,
// whose dynamic casts scan every protocol conformance of the static binary, for each
// subcommand, on every start (a third of `syncbadge status`'s start-up time).
struct SyncBadgeCLI: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncbadge",
        abstract: "Sync status badges for your files, from the syncbadged daemon.",
        discussion: """
            Register a folder with `syncbadge add DIR`; every file in it then has a sync state \
            (unknown, pending, syncing, synced, error, conflict, ignored) that sync engines report \
            and `syncbadge status`, `ls` and `watch` show. Relative paths are taken from the \
            current directory.

            The options every subcommand takes (--socket, --no-spawn, and --json where it \
            applies) may also stand before the subcommand: `syncbadge --socket S roots`.

            Exit codes: 0 success, 1 an error the daemon reported, 64 a usage error, 69 no daemon \
            answers (start one with `syncbadged &`).
            """,
        version: SyncBadgeVersion.string,
        subcommands: [Add.self, Remove.self, Roots.self, Status.self, Ls.self, Watch.self, Badges.self, SetState.self, Changes.self, Menu.self, Action.self, Toolbar.self, Wait.self, Bridge.self])
}

struct Add: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Register a directory as a root: watch it and track every entry in it.",
        discussion: "Returns once every directory is watched and every entry indexed.")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The directory to register.") var dir: String
    @Flag(name: .customLong("no-default-ignores"), help: "Do not ignore editor swap and backup files (*.swp, *~, .#*).")
    var noDefaultIgnores = false

    func run() throws {
        let path = CLI.absolute(dir)
        let c = try connection.connect(role: .admin)
        var fields: [RequestField] = [.path(path)]
        if noDefaultIgnores { fields.append(.option("ignore-defaults", "0")) }
        _ = CLI.run(path) { try c.request(Request(.addRoot, fields)) }
        printLine("watching \(PathBytes.display(path))")
    }
}

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

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the state of paths (default: the current directory).",
        discussion: "A directory's state is the worst in its subtree; its counts say how many entries are in each state.")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "Paths to show.") var paths: [String] = []
    @Flag(help: "JSON Lines output.") var json = false
    @Flag(help: "Stable output for scripts: STATE<TAB>BADGE<TAB>PATH per line (paths percent-encoded).") var porcelain = false
    @Flag(name: .customShort("z"), help: "With --porcelain: NUL-terminated lines and paths as they are, like `git status -z`.") var nul = false
    @Flag(name: .customLong("exit-status"), help: "Exit 1 when any path is not synced.") var exitStatus = false

    func validate() throws {
        if nul && !porcelain { throw ValidationError("-z goes with --porcelain") }
        if json && porcelain { throw ValidationError("choose --json or --porcelain") }
    }

    func run() throws {
        try StatusReport(endpoint: connection.endpoint, paths: paths, json: json, porcelain: porcelain,
                         nul: nul, exitStatus: exitStatus).run()
    }
}

/// What `status` does once its arguments are known, shared by the command above and the
/// fast path in main.swift.
struct StatusReport {
    var endpoint = Endpoint()
    var paths: [String] = []
    var json = false
    var porcelain = false
    var nul = false
    var exitStatus = false

    func run() throws {
        let targets = (paths.isEmpty ? ["."] : paths).map(CLI.absolute)
        let c = try endpoint.connect()
        var items: [Item] = []
        for p in targets {
            // One request per path so that an error names the path it is about.
            let reply = CLI.run(p) { try c.request(Request(.status, [.path(p)])) }
            items.append(contentsOf: reply.data.compactMap(Item.init))
        }
        if porcelain {
            // Stable: STATE, badge id and path; -z keeps the path's bytes, otherwise they are
            // percent-encoded as on the wire, so a newline in a name cannot split a line.
            var out: [UInt8] = []
            for i in items {
                out += Array("\(i.stateName)\t\(i.badge)\t".utf8)
                out += nul ? i.path : PercentEncoding.encode(i.path)
                out.append(nul ? 0 : 0x0A)
            }
            Output.write(out)
        } else {
            let style = Style(badgeLines: json ? [] : CLI.run(nil) { try c.request(Request(.badges)) }.data)
            for i in items {
                printLine(json ? JSON.item(i) : i.humanLine(style, name: PathBytes.display(i.path)))
            }
        }
        if exitStatus && items.contains(where: { $0.state != .synced }) { throw ExitCode(1) }
    }
}

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

struct Badges: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "badges", abstract: "Show the badge set: id, glyph, ASCII fallback, label and image.")

    @OptionGroup var connection: ConnectionOptions
    @Flag(help: "JSON Lines output.") var json = false

    func run() throws {
        let c = try connection.connect()
        let reply = CLI.run(nil) { try c.request(Request(.badges)) }
        let style = Style(badgeLines: reply.data)
        for m in reply.data where m.kind == "BADGE" {
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

#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FoundationEssentials
import SyncBadgeClient
import SyncBadgeCore

/// Options every subcommand takes.
struct ConnectionOptions: ParsableArguments {
    @Option(help: "The daemon's socket (default: $SYNCBADGE_SOCKET, then $XDG_RUNTIME_DIR/syncbadge/daemon.sock, then /tmp/syncbadge-$UID/daemon.sock).")
    var socket: String?

    @Flag(name: .customLong("no-spawn"), help: "Do not start the daemon when none answers.")
    var noSpawn = false

    var endpoint: Endpoint { Endpoint(socket: socket, noSpawn: noSpawn) }

    func connect(role: String = "viewer", name: String = "syncbadge-cli", hello: Bool = true) throws -> Connection {
        try endpoint.connect(role: role, name: name, hello: hello)
    }

    func reconnect(role: String = "viewer", name: String = "syncbadge-cli") -> Connection {
        endpoint.reconnect(role: role, name: name)
    }
}

/// Where the daemon is and whether to start it: plain values, so that the fast path of
/// `status` (main.swift) can connect without ArgumentParser.
struct Endpoint {
    var socket: String? = nil
    var noSpawn = false

    var socketPath: String {
        SocketPath.resolve(explicit: socket, variable: CLI.environment, uid: getuid())
    }

    /// Connects and says `HELLO`, starting the daemon if none answers (unless --no-spawn);
    /// exits 69 with a hint when there is still none.
    func connect(role: String = "viewer", name: String = "syncbadge-cli", hello: Bool = true) throws -> Connection {
        do {
            return hello ? try Connection(socketPath: socketPath, role: role, name: name) : try Connection(socketPath: socketPath)
        } catch ClientError.noDaemon(let path) {
            if noSpawn {
                CLI.fail("no daemon answers on \(path); start one with `syncbadged &` (or `syncbadged --socket \(path)`)", code: CLI.noDaemonExit)
            }
            let c = try Spawner.startAndConnect(socket: path, role: role, name: name)
            if hello { return c }
            // The bridge's client says its own HELLO: reconnect without one.
            return try Connection(socketPath: path)
        }
    }

    /// After the daemon went away (a restart, an upgrade): waits until it answers again,
    /// retrying with backoff. It does not start one: a daemon stopped on purpose stays stopped
    /// until its manager (or the user) starts it.
    func reconnect(role: String = "viewer", name: String = "syncbadge-cli") -> Connection {
        var delay = 0.05
        while true {
            if let c = try? Connection(socketPath: socketPath, role: role, name: name) { return c }
            // Nobody would see what comes next (the reader of a pipe, or the terminal, is gone).
            if CLI.outputClosed() { Glibc.exit(0) }
            usleep(useconds_t(delay * 1_000_000))
            delay = min(delay * 2, 1)
        }
    }
}

enum CLI {
    /// sysexits: EX_UNAVAILABLE.
    static let noDaemonExit: Int32 = 69

    static func fail(_ message: String, code: Int32 = 1) -> Never {
        Output.write("syncbadge: \(message)\n", to: STDERR_FILENO)
        exit(code)
    }

    /// One environment variable. `ProcessInfo.processInfo.environment` would convert every
    /// variable into a dictionary first, a cost each one-shot `status` paid twice.
    static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// Long-running commands: a parent may have blocked signals (test runners, some shells'
    /// job control do), and Ctrl-C or SIGTERM must still stop them.
    static func unblockSignals() {
        var none = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, nil)
    }

    /// Whether standard output's reader is gone: a pipe whose other end closed, or a hung-up
    /// terminal, polls as an error or hang-up without blocking.
    static func outputClosed() -> Bool {
        var p = pollfd(fd: STDOUT_FILENO, events: 0, revents: 0)
        return poll(&p, 1, 0) == 1 && p.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0
    }

    static var cwd: [UInt8] { Array(FileManager.default.currentDirectoryPath.utf8) }

    /// A path argument made absolute against the current directory.
    static func absolute(_ arg: String) -> [UInt8] {
        PathBytes.absolute(Array(arg.utf8), cwd: cwd)
    }

    /// Runs a request; a server error ends the program with the path and the reason.
    static func run<T>(_ what: [UInt8]?, _ body: () throws -> T) -> T {
        do {
            return try body()
        } catch ClientError.server(let code, let message) {
            let reason = describe(code: code, message: message, path: what)
            fail(what.map { "\(PathBytes.display($0)): \(reason)" } ?? reason)
        } catch {
            fail("\(error)")
        }
    }

    static func describe(code: String, message: String?, path: [UInt8]?) -> String {
        let plain: String
        switch code {
        case "not-found": plain = "not found"
        case "not-a-directory": plain = "not a directory"
        case "outside": plain = "not inside any registered root (add one with `syncbadge add DIR`)"
        case "bad-path": plain = "not a valid path"
        case "busy": plain = "busy"
        case "forbidden": plain = "not allowed"
        default: plain = code
        }
        // Messages that only repeat the path add nothing.
        if let message, !message.isEmpty, path.map({ Array(message.utf8) != $0 }) ?? true {
            return "\(plain) (\(message))"
        }
        return plain
    }
}

/// How to print: colours only on a terminal and without NO_COLOR.
struct Style {
    let color: Bool
    let badges: [String: (glyph: String, ascii: String, color: String)]

    init(badgeLines: [WireMessage]) {
        color = isatty(STDOUT_FILENO) == 1 && (CLI.environment("NO_COLOR") ?? "").isEmpty && CLI.environment("TERM") != "dumb"
        var b: [String: (String, String, String)] = [:]
        for m in badgeLines where m.kind == "BADGE" {
            guard let id = m.fields.first?.string else { continue }
            b[id] = (m.option("glyph") ?? "?", m.option("ascii") ?? "?", m.option("color") ?? "0")
        }
        badges = b
    }

    func glyph(_ badge: String) -> String {
        guard let b = badges[badge] else { return "?" }
        return color ? "\u{1B}[\(b.color)m\(b.glyph)\u{1B}[0m" : b.glyph
    }

    func paint(_ text: String, badge: String) -> String {
        guard color, let b = badges[badge] else { return text }
        return "\u{1B}[\(b.color)m\(text)\u{1B}[0m"
    }
}

enum JSON {
    static func string(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 {
                    let hex = String(u.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }

    /// A path as JSON: text when it is valid UTF-8, else its percent-encoded wire form with
    /// `"path_encoded": true`.
    static func path(_ p: [UInt8], key: String = "path") -> String {
        if let s = String(validating: p, as: UTF8.self) { return "\(string(key)):\(string(s))" }
        return "\(string(key)):\(string(String(decoding: PercentEncoding.encode(p), as: UTF8.self))),\"\(key)_encoded\":true"
    }

    static func item(_ i: Item) -> String {
        var fields = [path(i.path), "\"state\":\(string(i.state))", "\"badge\":\(string(i.badge))", "\"kind\":\(string(i.kind))"]
        if let g = i.gen { fields.append("\"gen\":\(g)") }
        if let p = i.progress { fields.append("\"progress\":\(p)") }
        if let m = i.message { fields.append("\"message\":\(string(m))") }
        if let c = i.counts {
            let parts = SyncState.allCases.filter { c[$0] != 0 }.map { "\(string($0.name)):\(c[$0])" }
            fields.append("\"counts\":{\(parts.joined(separator: ","))}")
        }
        return "{" + fields.joined(separator: ",") + "}"
    }
}

/// Standard output and error without Foundation's `FileHandle`: the CLI imports only
/// FoundationEssentials, which keeps ICU and the rest of Foundation out of a binary that
/// starts for every `syncbadge status` (docs/PERFORMANCE.md).
enum Output {
    /// Writes all of `bytes`, across short writes and interrupted calls. A reader that went
    /// away ends the write (SIGPIPE, unless ignored, ends the program first, as before).
    static func write(_ bytes: [UInt8], to fd: Int32 = STDOUT_FILENO) {
        bytes.withUnsafeBytes { buf in
            var done = 0
            while done < buf.count {
                let n = Glibc.write(fd, buf.baseAddress! + done, buf.count - done)
                if n < 0 {
                    if errno == EINTR { continue }
                    return
                }
                done += n
            }
        }
    }

    static func write(_ text: String, to fd: Int32 = STDOUT_FILENO) {
        write(Array(text.utf8), to: fd)
    }
}

extension String {
    /// Fixed-width columns: cut to `width` characters, or filled with spaces up to it.
    func padded(to width: Int) -> String {
        count >= width ? String(prefix(width)) : self + String(repeating: " ", count: width - count)
    }
}

func printLine(_ s: String) {
    Output.write(s + "\n")
}

extension Item {
    /// `⟳3 ✗1`-style summary of a directory's counts, worst first.
    func countSummary(_ style: Style) -> String {
        guard let counts else { return "" }
        return SyncState.worstFirst.filter { counts[$0] > 0 }
            .map { style.glyph($0.name) + "\(counts[$0])" }
            .joined(separator: " ")
    }

    func humanLine(_ style: Style, name: String) -> String {
        var line = "\(style.glyph(badge)) \(style.paint(state.padded(to: 8), badge: badge)) \(name)"
        if kind == "dir" && name.last != "/" { line += "/" }
        if kind == "gone" { line += " (deleted)" }
        if let progress { line += " \(progress)%" }
        if let message { line += " — \(message)" }
        if kind == "dir", counts != nil {
            let summary = countSummary(style)
            if !summary.isEmpty { line += "  [\(summary)]" }
        }
        return line
    }
}

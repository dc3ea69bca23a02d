#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import SyncBadgeClient
import SyncBadgeCore

/// The ranger plugin `Examples/ranger/syncbadge.py`, end to end: the real daemon, a real ranger
/// in a detached tmux session (its own tmux server, its socket in the test's temporary
/// directory, so nothing is left behind in /tmp/tmux-UID), a temporary HOME and config directory
/// holding `rc.conf` and `plugins/syncbadge.py`. The test reads the screen with `capture-pane`
/// every 50 ms until what it waits for shows up or a deadline passes; it never sleeps.
final class RangerScreen {
    static let plugin = Products.repository.appendingPathComponent("Examples/ranger/syncbadge.py").path

    /// ranger and tmux on the PATH.
    static var available: Bool { toolsOnPath(["ranger", "tmux"]) }

    let temp: TempDir
    let server: String
    let log: String
    let outputFile: String
    var killed = false

    /// Starts ranger in `directory`, talking to the daemon on `socket`.
    /// `idle_delay` is ranger's longest wait for a key (25.5 s at most): set this high, a badge
    /// that changes within the test's deadline was redrawn by the plugin, not by ranger's idle tick.
    init(temp: TempDir, socket: String, directory: String) throws {
        self.temp = temp
        server = temp.sub("tmux.sock")
        let home = temp.sub("ranger-home")
        let config = temp.sub("ranger-config")
        log = temp.sub("ranger.log")
        outputFile = temp.sub("tmux-output")
        let fm = FileManager.default
        try fm.createDirectory(atPath: config + "/ranger/plugins", withIntermediateDirectories: true)
        try fm.createDirectory(atPath: home, withIntermediateDirectories: true)
        try fm.createSymbolicLink(atPath: config + "/ranger/plugins/syncbadge.py", withDestinationPath: Self.plugin)
        try Data("""
            set flushinput false
            set idle_delay 25000
            default_linemode syncbadge

            """.utf8).write(to: URL(fileURLWithPath: config + "/ranger/rc.conf"))
        let env = [
            "HOME=\(home)", "XDG_CONFIG_HOME=\(config)", "XDG_DATA_HOME=\(home)/data", "XDG_CACHE_HOME=\(home)/cache",
            "SYNCBADGE_SOCKET=\(socket)", "LANG=C.UTF-8", "LC_ALL=C.UTF-8",
        ].map(Self.quote).joined(separator: " ")
        // If ranger dies, its last words stay on the screen for the failure message.
        let command = "env \(env) ranger --logfile=\(Self.quote(log)) \(Self.quote(directory)); echo \"ranger exited: $?\"; sleep 600"
        try tmux(["new-session", "-d", "-x", "150", "-y", "40", command])
    }

    static func quote(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    /// Runs a tmux client on this test's server; its standard output.
    ///
    /// Not with `Process`: the first client forks the tmux server, which keeps every descriptor
    /// the client inherited, and Foundation's `Process` learns of a child's exit from a socket
    /// the child inherits, so `waitUntilExit` would wait for the server's whole life (and the
    /// server would hold other tests' pipes open). posix_spawn closes everything but 0-2, and
    /// gives tmux (so the server and ranger) an empty signal mask and default handlers: a test
    /// thread blocks most signals, and a ranger started with them blocked would not even die of
    /// the SIGHUP `kill-server` sends.
    @discardableResult
    func tmux(_ args: [String]) throws -> String {
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "TMUX")
        env["LANG"] = "C.UTF-8"
        env["LC_ALL"] = "C.UTF-8"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        // Output to a file: a pipe's end could leak into another test's child meanwhile.
        posix_spawn_file_actions_addopen(&actions, 1, outputFile, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        guard Self.addCloseFrom(&actions, 3) == 0 else { throw HarnessError(description: "addclosefrom failed") }
        let argv = (["tmux", "-u", "-f", "/dev/null", "-S", server] + args).map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attr, &none)
        posix_spawnattr_setsigdefault(&attr, &all)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, "tmux", &actions, &attr, argv, envp)
        guard rc == 0 else { throw HarnessError(description: "cannot run tmux: \(String(cString: strerror(rc)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        guard status == 0 else {
            throw HarnessError(description: "tmux \(args.first ?? "") failed with status \(status)")
        }
        return (try? String(contentsOfFile: outputFile, encoding: .utf8)) ?? ""
    }

    /// glibc's posix_spawn_file_actions_addclosefrom_np (2.34), which Swift's Glibc module hides.
    static let addCloseFrom: @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32 = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else {
            fatalError("glibc 2.34 or later needed: posix_spawn_file_actions_addclosefrom_np")
        }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    /// The screen as text.
    func screen() -> String { (try? tmux(["capture-pane", "-p"])) ?? "" }

    /// Polls the screen until it shows what `predicate` wants; throws at the deadline, with the
    /// screen and ranger's log.
    @discardableResult
    func wait(_ what: String, timeout: Double = 10, _ predicate: (String) -> Bool) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        var last = ""
        while true {
            last = screen()
            if predicate(last) { return last }
            if Date() > deadline { break }
            usleep(50_000)
        }
        let logText = (try? String(contentsOfFile: log, encoding: .utf8)) ?? "(no log)"
        throw HarnessError(description: "the screen never showed \(what) within \(timeout)s:\n\(last)\n--- ranger log ---\n\(logText.suffix(3000))")
    }

    func wait(for text: String, timeout: Double = 10) throws {
        try wait("\"\(text)\"", timeout: timeout) { $0.contains(text) }
    }

    /// Types literal keys (no Enter).
    func keys(_ text: String) throws { try tmux(["send-keys", "-l", text]) }

    /// Runs a ranger command: `:`, the text, Enter.
    func command(_ text: String) throws {
        try keys(":" + text)
        try tmux(["send-keys", "Enter"])
    }

    func kill() {
        guard !killed else { return }
        killed = true
        _ = try? tmux(["kill-server"])
    }

    deinit { kill() }
}

@Suite(.enabled(if: RangerScreen.available, "needs ranger and tmux"), .serialized)
struct RangerTests {
    /// A provider connection that claims the root and defines a menu item and a toolbar item.
    func engine(_ d: DaemonHarness, root: String) throws -> Connection {
        let e = try d.connect(role: "provider", name: "ranger-test-engine")
        _ = try e.request("CLAIM", [.path(Array(root.utf8))])
        _ = try e.request("DEFINE-MENU", [.word("items"), .word("sync.now"), .option("title", "Sync now")])
        _ = try e.request("DEFINE-MENU", [.word("toolbar"), .word("sync.pause"), .option("title", "Pause syncing")])
        _ = try e.request("DEFINE-TOOLBAR", [.option("name", "Engine"), .option("tooltip", "Pause or resume")])
        return e
    }

    func set(_ c: Connection, _ state: String, _ path: [UInt8]) throws {
        _ = try c.request("SET", [.word(state), .path(path)], timeout: 15)
    }

    @Test func badgesPushesMenusActionsAndRestarts() throws {
        let d = try DaemonHarness()
        // A name that is not UTF-8: the plugin must send and match its bytes exactly.
        let oddName: [UInt8] = Array("caf".utf8) + [0xFF, UInt8(ascii: "e")]
        try FileManager.default.createDirectory(atPath: d.temp.sub("root"), withIntermediateDirectories: true)
        try createFile(dir: d.temp.sub("root"), name: oddName)
        let root = try d.addRoot(files: ["a.txt", "b.txt", "two words"])
        let oddPath = Array(root.utf8) + [UInt8(ascii: "/")] + oddName

        defer { withExtendedLifetime(d) {} }
        let ranger = try RangerScreen(temp: d.temp, socket: d.socket, directory: root)
        defer { ranger.kill() }

        // Every entry shows the unknown badge, the state in the info column.
        try ranger.wait("every entry unknown") { s in
            ["? a.txt", "? b.txt", "? two words", "? caf"].allSatisfy(s.contains) && s.contains("unknown")
        }

        // A provider's SET redraws the screen with no key pressed (ranger's idle tick is 25 s).
        var e = try engine(d, root: root)
        try set(e, "synced", Array("\(root)/a.txt".utf8))
        try ranger.wait(for: "✓ a.txt")
        try set(e, "error", oddPath)
        try ranger.wait(for: "✗ caf")
        try set(e, "syncing", Array("\(root)/two words".utf8))
        try ranger.wait(for: "⟳ two words")

        // The menu of the selection (a.txt, under the cursor): the engine's item, then the built-ins.
        try ranger.command("sync_menu")
        try ranger.wait("the menu") { s in
            s.contains("sync.now  Sync now") && s.contains("syncbadge.ignore  Ignore")
                && s.contains("syncbadge.details  Show details")
        }
        try ranger.command("sync_action syncbadge.details")
        try ranger.wait(for: "state=synced")
        try ranger.command("sync_action sync.now")
        let action = try e.waitForPush(timeout: 10, "* ACTION sync.now") { $0.kind == "ACTION" }
        #expect(action.fields.map(\.string) == ["sync.now", "\(root)/a.txt"])
        #expect(action.option("target") == root)
        #expect(action.option("from") == "ranger")

        // The toolbar: the engine's item and its toolbar menu; one item triggered on the directory.
        try ranger.command("sync_toolbar")
        try ranger.wait("the toolbar") { s in s.contains("Engine: Pause or resume") && s.contains("sync.pause  Pause syncing") }
        try ranger.command("sync_toolbar sync.pause")
        let pause = try e.waitForPush(timeout: 10, "* ACTION sync.pause") { $0.kind == "ACTION" }
        #expect(pause.fields.map(\.string) == ["sync.pause"])
        #expect(pause.option("target") == root)

        // Ignore the next file (b.txt): the daemon edits the ignore file, the push shows ⊘.
        try ranger.keys("j")
        try ranger.command("sync_action syncbadge.ignore")
        try ranger.wait(for: "⊘ b.txt")
        #expect(try String(contentsOfFile: root + "/.syncbadgeignore", encoding: .utf8) == "/b.txt\n")

        // The ASCII linemode.
        try ranger.command("linemode syncbadge_ascii")
        try ranger.wait("ASCII badges") { s in s.contains("= a.txt") && s.contains("- b.txt") && s.contains("! caf") }
        try ranger.command("linemode syncbadge")
        try ranger.wait(for: "✓ a.txt")

        // The daemon restarts: the plugin reconnects and observes again without a key press.
        try d.restart()
        e = try d.connect(role: "provider", name: "ranger-test-engine-2")
        try set(e, "conflict", Array("\(root)/two words".utf8))
        try ranger.wait(for: "⇄ two words", timeout: 15)
        try set(e, "synced", oddPath)
        try ranger.wait("every badge after the restart") { s in
            s.contains("✓ a.txt") && s.contains("⊘ b.txt") && s.contains("✓ caf") && s.contains("⇄ two words")
        }
    }

    @Test func outsideEveryRootThereAreNoBadgesAndCommandsSaySo() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["inside.txt"])
        let outside = d.temp.sub("elsewhere")
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        try touchFile(outside + "/plain.txt", "x")
        defer { withExtendedLifetime(d) {} }
        let ranger = try RangerScreen(temp: d.temp, socket: d.socket, directory: outside)
        defer { ranger.kill() }
        try ranger.wait(for: "plain.txt")
        try ranger.command("sync_menu")
        try ranger.wait(for: "not in a synced folder")
        #expect(!ranger.screen().contains("? plain.txt"))
        // Into the root: badges appear.
        try ranger.command("cd \(root)")
        try ranger.wait(for: "? inside.txt")
        // Through a symbolic link to it: the same badges; requests name the real paths.
        let link = d.temp.sub("link-to-root")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: root)
        try ranger.command("cd \(outside)")
        try ranger.wait("plain.txt, no badge") { s in s.contains("plain.txt") && !s.contains("? plain.txt") }
        try ranger.command("cd \(link)")
        try ranger.wait(for: "? inside.txt")
        try ranger.command("sync_action syncbadge.details")
        try ranger.wait(for: "state=unknown")
        // The folder becomes a root while ranger shows it: its badges appear.
        try ranger.command("cd \(outside)")
        try ranger.wait("plain.txt without a badge") { s in s.contains("plain.txt") && !s.contains("? plain.txt") }
        let admin = try d.connect(role: "admin")
        _ = try admin.request("ADD-ROOT", [.path(Array(outside.utf8))], timeout: 60)
        try ranger.wait(for: "? plain.txt")
    }
}

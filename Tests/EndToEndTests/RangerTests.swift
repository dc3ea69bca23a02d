#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@_spi(Wire) import SyncBadgeClient
import SyncBadgeCore

/// The ranger plugin `Examples/ranger/syncbadge.py`, end to end: the real daemon, a real ranger
/// in a tmux server of the test's own (Support/Tmux.swift), a temporary HOME and config directory
/// holding `rc.conf` and `plugins/syncbadge.py`.
final class RangerScreen {
    static let plugin = Products.repository.appendingPathComponent("Examples/ranger/syncbadge.py").path

    /// ranger and tmux on the PATH.
    static var available: Bool { toolsOnPath(["ranger", "tmux"]) }

    let screen: TmuxScreen

    /// Starts ranger in `directory`, talking to the daemon on `socket`.
    /// `idle_delay` is ranger's longest wait for a key (25.5 s at most): set this high, a badge
    /// that changes within the test's deadline was redrawn by the plugin, not by ranger's idle tick.
    init(temp: TempDir, socket: String, directory: String) throws {
        let home = temp.sub("ranger-home")
        let config = temp.sub("ranger-config")
        let log = temp.sub("ranger.log")
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
        ].map(TmuxScreen.quote).joined(separator: " ")
        // If ranger dies, its last words stay on the screen for the failure message.
        let command = "env \(env) ranger --logfile=\(TmuxScreen.quote(log)) \(TmuxScreen.quote(directory)); echo \"ranger exited: $?\"; sleep 600"
        var tmuxEnv = ProcessInfo.processInfo.environment
        tmuxEnv["LANG"] = "C.UTF-8"
        tmuxEnv["LC_ALL"] = "C.UTF-8"
        screen = try TmuxScreen(temp: temp, name: "ranger", environment: tmuxEnv, command: command, width: 150, height: 40)
        screen.diagnostics = {
            "ranger log:\n" + ((try? String(contentsOfFile: log, encoding: .utf8)).map { String($0.suffix(3000)) } ?? "(no log)")
        }
    }

    /// The screen as text.
    func text() -> String { screen.text() }

    /// Waits until the screen, as one text, satisfies `predicate`.
    func wait(_ what: String, timeout: Double = 10, _ predicate: (String) -> Bool) throws {
        try screen.wait(what, timeout: timeout) { predicate($0.joined(separator: "\n")) }
    }

    func wait(for text: String, timeout: Double = 10) throws { try screen.wait(for: text, timeout: timeout) }

    /// Types literal keys (no Enter).
    func keys(_ text: String) throws { try screen.type(text) }

    /// Runs a ranger command: `:`, the text, Enter.
    func command(_ text: String) throws { try screen.type(":" + text, enter: true) }

    func kill() { screen.kill() }
}

@Suite(.enabled(if: RangerScreen.available, "needs ranger and tmux"), .serialized)
struct RangerTests {
    /// A provider connection that claims the root and defines a menu item and a toolbar item.
    func engine(_ d: DaemonHarness, root: String) throws -> Connection {
        let e = try d.connect(role: .provider, name: "ranger-test-engine")
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
        e = try d.connect(role: .provider, name: "ranger-test-engine-2")
        try set(e, "conflict", Array("\(root)/two words".utf8))
        try ranger.wait(for: "⇄ two words", timeout: 15)
        try set(e, "synced", oddPath)
        try ranger.wait("every badge after the restart") { s in
            s.contains("✓ a.txt") && s.contains("⊘ b.txt") && s.contains("✓ caf") && s.contains("⇄ two words")
        }
    }

    /// Protocol 1.2: an engine's action asked with `reply=1` shows the engine's answer (or its
    /// failure) on ranger's message line; `:sync_toolbar` follows the `* TOOLBAR` pushes.
    @Test func theEnginesAnswerOnTheMessageLineAndTheToolbarFollowsPushes() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a.txt"])
        defer { withExtendedLifetime(d) {} }
        let e = try engine(d, root: root)
        let ranger = try RangerScreen(temp: d.temp, socket: d.socket, directory: root)
        defer { ranger.kill() }
        try ranger.wait(for: "? a.txt")

        // Answered: what the engine says, on the message line.
        try ranger.command("sync_action sync.now")
        try ranger.wait(for: "syncbadge: sync.now: asking the engine")
        let action = try e.waitForPush(timeout: 10, "* ACTION sync.now") { $0.kind == "ACTION" }
        #expect(action.fields.map(\.string) == ["sync.now", "\(root)/a.txt"])
        let token = try #require(action.option("reply"), "the plugin asked for no answer")
        _ = try e.request("ANSWER", [.word(token), .option("message", "copied 1 file")])
        try ranger.wait(for: "syncbadge: sync.now: copied 1 file")

        // Failed: the engine's message, as an error.
        try ranger.command("sync_action sync.now")
        let failed = try e.waitForPush(timeout: 10, "* ACTION sync.now") { $0.kind == "ACTION" }
        let failedToken = try #require(failed.option("reply"))
        _ = try e.request("ANSWER", [.word(failedToken), .option("message", "disk full"), .option("failed", "1")])
        try ranger.wait(for: "syncbadge: sync.now: failed: disk full")

        // Meanwhile ranger's own connection was never held: a SET shows at once while an
        // action waits for its answer.
        try ranger.command("sync_action sync.now")
        let waiting = try e.waitForPush(timeout: 10, "* ACTION sync.now") { $0.kind == "ACTION" }
        try set(e, "synced", Array("\(root)/a.txt".utf8))
        try ranger.wait(for: "✓ a.txt", timeout: 5)
        _ = try e.request("ANSWER", [.word(try #require(waiting.option("reply"))), .option("message", "third")])
        try ranger.wait(for: "syncbadge: sync.now: third")

        // The toolbar item, renamed by the engine while ranger runs: ranger never asks TOOLBAR
        // again, the push alone brings the new name.
        try ranger.command("sync_toolbar")
        try ranger.wait(for: "Engine: Pause or resume")
        _ = try e.request("DEFINE-TOOLBAR", [.option("name", "Resume all"), .option("tooltip", "Resume syncing")])
        try ranger.command("sync_toolbar")
        try ranger.wait(for: "Resume all: Resume syncing")
        _ = try e.request("UNCLAIM", [.path(Array(root.utf8))])
        try ranger.command("sync_toolbar")
        try ranger.wait("the toolbar item gone") { s in s.contains("sync toolbar: (none)") }
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
        #expect(!ranger.text().contains("? plain.txt"))
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
        let admin = try d.connect(role: .admin)
        _ = try admin.request("ADD-ROOT", [.path(Array(outside.utf8))], timeout: 60)
        try ranger.wait(for: "? plain.txt")
    }
}

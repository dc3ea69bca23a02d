#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@_spi(Wire) import SyncBadgeClient
import SyncBadgeCore

/// Protocol 1.2 against the real daemon and CLI: engines answer actions, leases, the restart
/// hold, UNCLAIM, the toolbar pushes and `syncbadge wait`. At least one test of each time uses
/// the contract's own (10 s for an answer, 30 s for the hold); the others shorten it.
@Suite struct Protocol12Tests {
    static let shortTimes = ["--answer-timeout", "1", "--restart-hold", "2"]

    func claimed(_ d: DaemonHarness, _ root: String, name: String = "engine") throws -> Connection {
        let e = try d.connect(role: .provider, name: name)
        _ = try e.request("CLAIM", [.path(Array(root.utf8))])
        _ = try e.request("DEFINE-MENU", [.word("items"), .word("sync.now"), .option("title", "Sync now")])
        return e
    }

    /// The `* ACTION` an engine receives, and its reply token.
    func nextAction(_ e: Connection) throws -> (WireMessage, String?) {
        let m = try e.waitForPush { $0.kind == "ACTION" }
        return (m, m.option("reply"))
    }

    func stat(_ c: Connection, _ key: String) throws -> Int {
        let r = try c.request("STATS")
        return r.data.first { $0.fields.first?.string == key }.flatMap { Int($0.fields[1].string) } ?? -1
    }

    /// Waits until the daemon counts `n` observations (a `syncbadge wait` has subscribed).
    func waitForObservations(_ c: Connection, atLeast n: Int, timeout: Double = 20) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while try stat(c, "observations") < n {
            guard Date() < deadline else { throw HarnessError(description: "no observation after \(timeout) s") }
            // Nothing to block on here: the count is the observable thing, asked again.
            usleep(20_000)
        }
    }

    @Test func helloAnnouncesTheCapabilitiesOf12() throws {
        let d = try DaemonHarness()
        let c = try d.connect()
        for cap in ["action-reply", "lease", "unclaim", "toolbar-push"] { #expect(c.capabilities.contains(cap)) }
        #expect(try stat(c, "commits-done") >= 0)
    }

    @Test func theCLIPrintsTheEnginesAnswerAndItsFailure() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a"])
        let e = try claimed(d, root)
        let ok = BackgroundCLI(["action", "sync.now", root + "/a", "--socket", d.socket])
        let (push, token) = try nextAction(e)
        #expect(push.fields.first?.string == "sync.now")
        #expect(push.option("from") == "syncbadge-cli")
        _ = try e.request("ANSWER", [.word(token!), .option("message", "queued for upload")])
        let r = ok.finish()
        #expect(r?.status == 0 && r?.out == "queued for upload\n", "\(String(describing: r))")

        let failing = BackgroundCLI(["action", "sync.now", root + "/a", "--socket", d.socket, "--json"])
        let (_, token2) = try nextAction(e)
        _ = try e.request("ANSWER", [.word(token2!), .word("failed=1"), .option("message", "the remote is full")])
        let f = failing.finish()
        #expect(f?.status == 1 && f?.out == "{\"ok\":false,\"error\":\"failed\",\"message\":\"the remote is full\"}\n", "\(String(describing: f))")
        // An answer twice, or to a token it does not hold, is not found.
        #expect(throws: ClientError.self) { try e.request("ANSWER", [.word(token!)]) }
    }

    @Test func noAnswerIsATimeoutExit75() throws {
        let d = try DaemonHarness(arguments: Self.shortTimes)
        let root = try d.addRoot(files: ["a"])
        let e = try claimed(d, root)
        let cli = BackgroundCLI(["action", "sync.now", root + "/a", "--socket", d.socket])
        _ = try nextAction(e)
        let r = cli.finish()
        #expect(r?.status == 75 && r?.err.contains("did not answer") == true, "\(String(describing: r))")
    }

    /// The contract's own 10 seconds, on the wire; and the connection's later requests wait
    /// behind the action while its pushes do not.
    @Test func theDefaultAnswerDeadlineIsTenSeconds() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a"])
        let e = try claimed(d, root)
        let v = try d.connect()
        _ = try v.request("OBSERVE", [.path(Array(root.utf8))])
        let start = Date()
        let action = try v.send("ACTION", [.word("sync.now"), .path(Array((root + "/a").utf8)), .word("reply=1")])
        let ping = try v.send("PING")
        _ = try nextAction(e)
        _ = try e.request("SET", [.word("syncing"), .path(Array((root + "/a").utf8))])
        // The push arrives while the ACTION waits, and another connection is not held up.
        _ = try v.waitForPush { $0.kind == "ITEM" && $0.fields[1].string == "syncing" }
        let other = try d.connect()
        _ = try other.request("PING", timeout: 2)
        #expect(Date().timeIntervalSince(start) < 9)
        do {
            _ = try v.reply(to: action, timeout: 20)
            Issue.record("the action was answered")
        } catch ClientError.server(let code, _) {
            #expect(code == "timeout")
        }
        let waited = Date().timeIntervalSince(start)
        #expect(waited >= 9.9 && waited < 15, "waited \(waited) s")
        _ = try v.reply(to: ping, timeout: 5)
    }

    @Test func anEngineThatLeavesBeforeAnsweringIsNoProvider() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a"])
        var e: Connection? = try claimed(d, root)
        let v = try d.connect()
        let action = try v.send("ACTION", [.word("sync.now"), .path(Array((root + "/a").utf8)), .word("reply=1")])
        _ = try nextAction(e!)
        // The engine's connection closes.
        e = nil
        do {
            _ = try v.reply(to: action, timeout: 10)
            Issue.record("the action was answered")
        } catch ClientError.server(let code, _) {
            #expect(code == "no-provider")
        }
    }

    @Test func aLeaseOutlivesTheCLIAndRunsOut() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a", "b"])
        let v = try d.connect()
        _ = try v.request("OBSERVE", [.path(Array(root.utf8))])
        // The CLI's connection ends at once; its lease holds the syncing.
        let set = try runCLI(["set", "syncing", root + "/a", "--lease", "2", "--progress", "30", "--socket", d.socket])
        #expect(set.status == 0, "\(set)")
        #expect(try v.status(root + "/a").state == .syncing)
        let released = try v.waitForPush(timeout: 10) { $0.kind == "ITEM" && $0.path == root + "/a" && $0.fields[1].string == "pending" }
        #expect(released.option("message")?.contains("lease") == true)
        #expect(released.option("progress") == nil && released.option("badge") == "pending")
        // A later SET ends a lease: b's syncing, set again without one on a connection that
        // stays open, outlives the 2 seconds of its first lease. a's lease, set after b's and
        // longer, runs out after b's would have.
        _ = try runCLI(["set", "syncing", root + "/b", "--lease", "2", "--socket", d.socket])
        let e = try d.connect(role: .provider)
        _ = try e.request("SET", [.word("syncing"), .path(Array((root + "/b").utf8))])
        _ = try e.request("SET", [.word("syncing"), .path(Array((root + "/a").utf8)), .word("lease=3")])
        _ = try v.waitForPush(timeout: 10) { $0.kind == "ITEM" && $0.path == root + "/a" && $0.fields[1].string == "pending" }
        #expect(try v.status(root + "/b").state == .syncing)
    }

    @Test func aLeaseSurvivesARestart() throws {
        let d = try DaemonHarness(arguments: Self.shortTimes)
        let root = try d.addRoot(files: ["a", "b"])
        #expect(try runCLI(["set", "syncing", root + "/a", "--lease", "5", "--socket", d.socket]).status == 0)
        let e = try d.connect(role: .provider)
        _ = try e.request("SET", [.word("syncing"), .path(Array((root + "/b").utf8))])
        try d.restart()
        let v = try d.connect()
        _ = try v.request("OBSERVE", [.path(Array(root.utf8))])
        // b, stored without a lease, goes when the 2-second hold ends; a's lease holds it on.
        let held = try v.waitForPush(timeout: 10) { $0.kind == "ITEM" && $0.path == root + "/b" && $0.fields[1].string == "pending" }
        #expect(held.option("message")?.contains("restarted") == true)
        #expect(try v.status(root + "/a").state == .syncing)
        let released = try v.waitForPush(timeout: 10) { $0.kind == "ITEM" && $0.path == root + "/a" && $0.fields[1].string == "pending" }
        #expect(released.option("message")?.contains("lease") == true)
    }

    /// The contract's 30 seconds: a `syncing` stored without a lease is held, then released.
    @Test func aSyncingLeftByADeadEngineIsReleasedThirtySecondsAfterARestart() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a"])
        let e = try d.connect(role: .provider)
        _ = try e.request("SET", [.word("syncing"), .path(Array((root + "/a").utf8)), .word("progress=50")])
        // The engine is gone while the daemon is down (its own shutdown releases nothing).
        d.stop()
        try d.start()
        let started = Date()
        let v = try d.connect()
        _ = try v.request("OBSERVE", [.path(Array(root.utf8))])
        #expect(try v.status(root + "/a").state == .syncing)
        let released = try v.waitForPush(timeout: 45) { $0.kind == "ITEM" && $0.path == root + "/a" && $0.fields[1].string == "pending" }
        let held = Date().timeIntervalSince(started)
        #expect(held >= 29 && held < 40, "held \(held) s")
        #expect(released.option("message")?.contains("restarted") == true)
        #expect(released.option("progress") == nil)
    }

    @Test func anEngineThatComesBackDuringTheHoldTakesOver() throws {
        let d = try DaemonHarness(arguments: Self.shortTimes)
        let root = try d.addRoot(files: ["a", "b"])
        let e = try d.connect(role: .provider)
        for f in ["a", "b"] { _ = try e.request("SET", [.word("syncing"), .path(Array((root + "/" + f).utf8))]) }
        try d.restart()
        let v = try d.connect()
        _ = try v.request("OBSERVE", [.path(Array(root.utf8))])
        let back = try d.connect(role: .provider)
        _ = try back.request("SET", [.word("syncing"), .path(Array((root + "/b").utf8)), .word("progress=70")])
        _ = try v.waitForPush(timeout: 10) { $0.kind == "ITEM" && $0.path == root + "/a" && $0.fields[1].string == "pending" }
        let b = try v.status(root + "/b")
        #expect(b.state == .syncing && b.progress == 70)
    }

    @Test func unclaimAndTheToolbarPushes() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a"])
        let v = try d.connect()
        let e = try d.connect(role: .provider, name: "st")
        _ = try e.request("DEFINE-TOOLBAR", [.option("name", "Pause syncing"), .option("tooltip", "Pause every folder")])
        _ = try e.request("CLAIM", [.path(Array(root.utf8))])
        let shown = try v.waitForPush { $0.kind == "TOOLBAR" }
        #expect(shown.option("name") == "Pause syncing" && shown.option("provider") == "st")
        _ = try e.request("DEFINE-TOOLBAR", [.option("name", "Resume syncing"), .option("tooltip", "Resume every folder")])
        #expect(try v.waitForPush { $0.kind == "TOOLBAR" }.option("name") == "Resume syncing")
        _ = try e.request("SET", [.word("syncing"), .path(Array((root + "/a").utf8))])
        _ = try e.request("UNCLAIM", [.path(Array(root.utf8))])
        let rootLine = try v.waitForPush { $0.kind == "ROOT" && $0.option("provider") == nil }
        #expect(rootLine.path == root)
        let removed = try v.waitForPush { $0.kind == "TOOLBAR" }
        #expect(removed.option("provider") == "st" && removed.fields.first?.string == "removed")
        #expect(try v.status(root + "/a").state == .pending)
        #expect(throws: ClientError.self) { try e.request("UNCLAIM", [.path(Array(root.utf8))]) }
        let other = try d.connect(role: .provider, name: "git")
        _ = try other.request("CLAIM", [.path(Array(root.utf8))])
    }

    // MARK: syncbadge wait

    @Test func waitReturnsOnceEverythingBelowIsSynced() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a", "sub/b"])
        let v = try d.connect()
        let before = try stat(v, "observations")
        let w = BackgroundCLI(["wait", root, "--socket", d.socket, "--timeout", "60"])
        try waitForObservations(v, atLeast: before + 1)
        let e = try d.connect(role: .provider)
        _ = try e.request("SET", [.word("synced"), .path(Array(root.utf8)), .word("recursive=1")])
        let r = w.finish()
        #expect(r?.status == 0 && r?.out == "" && r?.err == "", "\(String(describing: r))")
        // Already synced: at once.
        #expect(try runCLI(["wait", root + "/sub/b", "--socket", d.socket]).status == 0)
    }

    @Test func waitFailsWithTheMessageOfWhatIsInError() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a", "sub/b"])
        let v = try d.connect()
        let before = try stat(v, "observations")
        let w = BackgroundCLI(["wait", root, "--socket", d.socket])
        try waitForObservations(v, atLeast: before + 1)
        let e = try d.connect(role: .provider)
        // The error first: with everything else synced before it, the wait would be over.
        _ = try e.request("SET", [.word("error"), .path(Array((root + "/sub/b").utf8)), .option("message", "permission denied on the remote")])
        _ = try e.request("SET", [.word("synced"), .path(Array((root + "/a").utf8))])
        let r = w.finish()
        #expect(r?.status == 1, "\(String(describing: r))")
        #expect(r?.err.contains("\(root)/sub/b: error (permission denied on the remote)") == true, "\(String(describing: r))")
    }

    @Test func waitTimesOutWith124AndJSONShowsTheState() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a"])
        let r = try runCLI(["wait", root + "/a", "--socket", d.socket, "--timeout", "0.5"])
        #expect(r.status == 124 && r.err.contains("timed out"), "\(r)")
        let j = try runCLI(["wait", root + "/a", "--socket", d.socket, "--timeout", "0.2", "--json"])
        #expect(j.status == 124 && j.out.hasPrefix("{\"path\":\"\(root)/a\",\"state\":\"unknown\""), "\(j)")
        let outside = try runCLI(["wait", "/", "--socket", d.socket])
        #expect(outside.status == 1 && outside.err.contains("not inside any registered root"))
    }

    /// On a terminal, what is left and what is syncing, redrawn as pushes come; gone at the end.
    @Test(.enabled(if: installed("tmux") != nil, "needs tmux"))
    func waitShowsProgressOnATerminal() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a", "big.iso"])
        let cli = Products.cli.path
        let screen = try TmuxScreen(temp: d.temp, name: "wait", environment: ProcessInfo.processInfo.environment,
                                    command: "\(cli) wait \(TmuxScreen.quote(root)) --socket \(TmuxScreen.quote(d.socket)); echo exit=$?; sleep 60")
        defer { screen.kill() }
        try screen.wait(for: "waiting for 1 of 1 path; 2 unknown")
        let e = try d.connect(role: .provider)
        _ = try e.request("SET", [.word("synced"), .path(Array((root + "/a").utf8))])
        _ = try e.request("SET", [.word("syncing"), .path(Array((root + "/big.iso").utf8)), .word("progress=42")])
        try screen.wait(for: "waiting for 1 of 1 path; 1 syncing; big.iso 42%")
        _ = try e.request("SET", [.word("synced"), .path(Array(root.utf8)), .word("recursive=1")])
        try screen.wait(for: "exit=0")
        #expect(!screen.text().contains("waiting for"))
    }

    /// A deleted file's wait ends when its deletion is synced: its tombstone goes, which no
    /// push says of the file itself.
    @Test func waitForADeletionEndsWhenTheEngineSyncsIt() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a", "doomed"])
        let v = try d.connect()
        _ = try v.request("OBSERVE", [.path(Array(root.utf8))])
        try FileManager.default.removeItem(atPath: root + "/doomed")
        _ = try v.waitForPush { $0.kind == "GONE" && $0.path == root + "/doomed" }
        #expect(try v.status(root + "/doomed").kind == .gone)
        let before = try stat(v, "observations")
        let w = BackgroundCLI(["wait", root + "/doomed", "--socket", d.socket, "--timeout", "30"])
        try waitForObservations(v, atLeast: before + 1)
        let e = try d.connect(role: .provider)
        _ = try e.request("SET", [.word("synced"), .path(Array((root + "/doomed").utf8))])
        let r = w.finish()
        #expect(r?.status == 0, "\(String(describing: r))")
    }

    @Test func waitTimesOutWhileTheDaemonIsAway() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a"])
        let v = try d.connect()
        let before = try stat(v, "observations")
        let w = BackgroundCLI(["wait", root + "/a", "--socket", d.socket, "--timeout", "3"])
        try waitForObservations(v, atLeast: before + 1)
        d.stop()
        let r = w.finish(timeout: 20)
        #expect(r?.status == 124 && r?.err.contains("timed out") == true, "\(String(describing: r))")
    }

    @Test func waitReportsAConflictOnAFile() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a", "b"])
        let v = try d.connect()
        let before = try stat(v, "observations")
        let w = BackgroundCLI(["wait", root + "/a", root + "/b", "--socket", d.socket, "--json"])
        try waitForObservations(v, atLeast: before + 1)
        let e = try d.connect(role: .provider)
        _ = try e.request("SET", [.word("synced"), .path(Array((root + "/b").utf8))])
        #expect(!w.hasExited)
        _ = try e.request("SET", [.word("conflict"), .path(Array((root + "/a").utf8)), .option("message", "edited on both sides")])
        let r = w.finish()
        #expect(r?.status == 1, "\(String(describing: r))")
        #expect(r?.out.contains("\"state\":\"conflict\"") == true && r?.out.contains("edited on both sides") == true, "\(String(describing: r))")
    }
}

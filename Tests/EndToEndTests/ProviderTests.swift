#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@_spi(Wire) import SyncBadgeClient
import SyncBadgeCore

/// Sync engines against the real daemon: SET, generations, identities, the change feed,
/// durability and restarts.
@Suite struct ProviderTests {
    func set(_ c: Connection, _ state: String, _ path: String, _ options: [RequestField] = []) throws -> WireMessage {
        try c.request("SET", [.word(state), .path(Array(path.utf8))] + options).ok
    }

    @Test func aFileWrittenWhileSyncingStaysPendingAfterALateSet() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["doc.txt"])
        let engine = try d.connect(role: .provider)
        let file = root + "/doc.txt"
        let viewer = try d.connect()
        _ = try viewer.request("OBSERVE", [.path(Array(root.utf8))])
        try Data("v1".utf8).write(to: URL(fileURLWithPath: file))
        try viewer.waitForPush { $0.kind == "ITEM" && $0.path == file && $0.fields[1].string == "pending" }
        let seen = try engine.status(file)
        #expect(seen.state == .pending)
        let g = seen.gen!
        #expect(try set(engine, "syncing", file, [.word("gen=\(g)"), .word("progress=40")]).option("gen") == "\(g)")
        // The user writes during the upload; the engine's late report carries the old gen.
        try Data("v2 by the user".utf8).write(to: URL(fileURLWithPath: file))
        let late = try set(engine, "synced", file, [.word("gen=\(g)")])
        #expect(late.option("stale") == "1")
        #expect(UInt64(late.option("gen")!)! > g)
        let now = try engine.status(file)
        #expect(now.state == .pending)
        #expect(now.progress == nil)
    }

    @Test func anEnginesOwnWriteStaysSyncedAndAUserEditMakesItPending() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["f"])
        let engine = try d.connect(role: .provider)
        let watcher = try d.connect()
        _ = try watcher.request("OBSERVE", [.path(Array(root.utf8))])
        let file = root + "/f"
        // The engine downloads a new version, then reports it.
        try Data("from the server".utf8).write(to: URL(fileURLWithPath: file))
        _ = try set(engine, "synced", file)
        #expect(try engine.status(file).state == .synced)
        try watcher.waitForPush { $0.kind == "ITEM" && $0.path == file && $0.fields[1].string == "synced" }
        // An attribute change that leaves the identity alone is no change... a real edit is.
        try Data("user edit".utf8).write(to: URL(fileURLWithPath: file))
        try watcher.waitForPush { $0.kind == "ITEM" && $0.path == file && $0.fields[1].string == "pending" }
        #expect(try engine.status(file).state == .pending)
    }

    @Test func setRulesRecursionTombstonesAndErrors() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a/1", "a/2", "b"])
        let engine = try d.connect(role: .provider)
        _ = try set(engine, "synced", root, [.word("recursive=1")])
        let r = try engine.status(root)
        #expect(r.state == .synced && r.counts?[.synced] == 4)
        _ = try set(engine, "error", root + "/a/1", [.option("message", "disk quota exceeded"), .option("badge", "error")])
        let e = try engine.status(root + "/a/1")
        #expect(e.state == .error && e.message == "disk quota exceeded")
        #expect(try engine.status(root).state == .error)
        // A deletion stays a pending tombstone until the engine reports it synced.
        let watcher = try d.connect()
        _ = try watcher.request("OBSERVE", [.path(Array(root.utf8))])
        try FileManager.default.removeItem(atPath: root + "/b")
        try watcher.waitForPush { $0.kind == "GONE" && $0.path == root + "/b" }
        let tomb = try engine.status(root + "/b")
        #expect(tomb.kind == .gone && tomb.state == .pending)
        _ = try set(engine, "synced", root + "/b")
        #expect(throws: ClientError.server(code: "not-found", message: root + "/b")) { try engine.status(root + "/b") }
        #expect(throws: ClientError.server(code: "not-found", message: root + "/nope")) { try set(engine, "synced", root + "/nope") }
        #expect(throws: ClientError.server(code: "outside", message: "/etc/passwd")) { try set(engine, "synced", "/etc/passwd") }
        #expect(throws: ClientError.self) { try set(engine, "shiny", root + "/a") }
        #expect(throws: ClientError.self) { try set(engine, "syncing", root + "/a", [.word("progress=101")]) }
        let viewer = try d.connect()
        #expect(throws: ClientError.server(code: "forbidden", message: "SET is not for role viewer")) { try set(viewer, "synced", root) }
    }

    @Test func theChangeFeedReportsCreatesEditsDeletesAndMoves() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["keep", "old"])
        let engine = try d.connect(role: .provider)
        _ = try engine.request("SUBSCRIBE-CHANGES", [.path(Array(root.utf8))])
        try touchFile(root + "/new")
        var m = try engine.waitForPush { $0.kind == "CHANGED" && $0.path == root + "/new" }
        #expect(m.option("what") == "create")
        try Data("edit".utf8).write(to: URL(fileURLWithPath: root + "/keep"))
        m = try engine.waitForPush { $0.kind == "CHANGED" && $0.path == root + "/keep" }
        #expect(m.option("what") == "modify")
        try FileManager.default.moveItem(atPath: root + "/old", toPath: root + "/renamed")
        m = try engine.waitForPush { $0.kind == "CHANGED" && $0.path == root + "/renamed" }
        #expect(m.option("what") == "move" && m.option("from") == root + "/old")
        try FileManager.default.removeItem(atPath: root + "/keep")
        m = try engine.waitForPush { $0.kind == "CHANGED" && $0.path == root + "/keep" }
        #expect(m.option("what") == "delete")
        #expect(m.option("gen").flatMap(UInt64.init) == (try engine.status(root + "/keep").gen))
        // Ignored entries never appear in the feed.
        try touchFile(root + "/x.swp")
        try touchFile(root + "/marker")
        m = try engine.waitForPush { $0.kind == "CHANGED" }
        #expect(m.path == root + "/marker")
        // CHANGES lists every pending path, tombstones included.
        let pending = Set(try engine.request("CHANGES", [.path(Array(root.utf8))]).data.compactMap(Item.init).map { PathBytes.display($0.path) })
        #expect(pending == [root, root + "/new", root + "/keep", root + "/old", root + "/renamed", root + "/marker"].reduce(into: Set<String>()) { $0.insert($1) }.subtracting([root]))
        #expect(throws: ClientError.server(code: "not-found", message: root + "/new")) { try engine.request("CHANGES", [.path(Array((root + "/new").utf8))]) }
        #expect(throws: ClientError.server(code: "outside", message: "/tmp")) { try engine.request("CHANGES", [.path(Array("/tmp".utf8))]) }
    }

    @Test func claimsAreExclusiveAndGoWithTheirConnection() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot()
        let first = try d.connect(role: .provider, name: "engine-one")
        let second = try d.connect(role: .provider, name: "engine-two")
        let viewer = try d.connect()
        _ = try first.request("CLAIM", [.path(Array(root.utf8))])
        // Pushed at once, with nothing else happening (it once waited for the next event).
        try viewer.waitForPush(timeout: 5, "ROOT push for the claim") { $0.kind == "ROOT" && $0.option("provider") == "engine-one" }
        #expect(throws: ClientError.server(code: "busy", message: "claimed by engine-one")) { try second.request("CLAIM", [.path(Array(root.utf8))]) }
        #expect(try viewer.request("ROOTS").data.first?.option("provider") == "engine-one")
        _ = try first.request("BYE")
        try viewer.waitForPush { $0.kind == "ROOT" && $0.option("provider") == nil }
        _ = try second.request("CLAIM", [.path(Array(root.utf8))])
    }

    @Test func acknowledgedSetsSurviveKillNine() throws {
        let d = try DaemonHarness()
        let files = (0..<50).map { "f\($0)" }
        let root = try d.addRoot(files: files)
        let engine = try d.connect(role: .provider)
        // Pipelined: they share barriers and commits; every OK must be durable.
        var tags: [String] = []
        for f in files { tags.append(try engine.send("SET", [.word("synced"), .path(Array((root + "/" + f).utf8)), .option("message", "v1")])) }
        for t in tags { _ = try engine.reply(to: t, timeout: 30) }
        d.stop(signal: SIGKILL)
        try d.start()
        let c = try d.connect()
        for f in files {
            let i = try c.status(root + "/" + f)
            #expect(i.state == .synced && i.message == "v1", "\(f) lost its acknowledged state")
        }
    }

    @Test func pipelinedSetsShareCommits() throws {
        let d = try DaemonHarness()
        let files = (0..<1000).map { "f\($0)" }
        let root = try d.addRoot(files: files)
        let engine = try d.connect(role: .provider)
        func commits() throws -> Int {
            Int(try engine.request("STATS").data.first { $0.fields[0].string == "commits" }!.fields[1].string)!
        }
        let before = try commits()
        var batch: [UInt8] = []
        for (i, f) in files.enumerated() { batch += Array("s\(i) SET synced \(root)/\(f)\n".utf8) }
        try engine.sendRaw(batch)
        for i in files.indices { _ = try engine.reply(to: "s\(i)", timeout: 60) }
        let used = try commits() - before
        #expect(used >= 1)
        #expect(used < 100, "1,000 pipelined SETs took \(used) commits")
        #expect(try engine.status(root).counts?[.synced] == 1000)
    }

    @Test func offlineChangesAreFoundAtRestart() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["same", "edited", "deleted", "dir/inner"])
        let engine = try d.connect(role: .provider)
        _ = try set(engine, "synced", root, [.word("recursive=1")])
        let g = try engine.status(root + "/same").gen!
        d.stop()
        // While the daemon is down.
        try Data("offline edit, longer".utf8).write(to: URL(fileURLWithPath: root + "/edited"))
        try FileManager.default.removeItem(atPath: root + "/deleted")
        try touchFile(root + "/added")
        try d.start()
        let c = try d.connect(role: .provider)
        if try c.request("ROOTS").data.first?.option("scanning") == "1" {
            try c.waitForPush { $0.kind == "ROOT" && $0.option("scanning") == nil }
        }
        #expect(try c.status(root + "/same").state == .synced)
        #expect(try c.status(root + "/same").gen == g)
        #expect(try c.status(root + "/dir/inner").state == .synced)
        #expect(try c.status(root + "/edited").state == .pending)
        let tomb = try c.status(root + "/deleted")
        #expect(tomb.state == .pending && tomb.kind == .gone)
        #expect(try c.status(root + "/added").state == .pending)
        // CHANGES lists exactly the pending paths and tombstones.
        let pending = Set(try c.request("CHANGES", [.path(Array(root.utf8))]).data.compactMap(Item.init).map { PathBytes.display($0.path) })
        #expect(pending == Set([root + "/edited", root + "/deleted", root + "/added"]))
        // Generations keep growing across restarts.
        #expect(try c.status(root + "/added").gen! > g)
    }

    @Test func theCLIDrivesAShellEngine() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["one", "two words"])
        let viewer = try d.connect()
        _ = try viewer.request("OBSERVE", [.path(Array(root.utf8))])
        try Data("x".utf8).write(to: URL(fileURLWithPath: root + "/one"))
        try viewer.waitForPush { $0.kind == "ITEM" && $0.path == root + "/one" }
        let list = try runCLI(["changes", root, "-z", "--socket", d.socket])
        #expect(list.status == 0)
        #expect(list.out == root + "/one\0")
        let set = try runCLI(["set", "syncing", root + "/one", root + "/two words", "--progress", "30", "--message", "uploading", "--socket", d.socket])
        #expect(set.status == 0, "\(set.err)")
        let syncing = try viewer.waitForPush { $0.kind == "ITEM" && $0.path == root + "/one" && $0.fields[1].string == "syncing" }
        #expect(syncing.option("progress") == "30" && syncing.option("message") == "uploading")
        // The CLI's connection closed with it, but its `syncing` holds a lease (15 minutes by
        // default, protocol 1.2), so it outlives the command...
        #expect(try viewer.status(root + "/one").state == .syncing)
        // ...until a later report, here one with a lease of a second, runs out.
        #expect(try runCLI(["set", "syncing", root + "/one", "--lease", "1", "--socket", d.socket]).status == 0)
        try viewer.waitForPush { $0.kind == "ITEM" && $0.path == root + "/one" && $0.fields[1].string == "pending" }
        let status = try runCLI(["status", root + "/one", "--socket", d.socket])
        #expect(status.out.contains("pending") && status.out.contains("lease ran out"))
        let stale = try runCLI(["set", "synced", root + "/one", "--gen", "1", "--socket", d.socket])
        #expect(stale.status == 2 && stale.err.contains("stale"))
        #expect(try runCLI(["set", "bogus", root, "--socket", d.socket]).status == 64)
    }
}

/// The shell engine of docs/PROTOCOL.md's walk-through, driven against the real daemon.
@Suite struct ShellEngineTests {
    @Test func theShellMirrorSyncsAndFollows() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a.txt", "docs/b.txt"])
        let dest = d.temp.sub("mirror")
        let viewer = try d.connect()
        _ = try viewer.request("OBSERVE", [.path(Array(root.utf8))])
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/bash")
        p.arguments = [Products.repository.appendingPathComponent("Examples/providers/shell-mirror.sh").path, root, dest]
        var env = ProcessInfo.processInfo.environment
        env["PATH"] = Products.directory.path + ":" + (env["PATH"] ?? "/usr/bin:/bin")
        env["SYNCBADGE_SOCKET"] = d.socket
        p.environment = env
        try p.run()
        defer {
            // The engine and everything it started (its feed outlives daemon restarts by design).
            let reaper = Process()
            reaper.executableURL = URL(fileURLWithPath: "/usr/bin/pkill")
            reaper.arguments = ["-9", "-f", root]
            try? reaper.run()
            reaper.waitUntilExit()
            p.waitUntilExit()
        }
        // The initial copy reports everything synced.
        try viewer.waitForPush("root synced") { $0.kind == "ITEM" && $0.path == root + "/docs" && $0.fields[1].string == "synced" }
        #expect(try String(contentsOfFile: dest + "/docs/b.txt", encoding: .utf8) == "x")
        // A new file flows through the change feed: pending, then synced, with its content mirrored.
        try touchFile(root + "/new file.txt", "hello")
        try viewer.waitForPush("new file synced") { $0.kind == "ITEM" && $0.path == root + "/new file.txt" && $0.fields[1].string == "synced" }
        #expect(try String(contentsOfFile: dest + "/new file.txt", encoding: .utf8) == "hello")
        // A deletion: the tombstone goes once the mirror lost the file too.
        try FileManager.default.removeItem(atPath: root + "/a.txt")
        try viewer.waitForPush { $0.kind == "GONE" && $0.path == root + "/a.txt" }
        try viewer.waitForPush("root synced after delete") { $0.kind == "ITEM" && $0.path == root && $0.fields[1].string == "synced" && $0.option("counts")?.contains("pending") == false }
        #expect(!FileManager.default.fileExists(atPath: dest + "/a.txt"))
        #expect(throws: ClientError.self) { try viewer.status(root + "/a.txt") }
    }
}

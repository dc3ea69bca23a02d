#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@_spi(Wire) import SyncBadgeClient
import SyncBadgeCore

/// The wire contract against the real daemon.
@Suite struct ProtocolTests {
    @Test func helloIsRequiredFirstAndOnlyOnce() throws {
        let d = try DaemonHarness()
        let c = try Connection(socketPath: d.socket)
        #expect(throws: ClientError.server(code: "hello-required", message: nil)) { try c.request("PING") }
        #expect(throws: ClientError.server(code: "unsupported-version", message: nil)) {
            try c.request("HELLO", [.word("proto=2"), .word("role=viewer")])
        }
        #expect(throws: ClientError.server(code: "unsupported-version", message: nil)) { try c.request("HELLO", [.word("role=viewer")]) }
        #expect(throws: ClientError.self) { try c.request("HELLO", [.word("proto=1"), .word("role=king")]) }
        let ok = try c.request("HELLO", [.word("proto=1"), .word("role=viewer"), .word("name=t")]).ok
        #expect(ok.option("proto") == "1")
        #expect(ok.option("server") == "syncbadge/0.1.0")
        #expect(ok.option("epoch")?.count == 8)
        #expect(throws: ClientError.self) { try c.request("HELLO", [.word("proto=1"), .word("role=viewer")]) }
        _ = try c.request("PING")
    }

    @Test func rolesAreEnforced() throws {
        let d = try DaemonHarness()
        let root = d.temp.sub("r")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let viewer = try d.connect(role: .viewer)
        #expect(throws: ClientError.server(code: "forbidden", message: "ADD-ROOT is not for role viewer")) {
            try viewer.request("ADD-ROOT", [.path(Array(root.utf8))])
        }
        #expect(throws: ClientError.server(code: "unknown-verb", message: nil)) { try viewer.request("FROB") }
        let provider = try d.connect(role: .provider)
        #expect(throws: ClientError.self) { try provider.request("REMOVE-ROOT", [.path(Array(root.utf8))]) }
        let admin = try d.connect(role: .admin)
        _ = try admin.request("ADD-ROOT", [.path(Array(root.utf8))])
        #expect(throws: ClientError.server(code: "forbidden", message: "SET is not for role admin")) {
            try admin.request("SET", [.word("synced"), .path(Array(root.utf8))])
        }
    }

    @Test func badInputGetsTheRightErrors() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a.txt", "sub/b.txt"])
        let c = try d.connect()
        for bad in ["relative", "/a/../b", "/a//b", "/a/", "/a/./b"] {
            #expect(throws: ClientError.server(code: "bad-path", message: bad)) { try c.request("STATUS", [.word(bad)]) }
        }
        #expect(throws: ClientError.server(code: "not-found", message: root + "/nope")) { try c.request("STATUS", [.path(Array((root + "/nope").utf8))]) }
        #expect(throws: ClientError.server(code: "not-a-directory", message: root + "/a.txt")) { try c.list(root + "/a.txt") }
        #expect(throws: ClientError.server(code: "outside", message: "/etc")) { try c.list("/etc") }
        #expect(throws: ClientError.server(code: "not-found", message: root)) { try c.request("UNOBSERVE", [.path(Array(root.utf8))]) }
        // Malformed lines: an empty field, a bad escape.
        try c.sendRaw(Array("7 STATUS  /x\n8 STATUS /a%zz\n9 PING\n".utf8))
        #expect(throws: ClientError.server(code: "bad-request", message: nil)) { try c.reply(to: "7") }
        #expect(throws: ClientError.server(code: "bad-request", message: nil)) { try c.reply(to: "8") }
        _ = try c.reply(to: "9")
        // Outside every root, STATUS reports by lstat.
        let outside = try c.status("/etc")
        #expect(outside.state == nil && outside.kind == .dir && outside.badge == "outside" && outside.gen == nil)
        // A line without a valid tag ends the connection with BYE bad-request.
        try c.sendRaw(Array("not/a/tag PING\n".utf8))
        let bye = try c.waitForPush { $0.kind == "BYE" }
        #expect(bye.fields.first?.string == "bad-request")
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a", "b"])
        let c = try d.connect()
        var batch: [UInt8] = []
        for i in 0..<1000 {
            let verb = i % 3 == 0 ? "PING" : (i % 3 == 1 ? "STATUS \(root)/a" : "LIST \(root)")
            batch += Array("t\(i) \(verb)\n".utf8)
        }
        try c.sendRaw(batch)
        for i in 0..<1000 {
            let r = try c.reply(to: "t\(i)", timeout: 30)
            if i % 3 == 2 { #expect(r.ok.option("count") == "2") }
        }
    }

    @Test func anOverlongLineClosesOnlyThatConnection() throws {
        let d = try DaemonHarness()
        let bystander = try d.connect()
        let c = try d.connect()
        // Exactly at the limit is fine.
        let atLimit = "1 PING " + String(repeating: "a", count: 65_536 - 7)
        try c.sendRaw(Array((atLimit + "\n").utf8))
        _ = try c.reply(to: "1")  // PING ignores the extra field: the line was read whole
        try c.sendRaw(Array(String(repeating: "x", count: 70_000).utf8))
        let bye = try c.waitForPush { $0.kind == "BYE" }
        #expect(bye.fields.first?.string == "too-long")
        #expect(throws: ClientError.self) { try c.readLine(timeout: 10) }
        _ = try bystander.request("PING")
    }

    @Test func onlyTheObserverGetsPushes() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a"])
        let watcher = try d.connect()
        let other = try d.connect()
        let listing = try watcher.request("OBSERVE", [.path(Array(root.utf8))])
        #expect(listing.ok.option("count") == "1")
        _ = try other.list(root)
        try touchFile(root + "/new", "n")
        let push = try watcher.waitForPush { $0.kind == "ITEM" && $0.path == root + "/new" }
        #expect(push.fields[1].string == "pending")
        // The bystander got no ITEM (only the `* ROOT` every client gets); a PING round trip
        // proves everything sent before it has arrived.
        _ = try other.request("PING")
        while let m = try other.nextPush(timeout: 0) { #expect(m.kind == "ROOT") }
        // Observing twice needs two UNOBSERVEs; the push comes once.
        _ = try watcher.request("OBSERVE", [.path(Array(root.utf8))])
        _ = try watcher.request("UNOBSERVE", [.path(Array(root.utf8))])
        try FileManager.default.removeItem(atPath: root + "/new")
        try watcher.waitForPush { $0.kind == "GONE" && $0.path == root + "/new" }
        _ = try watcher.request("UNOBSERVE", [.path(Array(root.utf8))])
        #expect(throws: ClientError.self) { try watcher.request("UNOBSERVE", [.path(Array(root.utf8))]) }
    }

    @Test func sigtermSaysByeAndExitsZero() throws {
        let d = try DaemonHarness()
        let c = try d.connect()
        let status = d.stop(signal: SIGTERM)
        let bye = try c.waitForPush { $0.kind == "BYE" }
        #expect(bye.fields.first?.string == "shutdown")
        #expect(status == 0)
    }

    @Test func rootsSurviveARestart() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a", "d/b"])
        let firstEpoch = try d.connect().epoch
        try d.restart()
        let c = try d.connect()
        #expect(c.epoch != firstEpoch)
        let roots = try c.request("ROOTS").data
        #expect(roots.count == 1 && roots[0].path == root)
        // The rescan at start is done once ROOTS stops saying scanning=1; wait for that push if needed.
        if roots[0].option("scanning") == "1" {
            try c.waitForPush { $0.kind == "ROOT" && $0.option("scanning") == nil }
        }
        #expect(try c.list(root).map { PathBytes.display($0.name) } == ["a", "d"])
    }

    @Test func addRootRulesAndRemoval() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["x/y"])
        let admin = try d.connect(role: .admin)
        // Same root again: OK, nothing changes. Nested or enclosing: busy.
        _ = try admin.request("ADD-ROOT", [.path(Array(root.utf8))])
        #expect(throws: ClientError.self) { try admin.request("ADD-ROOT", [.path(Array((root + "/x").utf8))]) }
        #expect(throws: ClientError.self) { try admin.request("ADD-ROOT", [.path(Array(d.temp.path.utf8))]) }
        #expect(throws: ClientError.server(code: "not-found", message: d.temp.sub("missing") + ": no such directory")) {
            try admin.request("ADD-ROOT", [.path(Array(d.temp.sub("missing").utf8))])
        }
        try FileManager.default.createSymbolicLink(atPath: d.temp.sub("link"), withDestinationPath: root)
        #expect(throws: ClientError.server(code: "not-a-directory", message: d.temp.sub("link") + ": not a directory")) {
            try admin.request("ADD-ROOT", [.path(Array(d.temp.sub("link").utf8))])
        }
        let viewer = try d.connect()
        _ = try admin.request("REMOVE-ROOT", [.path(Array(root.utf8))])
        let removed = try viewer.waitForPush { $0.kind == "ROOT" }
        #expect(removed.path == root && removed.fields[1].string == "removed")
        #expect(try viewer.request("ROOTS").data.isEmpty)
        #expect(throws: ClientError.self) { try admin.request("REMOVE-ROOT", [.path(Array(root.utf8))]) }
    }

    @Test func statsAndBadges() throws {
        let d = try DaemonHarness()
        _ = try d.addRoot(files: ["a", "b", "c/d"])
        let c = try d.connect()
        var stats: [String: Int] = [:]
        for m in try c.request("STATS").data { stats[m.fields[0].string] = Int(m.fields[1].string) }
        #expect(stats["roots"] == 1)
        #expect(stats["items"] == 5)  // root, a, b, c, c/d
        #expect(stats["watches"] == 2)
        #expect(stats["clients"]! >= 1)
        #expect(stats["rss-bytes"]! > 1_000_000)
        #expect(stats["events"] != nil)
        let badges = try c.request("BADGES").data
        let ids = Set(badges.compactMap { $0.fields.first?.string })
        #expect(ids.isSuperset(of: ["unknown", "pending", "syncing", "synced", "error", "conflict", "ignored", "outside"]))
        for b in badges {
            let image = try #require(b.options["image"])
            #expect(FileManager.default.fileExists(atPath: String(decoding: image, as: UTF8.self)))
        }
    }
}

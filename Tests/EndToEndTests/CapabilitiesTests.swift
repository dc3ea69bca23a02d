#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@_spi(Wire) import SyncBadgeClient
import SyncBadgeCore

/// Protocol 1.1 (PROTOCOL.md, "Capabilities of version 1.1") against the real daemon.
@Suite struct CapabilitiesTests {
    func hello(_ d: DaemonHarness, role: String, name: String, _ extra: [RequestField] = []) throws -> Connection {
        let c = try Connection(socketPath: d.socket)
        _ = try c.request("HELLO", [.word("proto=1"), .option("role", role), .option("name", name)] + extra)
        return c
    }

    /// Every push already sent to `c` arrives before the answer to a PING sent now: none left
    /// after it means none came.
    func noPushes(_ c: Connection) throws -> Bool {
        _ = try c.request("PING")
        return try c.nextPush(timeout: 0) == nil
    }

    @Test func everyCapabilityIsAnnounced() throws {
        let d = try DaemonHarness()
        let c = try d.connect()
        #expect(Set(c.capabilities).isSuperset(of: ["observe", "menus", "changes", "observe-nolist", "roots-optout", "badge-push", "provider-address"]))
    }

    @Test func observeWithoutTheListing() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a", "b", "sub/c"])
        let c = try d.connect()
        let r = try c.request("OBSERVE", [.path(Array(root.utf8)), .word("list=0")])
        #expect(r.data.isEmpty && r.ok.option("count") == "3")
        // Observed all the same.
        try touchFile(root + "/new")
        try c.waitForPush { $0.kind == "ITEM" && $0.path == root + "/new" }
        _ = try c.request("UNOBSERVE", [.path(Array(root.utf8))])
        // LIST ignores the option: it is the listing.
        #expect(try c.request("LIST", [.path(Array(root.utf8)), .word("list=0")]).data.count == 4)
    }

    @Test func aConnectionMayDeclineRootPushes() throws {
        let d = try DaemonHarness()
        let quiet = try hello(d, role: "viewer", name: "bash", [.word("roots=0")])
        let loud = try d.connect()
        let root = try d.addRoot(files: ["f"])
        try loud.waitForPush("the new root") { $0.kind == "ROOT" && $0.path == root }
        #expect(try noPushes(quiet))
        // It still may ask.
        #expect(try quiet.request("ROOTS").data.contains { $0.path == root })
        _ = try d.connect(role: .admin).request("REMOVE-ROOT", [.path(Array(root.utf8))])
        try loud.waitForPush("the removal") { $0.kind == "ROOT" && $0.path == root && $0.fields[1].string == "removed" }
        #expect(try noPushes(quiet))
    }

    @Test func definedBadgesArePushedAndOutliveTheirProvider() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["f"])
        let viewer = try d.connect()
        var provider: Connection? = try d.connect(role: .provider, name: "engine")
        _ = try provider!.request("CLAIM", [.path(Array(root.utf8))])
        _ = try provider!.request("DEFINE-BADGE", [.word("cloud"), .option("label", "In the cloud"), .option("glyph", "☁"),
                                                   .option("ascii", "c"), .option("color", "36")])
        let push = try viewer.waitForPush("* BADGE") { $0.kind == "BADGE" }
        #expect(push.fields.first?.string == "cloud" && push.option("label") == "In the cloud" && push.option("glyph") == "☁")
        // Replaced: pushed again.
        _ = try provider!.request("DEFINE-BADGE", [.word("cloud"), .option("label", "Uploaded"), .option("glyph", "☁"),
                                                   .option("ascii", "c"), .option("color", "34")])
        #expect(try viewer.waitForPush("the replaced badge") { $0.kind == "BADGE" }.option("color") == "34")
        // Still defined once its provider is gone (its claim's end says the close was
        // handled): states may name it.
        provider = nil
        try viewer.waitForPush("the claim's end") { $0.kind == "ROOT" && $0.path == root && $0.option("provider") == nil }
        #expect(try viewer.request("BADGES").data.contains { $0.fields.first?.string == "cloud" && $0.option("label") == "Uploaded" })
    }

    /// A badge never stays `syncing` for an engine that is gone; other states stay, and the
    /// daemon's own shutdown releases nothing.
    @Test func syncingIsReleasedWhenItsProviderGoes() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["up", "broken", "other"])
        let viewer = try d.connect()
        _ = try viewer.request("OBSERVE", [.path(Array(root.utf8))])
        var engine: Connection? = try d.connect(role: .provider, name: "engine")
        let second = try d.connect(role: .provider, name: "second")
        func set(_ c: Connection, _ state: String, _ name: String, _ extra: [RequestField] = []) throws {
            _ = try c.request("SET", [.word(state), .path(Array((root + "/" + name).utf8))] + extra, timeout: 15)
        }
        try set(engine!, "syncing", "up", [.option("progress", "40"), .option("badge", "syncing")])
        try set(engine!, "error", "broken", [.option("message", "disk full")])
        try set(second, "syncing", "other")
        let gen = try viewer.status(root + "/up").gen
        engine = nil  // the connection closes
        let released = try viewer.waitForPush("the released path") {
            $0.kind == "ITEM" && $0.path == root + "/up" && $0.fields[1].string != "syncing"
        }
        #expect(released.fields[1].string == "pending" && released.option("progress") == nil)
        #expect(released.option("message")?.contains("engine") == true)
        let up = try viewer.status(root + "/up")
        #expect(up.state == .pending && up.gen == gen && up.badge == "pending")
        #expect(try viewer.status(root + "/broken").state == .error)
        #expect(try viewer.status(root + "/other").state == .syncing)

        // A restart keeps what the other engine left syncing: it sets it again when it is back.
        try d.restart()
        let after = try d.connect()
        #expect(try after.status(root + "/other").state == .syncing)
        #expect(try after.status(root + "/up").state == .pending)
    }

    /// An ignore file that no writer closes under its name (an O_TMPFILE linked in) is read
    /// all the same, a moment later.
    @Test func anIgnoreFileLinkedFromATemporaryFileIsRead() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["keep.txt"])
        let c = try d.connect()
        _ = try c.request("OBSERVE", [.path(Array(root.utf8))])
        // O_TMPFILE (Glibc does not export the macro): __O_TMPFILE | O_DIRECTORY.
        let fd = open(root, 0o20200000 | O_WRONLY, 0o644)
        #expect(fd >= 0, "O_TMPFILE: \(errno)")
        guard fd >= 0 else { return }
        let rules = Array("*.txt\n".utf8)
        #expect(write(fd, rules, rules.count) == rules.count)
        #expect(linkat(AT_FDCWD, "/proc/self/fd/\(fd)", AT_FDCWD, root + "/.syncbadgeignore", AT_SYMLINK_FOLLOW) == 0)
        close(fd)
        try c.waitForPush { $0.kind == "ITEM" && $0.path == root + "/keep.txt" && $0.fields[1].string == "ignored" }
    }

    /// A root in `error` says why on its ROOT line (1.1).
    @Test func aRootInErrorSaysWhyOnItsRootLine() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["f"])
        let c = try d.connect()
        try FileManager.default.removeItem(atPath: root)
        let push = try c.waitForPush("the root in error") { $0.kind == "ROOT" && $0.path == root && $0.fields[1].string == "error" }
        #expect(push.option("message")?.contains("deleted") == true)
        let line = try c.request("ROOTS").data.first { $0.path == root }
        #expect(line?.option("message") == push.option("message"))
    }

    @Test func toolbarMenusAndActionsAddressAProviderByName() throws {
        let d = try DaemonHarness()
        let engine = try d.connect(role: .provider, name: "engine")
        _ = try engine.request("DEFINE-TOOLBAR", [.option("name", "Engine"), .option("tooltip", "Pause or resume")])
        _ = try engine.request("DEFINE-MENU", [.word("toolbar"), .word("engine.pause"), .option("title", "Pause syncing")])
        let viewer = try d.connect(name: "file-manager")
        let toolbar = try viewer.request("TOOLBAR").data
        #expect(toolbar.map { $0.option("provider") } == ["engine"])
        let menu = try viewer.request("MENU", [.word("toolbar"), .option("provider", "engine")]).data
        #expect(menu.map { $0.fields.first?.string } == ["engine.pause"])
        _ = try viewer.request("ACTION", [.word("engine.pause"), .option("provider", "engine")])
        let action = try engine.waitForPush("* ACTION") { $0.kind == "ACTION" }
        #expect(action.fields.map(\.string) == ["engine.pause"] && action.option("from") == "file-manager")
        for verb in ["MENU", "ACTION"] {
            let first: RequestField = verb == "MENU" ? .word("toolbar") : .word("engine.pause")
            #expect(throws: ClientError.server(code: "no-provider", message: "no sync engine named nobody has a toolbar item")) {
                try viewer.request(verb, [first, .option("provider", "nobody")])
            }
        }
    }
}

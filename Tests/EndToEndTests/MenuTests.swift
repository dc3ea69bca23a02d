import Foundation
import Testing
@_spi(Wire) import SyncBadgeClient
import SyncBadgeCore

/// Menus, actions, the toolbar and provider-defined badges, against the real daemon.
@Suite struct MenuTests {
    func menu(_ c: Connection, _ kind: String, _ paths: [String], target: String? = nil) throws -> [String] {
        var fields: [RequestField] = [.word(kind)]
        if let target { fields.append(.option("target", target)) }
        fields += paths.map { .path(Array($0.utf8)) }
        return try c.request("MENU", fields).data.filter { $0.kind == "MENUITEM" }.map { m in
            (m.fields.first?.string ?? "") + (m.option("enabled") == "0" ? "(off)" : "")
        }
    }

    func engine(_ d: DaemonHarness, root: String) throws -> Connection {
        let e = try d.connect(role: .provider, name: "test-engine")
        _ = try e.request("CLAIM", [.path(Array(root.utf8))])
        for (kind, id, extra) in [
            ("items", "sync.now", [RequestField]()),
            ("items", "sync.resolve", [.option("states", "conflict")]),
            ("items", "sync.retry", [.option("states", "error,conflict")]),
            ("items", "sync.admin", [.word("enabled=0")]),
            ("container", "sync.refresh", []),
            ("toolbar", "sync.pause", []),
        ] {
            _ = try e.request("DEFINE-MENU", [.word(kind), .word(id), .option("title", "Title of \(id)")] + extra)
        }
        _ = try e.request("DEFINE-TOOLBAR", [.option("name", "Pause/Resume"), .option("tooltip", "Pause syncing")])
        return e
    }

    @Test func menusAreFilteredByStateAndMergedWithBuiltins() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a", "b"])
        let e = try engine(d, root: root)
        let v = try d.connect()
        #expect(try menu(v, "items", ["\(root)/a"]) == ["sync.now", "sync.admin(off)", "syncbadge.ignore", "syncbadge.details"])
        _ = try e.request("SET", [.word("conflict"), .path(Array("\(root)/a".utf8))])
        #expect(try menu(v, "items", ["\(root)/a"]) == ["sync.now", "sync.resolve", "sync.retry", "sync.admin(off)", "syncbadge.ignore", "syncbadge.details"])
        _ = try e.request("SET", [.word("error"), .path(Array("\(root)/b".utf8))])
        // Every selected item's state must be listed: error is not among resolve's.
        #expect(try menu(v, "items", ["\(root)/a", "\(root)/b"]) == ["sync.now", "sync.retry", "sync.admin(off)", "syncbadge.ignore", "syncbadge.details"])
        #expect(try menu(v, "container", [], target: root) == ["sync.refresh"])
        #expect(try menu(v, "toolbar", [], target: root) == ["sync.pause"])
        #expect(throws: ClientError.self) { try menu(v, "bogus", [root]) }
        #expect(throws: ClientError.server(code: "outside", message: "/etc")) { try menu(v, "items", ["/etc"]) }
        let caps = v.capabilities
        #expect(caps.contains("menus") && caps.contains("observe") && caps.contains("changes"))
    }

    @Test func actionsReachTheClaimingProvider() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a", "b c"])
        let e = try engine(d, root: root)
        let v = try d.connect(role: .viewer, name: "ranger")
        _ = try v.request("ACTION", [.word("sync.now"), .option("target", root), .path(Array("\(root)/a".utf8)), .path(Array("\(root)/b c".utf8))])
        let push = try e.waitForPush { $0.kind == "ACTION" }
        #expect(push.fields.map(\.string) == ["sync.now", "\(root)/a", "\(root)/b c"])
        #expect(push.option("target") == root)
        #expect(push.option("from") == "ranger")
        // Without a provider: no-provider. The built-ins still work.
        _ = try e.request("BYE")
        try v.waitForPush { $0.kind == "ROOT" && $0.option("provider") == nil }
        #expect(throws: ClientError.self) { try v.request("ACTION", [.word("sync.now"), .path(Array("\(root)/a".utf8))]) }
        do {
            _ = try v.request("ACTION", [.word("sync.now"), .path(Array("\(root)/a".utf8))])
        } catch let ClientError.server(code, _) {
            #expect(code == "no-provider")
        }
        // Its menus and toolbar went with it.
        #expect(try menu(v, "items", ["\(root)/a"]) == ["syncbadge.ignore", "syncbadge.details"])
        #expect(try v.request("TOOLBAR").data.isEmpty)
        let details = try v.request("ACTION", [.word("syncbadge.details"), .path(Array("\(root)/a".utf8))]).ok.option("message")
        #expect(details?.contains("state=unknown") == true && details?.contains("gen=") == true)
    }

    @Test func theToolbarListsEachProvidersItem() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot()
        let e = try engine(d, root: root)
        defer { withExtendedLifetime(e) {} }
        let v = try d.connect()
        let items = try v.request("TOOLBAR").data
        #expect(items.count == 1)
        #expect(items.first?.option("name") == "Pause/Resume")
        #expect(items.first?.option("tooltip") == "Pause syncing")
        #expect(items.first?.option("provider") == "test-engine")
        let cli = try runCLI(["toolbar", "--socket", d.socket])
        #expect(cli.out.contains("Pause/Resume") && cli.out.contains("test-engine"),
                "status \(cli.status), stdout \(cli.out), stderr \(cli.err); daemon log: \(d.log.suffix(2000))")
    }

    @Test func ignoreAndStopIgnoringEditTheIgnoreFile() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["notes.txt", "build/out.o", "weird*name"])
        let v = try d.connect()
        _ = try v.request("OBSERVE", [.path(Array(root.utf8))])
        _ = try v.request("ACTION", [.word("syncbadge.ignore"), .path(Array("\(root)/build".utf8)), .path(Array("\(root)/weird*name".utf8))])
        try v.waitForPush { $0.kind == "ITEM" && $0.path == "\(root)/weird*name" && $0.fields[1].string == "ignored" }
        #expect(try v.status("\(root)/build/out.o").state == .ignored)
        #expect(try v.status("\(root)/notes.txt").state != .ignored)
        #expect(try String(contentsOfFile: root + "/.syncbadgeignore", encoding: .utf8) == "/build\n/weird\\*name\n")
        #expect(try menu(v, "items", ["\(root)/build"]) == ["syncbadge.unignore", "syncbadge.details"])
        _ = try v.request("ACTION", [.word("syncbadge.unignore"), .path(Array("\(root)/build".utf8))])
        try v.waitForPush { $0.kind == "ITEM" && $0.path == "\(root)/build" && $0.fields[1].string == "pending" }
        #expect(try v.status("\(root)/build/out.o").state == .pending)
        // Stop ignoring something a wider rule ignores: a `!` line re-includes it.
        try Data("*.txt\n".utf8).write(to: URL(fileURLWithPath: root + "/.syncbadgeignore"))
        try v.waitForPush { $0.kind == "ITEM" && $0.path == "\(root)/notes.txt" && $0.fields[1].string == "ignored" }
        _ = try v.request("ACTION", [.word("syncbadge.unignore"), .path(Array("\(root)/notes.txt".utf8))])
        try v.waitForPush { $0.kind == "ITEM" && $0.path == "\(root)/notes.txt" && $0.fields[1].string == "pending" }
        #expect(try String(contentsOfFile: root + "/.syncbadgeignore", encoding: .utf8) == "*.txt\n!/notes.txt\n")
    }

    @Test func providerBadgesAppearInBadges() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["f"])
        let e = try d.connect(role: .provider)
        _ = try e.request("DEFINE-BADGE", [.word("shared"), .option("label", "Shared"), .option("glyph", "⚇"), .option("ascii", "s"), .option("color", "34")])
        #expect(throws: ClientError.self) { try e.request("DEFINE-BADGE", [.word("bad"), .option("label", "x")]) }
        _ = try e.request("SET", [.word("synced"), .path(Array("\(root)/f".utf8)), .option("badge", "shared")])
        let v = try d.connect()
        let shared = try v.request("BADGES").data.first { $0.fields.first?.string == "shared" }
        #expect(shared?.option("glyph") == "⚇" && shared?.option("color") == "34")
        #expect(try v.status("\(root)/f").badge == "shared")
        let ls = try runCLI(["ls", root, "--socket", d.socket])
        #expect(ls.out.contains("⚇"))
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@_spi(Wire) import SyncBadgeClient
import SyncBadgeCore

/// Real files, real inotify, the real daemon.
@Suite struct FileEventTests {
    @Test func awkwardNamesRoundTripExactly() throws {
        let d = try DaemonHarness()
        let names: [[UInt8]] = [
            Array("with space".utf8), Array("new\nline".utf8), Array("tab\there".utf8), Array("100%".utf8),
            Array("c:colon".utf8), Array("trailing  ".utf8), [0x66, 0xFF, 0xFE, 0x67], Array("ünï €".utf8), Array("%41".utf8),
        ]
        let root = d.temp.sub("root")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        // Half exist before ADD-ROOT (found by the scan), half appear after (found by inotify).
        for n in names.prefix(4) { try createFile(dir: root, name: n) }
        _ = try d.connect(role: .admin).request("ADD-ROOT", [.path(Array(root.utf8))])
        let c = try d.connect()
        _ = try c.request("OBSERVE", [.path(Array(root.utf8))])
        for n in names.dropFirst(4) {
            try createFile(dir: root, name: n)
            try c.waitForPush { $0.kind == "ITEM" && $0.fields[0].bytes == Array(root.utf8) + [0x2F] + n }
        }
        let listed = Set(try c.list(root).map(\.name))
        #expect(listed == Set(names))
        for n in names {
            let item = try c.status(bytes: Array(root.utf8) + [0x2F] + n)
            #expect(item.name == n)
            #expect(item.kind == .file)
        }
    }

    @Test func aDirectoryCreatedWithTwoHundredFilesIsAllPending() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot()
        let c = try d.connect()
        _ = try c.request("OBSERVE", [.path(Array(root.utf8))])
        let big = root + "/big"
        try FileManager.default.createDirectory(atPath: big, withIntermediateDirectories: false)
        for i in 0..<200 { try touchFile(big + "/f\(i)") }
        try c.waitForPush("big with 200 pending") { m in
            m.kind == "ITEM" && m.path == big && m.option("counts").flatMap(StateCounts.init(wireValue:))?[.pending] == 200
        }
        let items = try c.list(big)
        #expect(items.count == 200)
        #expect(items.allSatisfy { $0.state == .pending })
        let dir = try c.status(big)
        #expect(dir.state == .pending && dir.counts?[.pending] == 200 && dir.counts?.total == 200)
    }

    @Test func changesMakeEntriesPendingAndRollUp() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a/b/c.txt", "top.txt"])
        let c = try d.connect()
        #expect(try c.status(root + "/a/b/c.txt").state == .unknown)
        let before = try c.status(root + "/a/b/c.txt").gen!
        _ = try c.request("OBSERVE", [.path(Array((root + "/a/b").utf8))])
        try Data("changed".utf8).write(to: URL(fileURLWithPath: root + "/a/b/c.txt"))
        try c.waitForPush { $0.kind == "ITEM" && $0.path == root + "/a/b/c.txt" && $0.fields[1].string == "pending" }
        let after = try c.status(root + "/a/b/c.txt")
        #expect(after.gen! > before)
        let a = try c.status(root + "/a")
        #expect(a.state == .pending && a.counts?[.pending] == 1 && a.counts?[.unknown] == 1)
        let r = try c.status(root)
        #expect(r.state == .pending && r.counts?[.unknown] == 3 && r.counts?[.pending] == 1)
    }

    @Test func renamesAndMovesInAndOut() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["old.txt", "dir/inner.txt"])
        let outside = d.temp.sub("outside")
        try FileManager.default.createDirectory(atPath: outside + "/incoming/deep", withIntermediateDirectories: true)
        try touchFile(outside + "/incoming/deep/f")
        try touchFile(outside + "/single")
        let c = try d.connect()
        _ = try c.request("OBSERVE", [.path(Array(root.utf8))])

        // Rename: tombstone at the old path, pending entry at the new.
        try FileManager.default.moveItem(atPath: root + "/old.txt", toPath: root + "/new.txt")
        try c.waitForPush { $0.kind == "ITEM" && $0.path == root + "/new.txt" }
        let tomb = try c.status(root + "/old.txt")
        #expect(tomb.kind == .gone && tomb.state == .pending)
        #expect(try c.status(root + "/new.txt").state == .pending)

        // A directory renamed within: pending throughout.
        try FileManager.default.moveItem(atPath: root + "/dir", toPath: root + "/dir2")
        try c.waitForPush { $0.kind == "ITEM" && $0.path == root + "/dir2" }
        #expect(try c.status(root + "/dir2/inner.txt").state == .pending)
        #expect(try c.status(root + "/dir").kind == .gone)
        #expect(throws: ClientError.self) { try c.status(root + "/dir/inner.txt") }

        // Moved in from outside: the directory and its contents appear, pending.
        try FileManager.default.moveItem(atPath: outside + "/incoming", toPath: root + "/incoming")
        try c.waitForPush { $0.kind == "ITEM" && $0.path == root + "/incoming" }
        #expect(try c.status(root + "/incoming/deep/f").state == .pending)
        try FileManager.default.moveItem(atPath: outside + "/single", toPath: root + "/single")
        try c.waitForPush { $0.kind == "ITEM" && $0.path == root + "/single" }

        // Moved out: a tombstone; and the moved-out tree is no longer watched.
        try FileManager.default.moveItem(atPath: root + "/incoming", toPath: outside + "/back")
        try c.waitForPush { $0.kind == "GONE" && $0.path == root + "/incoming" }
        #expect(try c.status(root + "/incoming").kind == .gone)
        try touchFile(outside + "/back/deep/later")
        try touchFile(root + "/marker")
        try c.waitForPush { $0.kind == "ITEM" && $0.path == root + "/marker" }
        #expect(throws: ClientError.self) { try c.status(root + "/incoming/deep/later") }
        let stats = try c.request("STATS").data.first { $0.fields[0].string == "watches" }
        #expect(stats?.fields[1].string == "2")  // root and dir2
    }

    @Test func deletionsLeaveTombstonesAndObservedDirectoriesEnd() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["sub/a", "sub/b", "f"])
        let c = try d.connect()
        _ = try c.request("OBSERVE", [.path(Array((root + "/sub").utf8))])
        _ = try c.request("OBSERVE", [.path(Array(root.utf8))])
        try FileManager.default.removeItem(atPath: root + "/sub")
        try c.waitForPush { $0.kind == "GONE" && $0.path == root + "/sub" }
        let tomb = try c.status(root + "/sub")
        #expect(tomb.kind == .gone && tomb.state == .pending && tomb.counts == nil)
        #expect(throws: ClientError.self) { try c.status(root + "/sub/a") }
        #expect(try c.list(root).map(\.name) == [Array("f".utf8)])
        let r = try c.status(root)
        #expect(r.counts?[.pending] == 1 && r.counts?[.unknown] == 1)
        // The observation of the deleted directory ended.
        #expect(throws: ClientError.self) { try c.request("UNOBSERVE", [.path(Array((root + "/sub").utf8))]) }
    }

    @Test func ignoreFileRulesApplyAndAreReread() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["keep.txt", "junk.log", "build/out.o", "x.swp"])
        let c = try d.connect()
        #expect(try c.status(root + "/x.swp").state == .ignored)
        #expect(try c.status(root + "/junk.log").state == .unknown)
        _ = try c.request("OBSERVE", [.path(Array(root.utf8))])
        try Data("*.log\nbuild/\n".utf8).write(to: URL(fileURLWithPath: root + "/.syncbadgeignore"))
        try c.waitForPush { $0.kind == "ITEM" && $0.path == root + "/build" && $0.fields[1].string == "ignored" }
        #expect(try c.status(root + "/junk.log").state == .ignored)
        #expect(try c.status(root + "/build/out.o").state == .ignored)
        // Ignored entries never raise the roll-up; writing to them changes nothing.
        try Data("more".utf8).write(to: URL(fileURLWithPath: root + "/junk.log"))
        try Data("!junk.log\n*.log\n".utf8).write(to: URL(fileURLWithPath: root + "/.syncbadgeignore"))
        try c.waitForPush { $0.kind == "ITEM" && $0.path == root + "/build" && $0.fields[1].string != "ignored" }
        #expect(try c.status(root + "/junk.log").state == .ignored)
        #expect(try c.status(root + "/build/out.o").state == .pending)
    }

    /// An ignore file rewritten in place is truncated first: the rules in force stay until its
    /// writer closes it, rather than flipping to an empty rule set in between.
    @Test func anIgnoreFileIsReadWhenItsWriterCloses() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["junk.log", "keep.txt"])
        let c = try d.connect()
        _ = try c.request("OBSERVE", [.path(Array(root.utf8))])
        try Data("*.log\n".utf8).write(to: URL(fileURLWithPath: root + "/.syncbadgeignore"))
        try c.waitForPush { $0.kind == "ITEM" && $0.path == root + "/junk.log" && $0.fields[1].string == "ignored" }
        let fd = open(root + "/.syncbadgeignore", O_WRONLY | O_TRUNC)
        #expect(fd >= 0)
        // Everything before this marker's push has been applied, the truncation included.
        try touchFile(root + "/marker")
        try c.waitForPush { $0.kind == "ITEM" && $0.path == root + "/marker" }
        #expect(try c.status(root + "/junk.log").state == .ignored)
        let rules = Array("*.txt\n".utf8)
        #expect(write(fd, rules, rules.count) == rules.count)
        close(fd)
        try c.waitForPush { $0.kind == "ITEM" && $0.path == root + "/keep.txt" && $0.fields[1].string == "ignored" }
        #expect(try c.status(root + "/junk.log").state == .pending)
    }

    /// A hard link has no writer to close it: the rules it brings apply at once.
    @Test func anIgnoreFileLinkedInIsReadAtOnce() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["keep.txt"])
        let rules = d.temp.sub("rules")
        try touchFile(rules, "*.txt\n")
        let c = try d.connect()
        _ = try c.request("OBSERVE", [.path(Array(root.utf8))])
        #expect(link(rules, root + "/.syncbadgeignore") == 0)
        try c.waitForPush { $0.kind == "ITEM" && $0.path == root + "/keep.txt" && $0.fields[1].string == "ignored" }
    }

    /// A stored root whose directory is missing when the daemon starts is in error, and is
    /// watched again once the directory is back; one that vanished while the daemon was down
    /// and is back when it starts is not in error.
    @Test func aRootMissingAtStartIsWatchedForAndOneBackAtStartIsFine() throws {
        let d = try DaemonHarness()
        let missing = try d.addRoot("missing", files: ["f"])
        let back = try d.addRoot("back", files: ["g"])
        var c = try d.connect()
        try FileManager.default.removeItem(atPath: back)
        try c.waitForPush("the vanished root") { $0.kind == "ROOT" && $0.path == back && $0.fields[1].string == "error" }
        d.stop()
        try FileManager.default.removeItem(atPath: missing)
        try FileManager.default.createDirectory(atPath: back, withIntermediateDirectories: true)
        try d.start()
        c = try d.connect()
        // Roots answer `scanning=1` until their scan is in: wait for both to be through it.
        func settled() throws -> [WireMessage] {
            let deadline = Date().addingTimeInterval(15)
            while true {
                let roots = try c.request("ROOTS").data
                if !roots.contains(where: { $0.option("scanning") == "1" }) { return roots }
                guard Date() < deadline else { throw HarnessError(description: "roots still scanning: \(roots)") }
                _ = try c.nextPush(timeout: 0.2)
            }
        }
        let roots = try settled()
        #expect(roots.first { $0.path == missing }?.fields[1].string == "error")
        #expect(roots.first { $0.path == back }?.fields[1].string != "error")
        #expect(try c.status(back).state != .error)
        try FileManager.default.createDirectory(atPath: missing, withIntermediateDirectories: true)
        try c.waitForPush("the missing root back") { $0.kind == "ROOT" && $0.path == missing && $0.fields[1].string != "error" }
        try touchFile(missing + "/later")
        _ = try c.request("OBSERVE", [.path(Array(missing.utf8))])
        try touchFile(missing + "/later2")
        try c.waitForPush("a change in the returned root") { $0.kind == "ITEM" && $0.path == missing + "/later2" }
    }

    @Test func aDeletedRootTurnsToErrorAndIsWatchedAgainWhenRecreated() throws {
        let d = try DaemonHarness()
        let gone = try d.addRoot("gone", files: ["a/f"])
        let other = try d.addRoot("other")
        let c = try d.connect()
        try FileManager.default.removeItem(atPath: gone)
        try c.waitForPush("the root in error") { $0.kind == "ROOT" && $0.path == gone && $0.fields[1].string == "error" }
        let why = try c.status(gone)
        #expect(why.state == .error && why.message?.contains("deleted") == true)
        // The other root goes on as before.
        _ = try c.request("OBSERVE", [.path(Array(other.utf8))])
        try touchFile(other + "/new")
        try c.waitForPush { $0.kind == "ITEM" && $0.path == other + "/new" }
        // Re-created at the same path: watched again, with no request.
        try FileManager.default.createDirectory(atPath: gone + "/b", withIntermediateDirectories: true)
        try c.waitForPush("the root back") { $0.kind == "ROOT" && $0.path == gone && $0.fields[1].string != "error" }
        // `b` is in the returned root's scan, or arrives as its own event just after.
        if try !c.request("OBSERVE", [.path(Array(gone.utf8))]).data.contains(where: { $0.path == gone + "/b" }) {
            try c.waitForPush("b in the returned root") { $0.kind == "ITEM" && $0.path == gone + "/b" }
        }
        _ = try c.request("OBSERVE", [.path(Array((gone + "/b").utf8))])
        try touchFile(gone + "/b/later")
        try c.waitForPush("a change in the returned root") { $0.kind == "ITEM" && $0.path == gone + "/b/later" }
        #expect(try c.status(gone + "/b/later").state == .pending)
        let roots = try c.request("ROOTS", []).data.filter { $0.path == gone }
        #expect(roots.count == 1 && roots.first?.fields[1].string != "error" && (roots.first?.option("watches")).flatMap { Int($0) } == 2)
    }
}


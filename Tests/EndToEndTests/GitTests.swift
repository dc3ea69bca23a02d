#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@_spi(Wire) import SyncBadgeClient
import SyncBadgeCore

extension Products {
    static var gitAdapter: URL { directory.appendingPathComponent("syncbadge-git") }
}

/// A bare repository on the local disk as the remote, a clone of it as the working tree (a
/// root), the real daemon and the real `syncbadge-git`, all under one temporary directory with
/// a home of its own (the git configuration and the adapter's list of repositories).
final class GitWorld {
    let daemon: DaemonHarness
    let home: String
    let remote: String
    let clone: String
    var adapter: ChildProcess?
    let environment: [String: String]

    init(startAdapter: Bool = true) throws {
        daemon = try DaemonHarness()
        home = daemon.temp.sub("home")
        remote = daemon.temp.sub("remote.git")
        clone = daemon.temp.sub("clone")
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        try """
            [user]
            \tname = SyncBadge Test
            \temail = test@example.invalid
            [init]
            \tdefaultBranch = main
            [pull]
            \trebase = false
            [advice]
            \tdetachedHead = false
            """.write(toFile: home + "/.gitconfig", atomically: true, encoding: .utf8)
        environment = [
            "HOME": home, "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
            "XDG_CONFIG_HOME": home + "/.config", "GIT_CONFIG_NOSYSTEM": "1", "LANG": "C",
        ]
        try git(["init", "-q", "--bare", remote], in: daemon.temp.path)
        // The first commit comes from a scratch clone, so the working tree under test starts
        // as a user's fresh clone does.
        let seed = daemon.temp.sub("seed")
        try git(["clone", "-q", remote, seed], in: daemon.temp.path)
        try write(seed + "/a.txt", "alpha\n")
        try write(seed + "/docs/guide.md", "guide\n")
        try write(seed + "/docs/deep/notes.txt", "notes\n")
        try write(seed + "/.gitignore", "build/\n*.log\n")
        try git(["add", "."], in: seed)
        try git(["commit", "-q", "-m", "first"], in: seed)
        try git(["push", "-q", "origin", "main"], in: seed)
        try git(["clone", "-q", remote, clone], in: daemon.temp.path)
        try write(clone + "/build/out.o", "object\n")
        try write(clone + "/debug.log", "log\n")
        if startAdapter { try start() }
    }

    func start(arguments: [String]? = nil) throws {
        adapter = try ChildProcess.adapter(Products.gitAdapter, socket: daemon.socket, arguments: arguments ?? [clone], environment: environment)
    }

    @discardableResult
    func git(_ args: [String], in dir: String? = nil) throws -> String {
        let out = daemon.temp.sub("git-output")
        let (status, text) = try spawn("git", ["-C", dir ?? clone] + args, environment: environment, output: out)
        guard status == 0 else { throw HarnessError(description: "git \(args.joined(separator: " ")) exited \(status): \(text)") }
        return text
    }

    /// The exit status of a git command expected to fail.
    func gitStatus(_ args: [String], in dir: String? = nil) throws -> Int32 {
        try spawn("git", ["-C", dir ?? clone] + args, environment: environment).status
    }

    func write(_ path: String, _ text: String) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try touchFile(path, text)
    }

    func path(_ rel: String) -> String { rel.isEmpty ? clone : clone + "/" + rel }

    func diagnostics() -> String {
        "--- syncbadge-git:\n\(adapter?.log.suffix(6000) ?? "")\n--- syncbadged:\n\(daemon.log.suffix(4000))"
    }

    /// Waits until the path shows this state (and this message, when given).
    @discardableResult
    func wait(_ c: Connection, _ rel: String, _ state: String, message: String? = nil, timeout: Double = 15) throws -> Item {
        if !FileManager.default.fileExists(atPath: path(rel)) {
            // A tombstone: observers hear of it going, not of its state changing after that.
            return try poll(c, "\(rel) \(state)\(message.map { " (\($0))" } ?? "")", timeout: timeout) {
                (try? c.status(path(rel))).flatMap { $0.stateName == state && (message == nil || $0.message == message) ? $0 : nil }
            }
        }
        return try c.waitForState(path(rel), "\(state)\(message.map { " (\($0))" } ?? "")", timeout: timeout, diagnostics: diagnostics) {
            $0.stateName == state && (message == nil || $0.message == message)
        }
    }

    /// The whole tree reconciled: the root itself shows `state` and nothing below is unknown.
    func waitSettled(_ c: Connection, _ state: String = "synced", timeout: Double = 20) throws {
        try c.waitForState(clone, "the tree \(state)", timeout: timeout, diagnostics: diagnostics) {
            $0.stateName == state && ($0.counts?[.unknown] ?? 0) == 0
        }
    }

    /// Asks again (woken by any push, at most every 100 ms) until `done`; throws at the deadline.
    @discardableResult
    func poll<T>(_ c: Connection, _ what: String, timeout: Double = 15, _ done: () throws -> T?) throws -> T {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let v = try done() { return v }
            guard Date() < deadline else { throw HarnessError(description: "never saw \(what) within \(timeout) s\n" + diagnostics()) }
            _ = try c.nextPush(timeout: min(0.1, max(0, deadline.timeIntervalSinceNow)))
        }
    }

    func toolbarName(_ c: Connection) throws -> String? {
        try c.request("TOOLBAR", [], timeout: 15).data.first { $0.option("provider") == "git" }?.option("name")
    }

    deinit { adapter?.stop() }
}

/// Runs `syncbadge-git` with arguments to its end (add, remove): status and output.
func runGitAdapter(_ args: [String], environment: [String: String]) throws -> (status: Int32, out: String, err: String) {
    try runToEnd(Products.gitAdapter, args, environment: environment, seconds: 60)
}

// One world at a time: each takes well under a second alone, and the suite is no faster with
// eleven daemons, adapters and gits competing for two cores beside the rest of `make test`.
@Suite(.serialized, .enabled(if: toolsOnPath(["git"])))
struct GitEndToEndTests {
    @Test func cleanCloneIsSyncedAndIgnoredIsIgnored() throws {
        let w = try GitWorld()
        let c = try w.daemon.connect()
        try w.waitSettled(c)
        for rel in ["a.txt", "docs/guide.md", "docs/deep/notes.txt", ".gitignore", "docs", "docs/deep"] {
            #expect(try c.status(w.path(rel)).state == .synced, "\(rel)")
        }
        for rel in [".git", ".git/HEAD", "build", "build/out.o", "debug.log"] {
            #expect(try c.status(w.path(rel)).state == .ignored, "\(rel)")
        }
        let root = try c.request("ROOTS", [], timeout: 15).data.first { $0.path == w.clone }
        #expect(root?.option("provider") == "git")
        // The branch once git was asked (until then the item says "git").
        #expect(try w.poll(c, "the toolbar") { try w.toolbarName(c).flatMap { $0 == "main" ? $0 : nil } } == "main")
        let items = try c.request("MENU", [.word("items"), .path(Array(w.path("a.txt").utf8))], timeout: 15).data.map { $0.fields.first?.string ?? "" }
        #expect(items.starts(with: ["git.log"]))
        let container = try c.request("MENU", [.word("container"), .path(Array(w.clone.utf8))], timeout: 15).data.map { $0.fields.first?.string ?? "" }
        #expect(container == ["git.pull", "git.push", "git.fetch"])
    }

    @Test func editStageCommitPush() throws {
        let w = try GitWorld()
        let c = try w.daemon.connect()
        try w.waitSettled(c)
        try w.write(w.path("docs/guide.md"), "guide, edited\n")
        try w.wait(c, "docs/guide.md", "pending", message: "modified")
        #expect(try c.status(w.path("a.txt")).state == .synced)
        try w.git(["add", "docs/guide.md"])
        try w.wait(c, "docs/guide.md", "pending", message: "staged")
        try w.git(["commit", "-q", "-m", "edit the guide"])
        try w.wait(c, "docs/guide.md", "pending", message: "not pushed: 1 commit")
        #expect(try w.poll(c, "the toolbar ahead") { try w.toolbarName(c).flatMap { $0 == "main ↑1" ? $0 : nil } } == "main ↑1")
        #expect(try c.status(w.path("docs")).state == .pending)
        try w.git(["push", "-q"])
        try w.wait(c, "docs/guide.md", "synced")
        try w.waitSettled(c)
        #expect(try w.poll(c, "the toolbar even") { try w.toolbarName(c).flatMap { $0 == "main" ? $0 : nil } } == "main")
        // A deletion: a pending tombstone until it is pushed, then gone.
        try FileManager.default.removeItem(atPath: w.path("a.txt"))
        try w.wait(c, "a.txt", "pending", message: "deleted")
        try w.git(["commit", "-q", "-a", "-m", "remove a"])
        try w.wait(c, "a.txt", "pending", message: "not pushed: 1 commit")
        try w.git(["push", "-q"])
        try w.poll(c, "the tombstone dropped") { () -> Bool? in
            do { _ = try c.status(w.path("a.txt")); return nil } catch ClientError.server(code: "not-found", _) { return true }
        }
    }

    @Test func untrackedPendingIgnoredIgnored() throws {
        let w = try GitWorld()
        let c = try w.daemon.connect()
        try w.waitSettled(c)
        try w.write(w.path("new.txt"), "new\n")
        try w.write(w.path("trace.log"), "ignored\n")
        try w.write(w.path("fresh/dir/inside.txt"), "untracked in a new directory\n")
        try w.wait(c, "new.txt", "pending", message: "untracked")
        try w.wait(c, "trace.log", "ignored")
        try w.wait(c, "fresh/dir/inside.txt", "pending", message: "untracked")
        try w.write(w.path("build/more.o"), "x")
        try w.wait(c, "build/more.o", "ignored")
        // Ignoring it in .gitignore makes it ignored.
        try w.write(w.path(".gitignore"), "build/\n*.log\nnew.txt\n")
        try w.wait(c, "new.txt", "ignored")
        try w.wait(c, ".gitignore", "pending", message: "modified")
    }

    /// `git mv` of a file and a plain `mv` of a directory: the old names are tombstones until the
    /// move is pushed.
    @Test func movesAreTombstonesUntilPushed() throws {
        let w = try GitWorld()
        let c = try w.daemon.connect()
        try w.waitSettled(c)
        try w.git(["mv", "a.txt", "b.txt"])
        try w.wait(c, "b.txt", "pending", message: "staged")
        try w.wait(c, "a.txt", "pending", message: "staged")
        try FileManager.default.moveItem(atPath: w.path("docs"), toPath: w.path("manual"))
        try w.wait(c, "manual/deep/notes.txt", "pending", message: "untracked")
        try w.wait(c, "docs", "pending", message: "deleted")
        try w.git(["add", "-A"])
        try w.git(["commit", "-q", "-m", "moves"])
        try w.wait(c, "manual/guide.md", "pending", message: "not pushed: 1 commit")
        try w.wait(c, "docs", "pending", message: "not pushed: 1 commit")
        try w.git(["push", "-q"])
        try w.wait(c, "manual/deep/notes.txt", "synced")
        for gone in ["a.txt", "docs"] {
            try w.poll(c, "\(gone)'s tombstone dropped") { () -> Bool? in
                do { _ = try c.status(w.path(gone)); return nil } catch ClientError.server(code: "not-found", _) { return true }
            }
        }
        try w.waitSettled(c)
    }

    /// Any file name: a newline and bytes that are not UTF-8, from git's output to the daemon.
    @Test func namesThatAreNotText() throws {
        let w = try GitWorld()
        let c = try w.daemon.connect()
        try w.waitSettled(c)
        let name: [UInt8] = Array("odd\nname-".utf8) + [0xE9, 0xFF] + Array(".txt".utf8)
        try createFile(dir: w.clone, name: name, contents: "x")
        let path = Array(w.clone.utf8) + [UInt8(ascii: "/")] + name
        func state() throws -> Item? { try? c.status(bytes: path) }
        try w.poll(c, "the odd name untracked") { try state().flatMap { $0.message == "untracked" ? $0 : nil } }
        try w.git(["add", "-A"])
        try w.git(["commit", "-q", "-m", "odd"])
        try w.poll(c, "the odd name not pushed") { try state().flatMap { $0.message == "not pushed: 1 commit" ? $0 : nil } }
        try w.git(["push", "-q"])
        try w.poll(c, "the odd name synced") { try state().flatMap { $0.state == .synced ? $0 : nil } }
        try w.waitSettled(c)
    }

    @Test func mergeConflictThenResolved() throws {
        let w = try GitWorld()
        let c = try w.daemon.connect()
        try w.waitSettled(c)
        // Someone else pushes a change to the same line.
        let other = w.daemon.temp.sub("other")
        try w.git(["clone", "-q", w.remote, other], in: w.daemon.temp.path)
        try w.write(other + "/a.txt", "alpha from the other side\n")
        try w.git(["commit", "-q", "-a", "-m", "theirs"], in: other)
        try w.git(["push", "-q"], in: other)
        try w.write(w.path("a.txt"), "alpha from here\n")
        try w.git(["commit", "-q", "-a", "-m", "ours"])
        #expect(try w.gitStatus(["pull", "-q"]) != 0)
        try w.wait(c, "a.txt", "conflict", message: "both modified")
        #expect(try c.status(w.clone).state == .conflict)
        try w.write(w.path("a.txt"), "alpha, both\n")
        try w.git(["add", "a.txt"])
        try w.wait(c, "a.txt", "pending", message: "staged")
        try w.git(["commit", "-q", "--no-edit"])
        try w.wait(c, "a.txt", "pending", message: "not pushed: 2 commits")
        try w.git(["push", "-q"])
        try w.wait(c, "a.txt", "synced")
        try w.waitSettled(c)
    }

    /// "Push" from the folder's menu: the root shows `syncing` while git runs, then `synced`;
    /// a push the remote refuses leaves git's message on the root.
    @Test func pushFromTheMenu() throws {
        let w = try GitWorld()
        let c = try w.daemon.connect()
        try w.waitSettled(c)
        try w.write(w.path("docs/guide.md"), "guide 2\n")
        try w.git(["commit", "-q", "-a", "-m", "two"])
        try w.wait(c, "docs/guide.md", "pending", message: "not pushed: 1 commit")
        let v = try w.daemon.connect()
        _ = try v.request("OBSERVE", [.path(Array(w.clone.utf8)), .option("list", "0")], timeout: 15)
        let replies = c.capabilities.contains("action-reply")
        var action: [RequestField] = [.word("git.push"), .path(Array(w.clone.utf8))]
        if replies { action.append(.word("reply=1")) }
        let tag = try c.send("ACTION", action)
        let syncing = try v.waitForPush(timeout: 15, "the root syncing") { $0.kind == "ITEM" && $0.path == w.clone && $0.fields[1].string == "syncing" }
        #expect(syncing.option("message")?.hasPrefix("git push") == true)
        #expect(syncing.option("progress").flatMap(Int.init) != nil)
        let answer = try c.reply(to: tag, timeout: 15)
        if replies { #expect(answer.ok.option("message") == "git push: done") }
        try w.wait(c, "docs/guide.md", "synced")
        try w.waitSettled(c)
        #expect(try w.git(["rev-parse", "main"], in: w.remote) == w.git(["rev-parse", "HEAD"]))

        // The remote moved on: the push is rejected, and the root says so in git's words.
        let other = w.daemon.temp.sub("other")
        try w.git(["clone", "-q", w.remote, other], in: w.daemon.temp.path)
        try w.write(other + "/theirs.txt", "x\n")
        try w.git(["add", "theirs.txt"], in: other)
        try w.git(["commit", "-q", "-m", "theirs"], in: other)
        try w.git(["push", "-q"], in: other)
        try w.write(w.path("a.txt"), "mine\n")
        try w.git(["commit", "-q", "-a", "-m", "mine"])
        var again: [RequestField] = [.word("git.push"), .path(Array(w.clone.utf8))]
        if replies { again.append(.word("reply=1")) }
        let tag2 = try c.send("ACTION", again)
        if replies {
            #expect(throws: ClientError.self) { try c.reply(to: tag2, timeout: 15) }
        } else {
            _ = try c.reply(to: tag2, timeout: 15)
        }
        let failed = try w.wait(c, "", "error")
        #expect(failed.message?.contains("rejected") == true)
        try w.wait(c, "a.txt", "pending", message: "not pushed: 1 commit")
        // Mended from a terminal: a fetch updates the remote-tracking ref, and the error goes.
        try w.git(["fetch", "-q"])
        try w.wait(c, "", "pending")
        #expect(try w.poll(c, "the toolbar diverged") { try w.toolbarName(c).flatMap { $0 == "main ↑1 ↓1" ? $0 : nil } } == "main ↑1 ↓1")
    }

    @Test func branchSwitchReevaluatesEverything() throws {
        let w = try GitWorld()
        let c = try w.daemon.connect()
        try w.waitSettled(c)
        try w.git(["checkout", "-q", "-b", "topic"])
        try w.wait(c, "docs/deep/notes.txt", "pending", message: "no upstream")
        try w.wait(c, "a.txt", "pending", message: "no upstream")
        #expect(try w.poll(c, "the toolbar on topic") { try w.toolbarName(c).flatMap { $0.hasPrefix("topic") ? $0 : nil } } == "topic (no upstream)")
        try w.write(w.path("topic-only.txt"), "t\n")
        try w.git(["add", "topic-only.txt"])
        try w.git(["commit", "-q", "-m", "topic"])
        try w.wait(c, "topic-only.txt", "pending", message: "no upstream")
        try w.git(["checkout", "-q", "main"])
        try w.wait(c, "a.txt", "synced")
        try w.poll(c, "topic-only.txt gone") { () -> Bool? in
            do { _ = try c.status(w.path("topic-only.txt")); return nil } catch ClientError.server(code: "not-found", _) { return true }
        }
        try w.waitSettled(c)
    }

    @Test func daemonAndAdapterRestartsAreRecovered() throws {
        let w = try GitWorld()
        var c = try w.daemon.connect()
        try w.waitSettled(c)
        try w.daemon.restart()
        c = try w.daemon.connect()
        try w.poll(c, "the root claimed again") {
            try c.request("ROOTS", [], timeout: 15).data.first { $0.path == w.clone && $0.option("provider") == "git" }
        }
        try w.write(w.path("a.txt"), "after the daemon's restart\n")
        try w.wait(c, "a.txt", "pending", message: "modified")
        try w.git(["commit", "-q", "-a", "-m", "after restart"])
        try w.wait(c, "a.txt", "pending", message: "not pushed: 1 commit")

        // The adapter killed; git moves on meanwhile; a new adapter finds git's truth.
        w.adapter?.stop(signal: SIGKILL)
        try w.git(["push", "-q"])
        try w.write(w.path("docs/guide.md"), "edited while no adapter ran\n")
        try w.start()
        try w.wait(c, "a.txt", "synced")
        try w.wait(c, "docs/guide.md", "pending", message: "modified")
    }

    /// `syncbadge-git add` and `remove` edit the list; a running adapter follows it.
    @Test func listOfRepositoriesIsFollowed() throws {
        let w = try GitWorld(startAdapter: false)
        let c = try w.daemon.connect()
        try w.start(arguments: [])
        let added = try runGitAdapter(["add", w.path("docs")], environment: w.environment)
        #expect(added.status == 0)
        #expect(added.out.contains("added \(w.clone)"))
        let file = w.home + "/.config/syncbadge/git-repos"
        #expect(try String(contentsOfFile: file, encoding: .utf8) == w.clone + "\n")
        #expect(try runGitAdapter(["add", w.clone], environment: w.environment).out.contains("already"))
        try w.waitSettled(c)
        let removed = try runGitAdapter(["remove", w.clone], environment: w.environment)
        #expect(removed.status == 0)
        try w.poll(c, "the root no longer claimed") {
            try c.request("ROOTS", [], timeout: 15).data.first { $0.path == w.clone && $0.option("provider") == nil }
        }
        #expect(try runGitAdapter(["remove", w.clone], environment: w.environment).status == 1)
        let notRepo = try runGitAdapter(["add", w.daemon.temp.path], environment: w.environment)
        #expect(notRepo.status != 0)
    }

    /// A repository git cannot read: `error` on the root with git's message, until it can again.
    @Test func unreadableRepositoryIsAnError() throws {
        let w = try GitWorld()
        let c = try w.daemon.connect()
        try w.waitSettled(c)
        let head = w.path(".git/HEAD")
        let saved = try String(contentsOfFile: head, encoding: .utf8)
        try touchFile(head, "not a ref\n")
        let broken = try w.wait(c, "", "error")
        #expect(broken.message?.contains("not a git repository") == true)
        #expect(try c.status(w.path("a.txt")).state == .synced)
        try touchFile(head, saved)
        try w.waitSettled(c)
    }

    /// "Show log" answers with the file's commits; "Stage" and "Unstage" run git.
    @Test func itemActions() throws {
        let w = try GitWorld()
        let c = try w.daemon.connect()
        try w.waitSettled(c)
        let file = Array(w.path("a.txt").utf8)
        if c.capabilities.contains("action-reply") {
            let log = try c.request("ACTION", [.word("git.log"), .path(file), .word("reply=1")], timeout: 15)
            #expect(log.ok.option("message")?.contains("first") == true)
        }
        try w.write(w.path("a.txt"), "changed\n")
        try w.wait(c, "a.txt", "pending", message: "modified")
        _ = try c.request("ACTION", [.word("git.stage"), .path(file)], timeout: 15)
        try w.wait(c, "a.txt", "pending", message: "staged")
        _ = try c.request("ACTION", [.word("git.unstage"), .path(file)], timeout: 15)
        try w.wait(c, "a.txt", "pending", message: "modified")
    }
}

import Foundation
import Testing
@_spi(Wire) import SyncBadgeClient

/// The `syncbadge` executable: output, exit codes and error messages.
@Suite struct CLITests {
    @Test func noDaemonExits69WithAHint() throws {
        let temp = try TempDir()
        let r = try runCLI(["status", "--no-spawn", "--socket", temp.sub("none.sock")])
        #expect(r.status == 69)
        #expect(r.err.contains("no daemon answers on \(temp.sub("none.sock"))"))
        #expect(r.err.contains("syncbadged"))
    }

    @Test func usageErrorsExit64() throws {
        #expect(try runCLI(["status", "--no-such-flag"]).status == 64)
        #expect(try runCLI(["frobnicate"]).status == 64)
        #expect(try runCLI(["add"]).status == 64)
    }

    /// `--socket`, `--no-spawn` and `--json` may stand before the subcommand, as git's `-C` does,
    /// with the same result as after it.
    @Test func optionsEverySubcommandTakesMayComeFirst() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["f"])
        let after = try runCLI(["roots", "--socket", d.socket])
        #expect(after.status == 0 && after.out.contains(root))
        let first = try runCLI(["--socket", d.socket, "roots"])
        #expect(first == after)
        let joined = try runCLI(["--socket=\(d.socket)", "roots"])
        #expect(joined == after)
        let status = try runCLI(["--no-spawn", "--socket", d.socket, "status", root])
        let statusAfter = try runCLI(["status", root, "--socket", d.socket])
        #expect(status.status == 0 && status == statusAfter)
        let json = try runCLI(["--json", "--socket", d.socket, "ls", root])
        let jsonAfter = try runCLI(["ls", root, "--json", "--socket", d.socket])
        #expect(json.status == 0 && json == jsonAfter)
        #expect(json.out.hasPrefix("{\"path\":\"\(root)/f\""))
        // Only where the subcommand takes it: `add` has no --json.
        let wrong = try runCLI(["--json", "--socket", d.socket, "add", root])
        #expect(wrong.status == 64 && wrong.err.contains("--json"))
        // A word that is no subcommand is what the error names, not the option before it.
        let unknown = try runCLI(["--socket", d.socket, "stats"])
        #expect(unknown.status == 64 && unknown.err.contains("stats") && !unknown.err.contains("--socket"), "\(unknown)")
        // Without a daemon, --no-spawn before the subcommand still holds.
        let none = try runCLI(["--no-spawn", "--socket", d.temp.sub("none.sock"), "status"])
        #expect(none.status == 69)
        // The root's help says so.
        #expect(try runCLI(["--help"]).out.contains("syncbadge --socket S roots"))
    }

    @Test func addStatusLsAndExitStatus() throws {
        let d = try DaemonHarness()
        let dir = d.temp.sub("tree")
        try FileManager.default.createDirectory(atPath: dir + "/sub", withIntermediateDirectories: true)
        try touchFile(dir + "/file one")
        let add = try runCLI(["add", dir, "--socket", d.socket])
        #expect(add.status == 0)
        let status = try runCLI(["status", dir, "--socket", d.socket, "--exit-status"])
        #expect(status.status == 1)  // unknown is not synced
        #expect(status.out.contains("unknown"))
        #expect(!status.out.contains("\u{1B}["))  // not a terminal: no colour
        let ls = try runCLI(["ls", dir, "--socket", d.socket])
        #expect(ls.status == 0)
        let lines = ls.out.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines[0].hasSuffix("file one") && lines[0].contains("unknown"))
        #expect(lines[1].contains("sub/"))
        let json = try runCLI(["ls", dir, "--socket", d.socket, "--json"])
        #expect(json.out.contains("\"path\":\"\(dir)/file one\""))
        #expect(json.out.contains("\"kind\":\"dir\""))
        let obj = try JSONSerialization.jsonObject(with: Data(json.out.split(separator: "\n")[0].utf8)) as? [String: Any]
        #expect(obj?["state"] as? String == "unknown")
    }

    /// `status` with nothing but paths skips ArgumentParser (main.swift); what it prints, on
    /// either stream, and its exit code must be what the parsed command gives (`--` sends the
    /// same paths through the parser).
    @Test func theFastStatusPathMatchesTheParsedCommand() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a", "sub/b"])
        let env = ProcessInfo.processInfo.environment.merging(["SYNCBADGE_SOCKET": d.socket]) { $1 }
        for paths in [[root], [root + "/a", root + "/sub"], [root + "/sub/b", root + "/missing"], ["/"]] {
            let fast = try runCLI(["status"] + paths, environment: env)
            let parsed = try runCLI(["status", "--"] + paths, environment: env)
            #expect(fast.status == parsed.status, "\(paths)")
            #expect(fast.out == parsed.out, "\(paths)")
            #expect(fast.err == parsed.err, "\(paths)")
            #expect(!(fast.out + fast.err).isEmpty, "\(paths)")
        }
        #expect(try runCLI(["status", root + "/missing"], environment: env).status == 1)
    }

    @Test func errorsNameThePathAndTheReason() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["a"])
        let missing = try runCLI(["status", root + "/missing", "--socket", d.socket])
        #expect(missing.status == 1)
        #expect(missing.err.contains(root + "/missing") && missing.err.contains("not found"))
        let notDir = try runCLI(["ls", root + "/a", "--socket", d.socket])
        #expect(notDir.status == 1 && notDir.err.contains("not a directory"))
        let outside = try runCLI(["ls", "/", "--socket", d.socket])
        #expect(outside.status == 1 && outside.err.contains("not inside any registered root"))
    }

    @Test func relativePathsAreResolvedAgainstTheCurrentDirectory() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["x/y.txt"])
        let r = try runCLI(["status", "y.txt", "--json", "--socket", d.socket], in: root + "/x")
        #expect(r.status == 0)
        #expect(r.out.contains("\"path\":\"\(root)/x/y.txt\""))
    }

    @Test func watchPrintsPushedChangesWithoutATerminal() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot()
        let watch = try ChildProcess(Products.cli, ["watch", root, "--socket", d.socket], watching: .standardOutput)
        let out = watch.output
        #expect(out.wait(for: "watching \(root)"))
        try touchFile(root + "/hello.txt")
        #expect(out.wait(for: "pending  \(root)/hello.txt"))
        // A restart in the middle: the watch waits for the daemon and carries on by itself.
        try d.restart()
        #expect(out.wait(for: "waiting for it to come back"))
        #expect(out.wait(for: "watching \(root) (1 entries)"))
        try touchFile(root + "/after-restart.txt")
        #expect(out.wait(for: "pending  \(root)/after-restart.txt"))
        watch.stop()
    }

    @Test func changesFollowCarriesOnAcrossARestart() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot(files: ["before.txt"])
        let changes = try ChildProcess(Products.cli, ["changes", root, "--follow", "--socket", d.socket], watching: .standardOutput)
        let out = changes.output
        try touchFile(root + "/one.txt")
        #expect(out.wait(for: "\(root)/one.txt\n"))
        d.stop()
        // Changed while no daemon ran: found by the rescan at start and listed again.
        try touchFile(root + "/offline.txt")
        try d.start()
        #expect(out.wait(for: "\(root)/offline.txt\n"))
        try touchFile(root + "/two.txt")
        #expect(out.wait(for: "\(root)/two.txt\n"))
        changes.stop()
    }

    /// The daemons running on a socket, by their command lines.
    func daemons(on socket: String) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { e -> pid_t? in
            guard let pid = pid_t(e), let cmd = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(e)/cmdline")) else { return nil }
            let args = cmd.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            return args.first?.hasSuffix("syncbadged") == true && args.contains(socket) ? pid : nil
        }
    }

    @Test func clientsStartTheDaemonOnDemandAndARaceEndsWithOne() throws {
        let temp = try TempDir()
        let socket = temp.sub("run/daemon.sock")
        var env = ProcessInfo.processInfo.environment
        env["XDG_STATE_HOME"] = temp.sub("state")
        defer { for pid in daemons(on: socket) { kill(pid, SIGKILL) } }
        let racers = (0..<2).map { _ -> Process in
            let p = Process()
            p.executableURL = Products.cli
            p.arguments = ["roots", "--json", "--socket", socket]
            p.environment = env
            p.standardOutput = FileHandle.nullDevice
            return p
        }
        for p in racers { try p.run() }
        for p in racers { p.waitUntilExit() }
        #expect(racers.map(\.terminationStatus) == [0, 0])
        // Both clients may have spawned a daemon; the one that lost the lock may still be
        // starting when the clients are done (under load), and exits once it reaches the lock.
        let running = waitForExits(of: daemons(on: socket), untilAtMost: 1, timeout: 10)
        #expect(running.count == 1, "daemons: \(running)")
        #expect(FileManager.default.fileExists(atPath: temp.sub("state/syncbadge/syncbadged.log")))
        // Once it runs, clients use it.
        #expect(try runCLI(["roots", "--no-spawn", "--socket", socket]).status == 0)
    }

    @Test func theBridgeRelaysTheProtocol() throws {
        let d = try DaemonHarness()
        let input = Pipe()
        let bridge = try ChildProcess(Products.cli, ["bridge", "--no-spawn", "--socket", d.socket], watching: .standardOutput, input: input)
        let out = bridge.output
        input.fileHandleForWriting.write(Data("1 HELLO proto=1 role=viewer name=bash\n2 PING\n".utf8))
        #expect(out.wait(for: "2 OK"))
        #expect(out.text.withLock { $0 }.hasPrefix("1 OK proto=1"))
        // The daemon going away ends the bridge.
        d.stop()
        bridge.process.waitUntilExit()
        #expect(bridge.log.contains("* BYE shutdown"))
    }

    @Test func porcelainIsStableAndZeroTerminatedWithZ() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot()
        try createFile(dir: root, name: Array("new\nline".utf8))
        let admin = try d.connect(role: .admin)
        _ = try admin.request("REMOVE-ROOT", [.path(Array(root.utf8))])
        _ = try admin.request("ADD-ROOT", [.path(Array(root.utf8))])
        let file = root + "/new\nline"
        let plain = try runCLI(["status", "--porcelain", root, file, "--socket", d.socket])
        #expect(plain.status == 0)
        #expect(plain.out == "unknown\tunknown\t\(root)\nunknown\tunknown\t\(root)/new%0Aline\n")
        let z = try runCLI(["status", "--porcelain", "-z", file, "--socket", d.socket])
        #expect(z.out == "unknown\tunknown\t\(file)\0")
        #expect(try runCLI(["status", "-z", root, "--socket", d.socket]).status == 64)
    }
}

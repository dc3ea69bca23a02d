import Foundation
import Testing
import SyncBadgeClient

/// The `syncbadge` executable: output, exit codes and error messages.
@Suite struct CLITests {
    @Test func noDaemonExits69WithAHint() throws {
        let temp = try TempDir()
        let r = try runCLI(["status", "--socket", temp.sub("none.sock")])
        #expect(r.status == 69)
        #expect(r.err.contains("no daemon answers on \(temp.sub("none.sock"))"))
        #expect(r.err.contains("syncbadged"))
    }

    @Test func usageErrorsExit64() throws {
        #expect(try runCLI(["status", "--no-such-flag"]).status == 64)
        #expect(try runCLI(["frobnicate"]).status == 64)
        #expect(try runCLI(["add"]).status == 64)
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
        let p = Process()
        p.executableURL = Products.cli
        p.arguments = ["status", "y.txt", "--json", "--socket", d.socket]
        p.currentDirectoryURL = URL(fileURLWithPath: root + "/x")
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        #expect(String(decoding: data, as: UTF8.self).contains("\"path\":\"\(root)/x/y.txt\""))
    }

    @Test func watchPrintsPushedChangesWithoutATerminal() throws {
        let d = try DaemonHarness()
        let root = try d.addRoot()
        let p = Process()
        p.executableURL = Products.cli
        p.arguments = ["watch", root, "--socket", d.socket]
        let pipe = Pipe()
        p.standardOutput = pipe
        try p.run()
        try? pipe.fileHandleForWriting.close()
        let out = OutputWatcher(pipe.fileHandleForReading)
        #expect(out.wait(for: "watching \(root)"))
        try touchFile(root + "/hello.txt")
        #expect(out.wait(for: "pending  \(root)/hello.txt"))
        d.stop()
        #expect(out.wait(for: "daemon said goodbye"))
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
    }
}

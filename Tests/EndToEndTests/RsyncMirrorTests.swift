#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@_spi(Wire) import SyncBadgeClient
import SyncBadgeCore

/// The example engine `Examples/providers/rsync-mirror/rsync_mirror.py` against the real daemon:
/// one daemon, one root, one mirror directory and one engine process per test. Tests wait on
/// pushes from an observing viewer and on the engine's log lines, with deadlines; never on sleeps.
final class RsyncMirrorFixture {
    static let script = Products.repository.appendingPathComponent("Examples/providers/rsync-mirror/rsync_mirror.py").path
    static let engineName = "rsync-mirror-test"

    /// python3 and rsync on the PATH: the engine needs both.
    static var available: Bool { toolsOnPath(["python3", "rsync"]) }

    let d: DaemonHarness
    let root: String
    let mirror: String
    var viewer: Connection
    var engine: ChildProcess?

    /// A root holding `files` (each "x"), and a mirror directory holding `mirrorFiles`.
    init(files: [String], mirrorFiles: [String: String] = [:]) throws {
        d = try DaemonHarness()
        root = try d.addRoot(files: files)
        mirror = d.temp.sub("mirror")
        try FileManager.default.createDirectory(atPath: mirror, withIntermediateDirectories: true)
        for (name, contents) in mirrorFiles {
            let path = mirror + "/" + name
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try touchFile(path, contents)
        }
        viewer = try d.connect(name: "rsync-test-viewer")
        _ = try viewer.request("OBSERVE", [.path(Array(root.utf8))])
    }

    /// Starts the engine and waits for its first reconcile; with `binFirst`, that directory comes
    /// first on its PATH (a stand-in for rsync).
    func startEngine(binFirst: String? = nil) throws {
        let path = binFirst.map { ["PATH=\($0):\(ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")"] } ?? []
        let e = try ChildProcess(URL(fileURLWithPath: "/usr/bin/env"),
                                 path + ["python3", Self.script, "--socket", d.socket, "--state-dir", d.temp.sub("engine-state"),
                                  "--debounce", "0.1", "--name", Self.engineName, root, mirror])
        engine = e
        guard e.output.wait(for: "reconciled") else {
            throw HarnessError(description: "the engine did not reconcile: \(engineLog)")
        }
    }

    var engineLog: String { engine?.log ?? "" }

    /// Waits for the engine to log a line containing `needle`.
    func waitLog(_ needle: String) throws {
        guard engine?.output.wait(for: needle) == true else {
            throw HarnessError(description: "the engine never logged \"\(needle)\"; it logged:\n\(engineLog)")
        }
    }

    deinit { engine?.terminate(grace: 10) }

    /// Waits for the root's roll-up to reach `state` (pushed as `* ITEM <root> <state>`). Call it
    /// after waiting for a push caused by the change at hand: pushes from before may still be
    /// queued, including an older `synced` one.
    func waitRoot(_ state: String, _ what: String) throws {
        try viewer.waitForPush(timeout: 20, what) { $0.kind == "ITEM" && $0.path == self.root && $0.fields[1].string == state }
    }

    /// Waits for a direct child of the root to be pushed in `state`.
    func waitChild(_ name: [UInt8], _ state: String) throws {
        let path = Array(root.utf8) + [UInt8(ascii: "/")] + name
        try viewer.waitForPush(timeout: 20, "\(PathBytes.display(name)) \(state)") {
            $0.kind == "ITEM" && $0.fields.first?.bytes == path && $0.fields[1].string == state
        }
    }

    func waitChild(_ name: String, _ state: String) throws { try waitChild(Array(name.utf8), state) }

    func action(_ id: String, _ names: [String]) throws {
        _ = try viewer.request("ACTION", [.word(id)] + names.map { .path(Array((root + "/" + $0).utf8)) }, timeout: 15)
    }

    func state(_ name: String) throws -> Item { try viewer.status(root + "/" + name) }

    func mirrorText(_ name: String) -> String? { try? String(contentsOfFile: mirror + "/" + name, encoding: .utf8) }
    func localText(_ name: String) -> String? { try? String(contentsOfFile: root + "/" + name, encoding: .utf8) }
}

/// Reads a file named by raw bytes (any Linux name).
func readFile(bytes path: [UInt8]) -> [UInt8]? {
    let fd = (path + [0]).withUnsafeBufferPointer { buf in
        buf.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buf.count) { open($0, O_RDONLY) }
    }
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var out: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n <= 0 { return n == 0 ? out : nil }
        out += chunk[0..<n]
    }
}

func inode(_ path: String) -> UInt64? {
    var st = stat()
    return lstat(path, &st) == 0 ? UInt64(st.st_ino) : nil
}

@Suite(.enabled(if: RsyncMirrorFixture.available, "needs python3 and rsync"))
struct RsyncMirrorTests {
    @Test func reconcileReportsIdenticalFilesAndCopiesTheRest() throws {
        let f = try RsyncMirrorFixture(
            files: ["same.txt", "diff.txt", "missing.txt", "sub/deep.txt", "sub/new/leaf.txt"],
            mirrorFiles: ["same.txt": "x", "diff.txt": "the mirror's older text", "sub/deep.txt": "x"])
        let sameInode = inode(f.mirror + "/same.txt")
        try f.startEngine()
        try f.waitRoot("synced", "root synced after reconcile")
        for name in ["same.txt", "diff.txt", "missing.txt", "sub/deep.txt", "sub/new/leaf.txt", "sub", "sub/new"] {
            #expect(try f.state(name).state == .synced, "\(name)")
        }
        for name in ["same.txt", "diff.txt", "missing.txt", "sub/deep.txt", "sub/new/leaf.txt"] {
            #expect(f.mirrorText(name) == "x", "\(name) mirrored")
        }
        // An identical file is reported, not copied again.
        #expect(inode(f.mirror + "/same.txt") == sameInode)
        #expect(f.engineLog.contains("syncing \(f.root)/diff.txt"))
        #expect(!f.engineLog.contains("syncing \(f.root)/same.txt"))
    }

    @Test func createsEditsDeletesAndRenamesFlowThrough() throws {
        let f = try RsyncMirrorFixture(files: ["a.txt", "b.txt"])
        try f.startEngine()
        try f.waitRoot("synced", "root synced after reconcile")
        // A new file: pending, then (syncing and) synced, its content mirrored.
        try touchFile(f.root + "/new file.txt", "hello")
        try f.waitChild("new file.txt", "pending")
        try f.waitChild("new file.txt", "synced")
        #expect(f.mirrorText("new file.txt") == "hello")
        try f.waitLog("syncing \(f.root)/new%20file.txt")
        // An edit.
        try touchFile(f.root + "/a.txt", "version 2")
        try f.waitChild("a.txt", "pending")
        try f.waitRoot("synced", "root synced after the edit")
        #expect(f.mirrorText("a.txt") == "version 2")
        // Any file name: a newline and a byte that is not UTF-8.
        let odd: [UInt8] = Array("odd\nname".utf8) + [0xFF]
        try createFile(dir: f.root, name: odd, contents: "bytes")
        try f.waitChild(odd, "synced")
        #expect(readFile(bytes: Array((f.mirror + "/").utf8) + odd) == Array("bytes".utf8))
        // A deletion: the mirror copy goes and the tombstone is dropped.
        try FileManager.default.removeItem(atPath: f.root + "/a.txt")
        try f.viewer.waitForPush { $0.kind == "GONE" && $0.path == f.root + "/a.txt" }
        try f.waitRoot("synced", "root synced after the delete")
        #expect(!FileManager.default.fileExists(atPath: f.mirror + "/a.txt"))
        #expect(throws: ClientError.server(code: "not-found", message: f.root + "/a.txt")) { try f.state("a.txt") }
        // A rename moves the file in the mirror.
        try FileManager.default.moveItem(atPath: f.root + "/b.txt", toPath: f.root + "/c.txt")
        try f.viewer.waitForPush { $0.kind == "GONE" && $0.path == f.root + "/b.txt" }
        try f.waitRoot("synced", "root synced after the rename")
        #expect(f.mirrorText("c.txt") == "x")
        #expect(!FileManager.default.fileExists(atPath: f.mirror + "/b.txt"))
        #expect(try f.state("c.txt").state == .synced)
        #expect(throws: ClientError.self) { try f.state("b.txt") }
    }

    @Test func aFailedCopyIsAnErrorWithRsyncsMessage() throws {
        let f = try RsyncMirrorFixture(files: ["ok.txt"])
        try f.startEngine()
        try f.waitRoot("synced", "root synced after reconcile")
        // A non-empty directory in the mirror where the file must go: rsync refuses to delete
        // it without --force, which stops root as surely as anyone (chmod does not stop root).
        try FileManager.default.createDirectory(atPath: f.mirror + "/blocked.txt/inner", withIntermediateDirectories: true)
        try touchFile(f.mirror + "/blocked.txt/inner/keep", "precious")
        try touchFile(f.root + "/blocked.txt", "data")
        try f.waitChild("blocked.txt", "error")
        let item = try f.state("blocked.txt")
        #expect(item.state == .error)
        #expect(item.message?.isEmpty == false)
        #expect(try f.viewer.status(f.root).state == .error)
        #expect(f.mirrorText("blocked.txt/inner/keep") == "precious")
        try f.waitLog("rsync failed for \(f.root)/blocked.txt")
        // Out of the way, the next change syncs.
        try FileManager.default.removeItem(atPath: f.mirror + "/blocked.txt")
        try touchFile(f.root + "/blocked.txt", "data, again")
        try f.waitChild("blocked.txt", "pending")
        try f.waitRoot("synced", "root synced after the fix")
        #expect(f.mirrorText("blocked.txt") == "data, again")
        // Where permissions do stop the user, a read-only mirror is an error too.
        if geteuid() != 0 {
            chmod(f.mirror, 0o555)
            defer { chmod(f.mirror, 0o755) }
            try touchFile(f.root + "/readonly.txt", "r")
            try f.waitChild("readonly.txt", "error")
            #expect(try f.state("readonly.txt").message?.isEmpty == false)
        }
    }

    @Test func aMirrorChangedOnBothSidesIsAConflictUntilResolved() throws {
        let f = try RsyncMirrorFixture(files: ["conf.txt", "keep.txt"])
        try f.startEngine()
        try f.waitRoot("synced", "root synced after reconcile")
        // Someone edits the mirror copy; the user edits the local file differently.
        try touchFile(f.mirror + "/conf.txt", "mirror edit")
        try touchFile(f.root + "/conf.txt", "local edit")
        try f.waitChild("conf.txt", "conflict")
        #expect(f.mirrorText("conf.txt") == "mirror edit")
        #expect(f.localText("conf.txt") == "local edit")
        #expect(try f.state("conf.txt").message?.isEmpty == false)
        // The provider's menu offers the resolutions for a conflicted selection.
        let menu = try f.viewer.request("MENU", [.word("items"), .path(Array((f.root + "/conf.txt").utf8))]).data
        let ids = menu.compactMap { $0.fields.first?.string }
        #expect(ids.contains("sync.keep-local") && ids.contains("sync.keep-mirror") && ids.contains("sync.now"))
        #expect(!ids.contains("sync.last-error"))
        // Keep local: the local file goes over the mirror copy.
        try f.action("sync.keep-local", ["conf.txt"])
        try f.waitChild("conf.txt", "synced")
        #expect(f.mirrorText("conf.txt") == "local edit")
        try f.waitLog("resolved \(f.root)/conf.txt: kept local")

        // Keep mirror: the mirror copy comes back over the local file, and stays synced.
        try touchFile(f.mirror + "/keep.txt", "mirror wins")
        try touchFile(f.root + "/keep.txt", "local loses")
        try f.waitChild("keep.txt", "conflict")
        try f.action("sync.keep-mirror", ["keep.txt"])
        try f.waitChild("keep.txt", "synced")
        #expect(f.localText("keep.txt") == "mirror wins")
        #expect(f.mirrorText("keep.txt") == "mirror wins")
        // Later work goes through, and the engine's own write did not make keep.txt pending.
        try touchFile(f.root + "/later.txt", "later")
        try f.waitChild("later.txt", "synced")
        try f.waitRoot("synced", "root synced after the resolutions")
        #expect(try f.state("keep.txt").state == .synced)
    }

    @Test func pauseSyncNowAndLastErrorActions() throws {
        let f = try RsyncMirrorFixture(files: ["a.txt"])
        try f.startEngine()
        try f.waitRoot("synced", "root synced after reconcile")
        let toolbar = try f.viewer.request("TOOLBAR").data
        #expect(toolbar.contains { $0.option("provider") == RsyncMirrorFixture.engineName && $0.option("name") == "Pause sync" })
        let menu = try f.viewer.request("MENU", [.word("toolbar"), .path(Array(f.root.utf8))]).data
        #expect(menu.contains { $0.fields.first?.string == "sync.pause-resume" })
        // Paused: changes wait, and the root stays pending.
        _ = try f.viewer.request("ACTION", [.word("sync.pause-resume"), .path(Array(f.root.utf8))])
        try f.waitLog("paused: changes wait")
        try touchFile(f.root + "/held.txt", "held")
        try f.waitLog("paused: holding \(f.root)/held.txt")
        #expect(try f.state("held.txt").state == .pending)
        #expect(try f.viewer.status(f.root).state == .pending)
        // "Sync now" syncs the selection, paused or not.
        try f.action("sync.now", ["held.txt"])
        try f.waitChild("held.txt", "synced")
        #expect(f.mirrorText("held.txt") == "held")
        try touchFile(f.root + "/later.txt", "later")
        try f.waitLog("paused: holding \(f.root)/later.txt")
        _ = try f.viewer.request("ACTION", [.word("sync.pause-resume"), .path(Array(f.root.utf8))])
        try f.waitLog("resumed")
        try f.waitChild("later.txt", "synced")
        #expect(f.mirrorText("later.txt") == "later")
        // "Show last error" logs rsync's whole complaint and puts it in the message.
        try FileManager.default.createDirectory(atPath: f.mirror + "/bad.txt/inner", withIntermediateDirectories: true)
        try touchFile(f.mirror + "/bad.txt/inner/f", "x")
        try touchFile(f.root + "/bad.txt", "bad")
        try f.waitChild("bad.txt", "error")
        let ids = try f.viewer.request("MENU", [.word("items"), .path(Array((f.root + "/bad.txt").utf8))]).data.compactMap { $0.fields.first?.string }
        #expect(ids.contains("sync.last-error") && !ids.contains("sync.keep-local"))
        try f.action("sync.last-error", ["bad.txt"])
        try f.waitLog("last error for \(f.root)/bad.txt: ")
        #expect(try f.state("bad.txt").message?.isEmpty == false)
    }

    /// Protocol 1.2: a client that asks with `reply=1` gets what the engine did, or `ERR failed`
    /// with what went wrong; the toolbar item says what a click does now, pushed as it changes.
    @Test func actionsAnswerTheClientThatAsks() throws {
        let f = try RsyncMirrorFixture(files: ["a.txt"])
        try f.startEngine()
        try f.waitRoot("synced", "root synced after reconcile")
        let root = RequestField.path(Array(f.root.utf8))
        let paused = try f.viewer.request("ACTION", [.word("sync.pause-resume"), root, .option("reply", "1")], timeout: 15)
        #expect(paused.ok.option("message") == "paused: changes wait until resumed")
        _ = try f.viewer.waitForPush(timeout: 10, "* TOOLBAR Resume sync") {
            $0.kind == "TOOLBAR" && $0.option("name") == "Resume sync" && $0.option("provider") == RsyncMirrorFixture.engineName
        }
        #expect(try f.viewer.request("MENU", [.word("toolbar"), root]).data.first?.option("title") == "Resume sync")
        // "Sync now" of a file the mirror cannot take (a directory stands there): ERR failed,
        // with rsync's complaint.
        try FileManager.default.createDirectory(atPath: f.mirror + "/bad.txt/inner", withIntermediateDirectories: true)
        try touchFile(f.mirror + "/bad.txt/inner/f", "x")
        try touchFile(f.root + "/bad.txt", "bad")
        try f.waitLog("paused: holding \(f.root)/bad.txt")
        do {
            _ = try f.viewer.request("ACTION", [.word("sync.now"), .path(Array((f.root + "/bad.txt").utf8)), .option("reply", "1")],
                                     timeout: 15)
            Issue.record("Sync now of bad.txt did not fail")
        } catch let ClientError.server(code, message) {
            #expect(code == "failed")
            #expect(message?.hasPrefix("rsync failed for \(f.root)/bad.txt: ") == true, "\(message ?? "no message")")
        }
        // "Show last error", answered with the whole complaint.
        let last = try f.viewer.request("ACTION", [.word("sync.last-error"), .path(Array((f.root + "/bad.txt").utf8)),
                                                   .option("reply", "1")], timeout: 15)
        #expect(last.ok.option("message")?.hasPrefix("\(f.root)/bad.txt: ") == true)
        // Resumed, and the item says so again.
        let resumed = try f.viewer.request("ACTION", [.word("sync.pause-resume"), root, .option("reply", "1")], timeout: 15)
        #expect(resumed.ok.option("message") == "resumed")
        _ = try f.viewer.waitForPush(timeout: 10, "* TOOLBAR Pause sync") { $0.kind == "TOOLBAR" && $0.option("name") == "Pause sync" }
        // "Sync now" of a good file answers what it synced.
        try touchFile(f.root + "/good.txt", "good")
        try f.waitChild("good.txt", "synced")
        let good = try f.viewer.request("ACTION", [.word("sync.now"), .path(Array((f.root + "/good.txt").utf8)), .option("reply", "1")],
                                        timeout: 15)
        #expect(good.ok.option("message") == "synced \(f.root)/good.txt")
        // Without reply=1 the engine answers nothing, as before: OK once delivered.
        #expect(try f.viewer.request("ACTION", [.word("sync.now"), .path(Array((f.root + "/good.txt").utf8))], timeout: 15).ok
            .option("message") == nil)
    }

    /// Stopped (SIGTERM: `systemctl stop`, a logout) while rsync copies, the engine stops the copy
    /// and exits at once, rather than wait for a copy that may take hours, or for the end of a
    /// file list rsync may never get. The stand-in rsync copies nothing once `hang` exists: it
    /// says its pid in the engine's log (the engine's standard error, its parent's) and waits,
    /// stdin and stderr open, as a long transfer does.
    @Test func sigtermStopsACopyUnderWay() throws {
        let f = try RsyncMirrorFixture(files: ["a.txt"])
        let bin = f.d.temp.sub("bin")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        try touchFile(bin + "/rsync", """
            #!/bin/sh
            if [ -e "\(bin)/hang" ]; then echo "stand-in rsync pid=$$." > /proc/$PPID/fd/2; exec sleep 600; fi
            exec "\(installed("rsync") ?? "/usr/bin/rsync")" "$@"

            """)
        #expect(chmod(bin + "/rsync", 0o755) == 0)
        try f.startEngine(binFirst: bin)
        try f.waitRoot("synced", "root synced after reconcile")
        try touchFile(bin + "/hang", "")
        try touchFile(f.root + "/long.txt", "a long copy")
        try f.waitLog("stand-in rsync pid=")
        let said = f.engineLog.components(separatedBy: "stand-in rsync pid=").last?.prefix { $0 != "." }
        guard let said, let pid = pid_t(said) else {
            Issue.record("no pid in the engine's log:\n\(f.engineLog)")
            return
        }
        f.engine?.terminate(grace: 10)      // fails the test unless it exits within 10 s
        // Its child is gone with it (reaped by the engine, which waits for it before exiting).
        let running = kill(pid, 0) == 0
        #expect(!running, "rsync (pid \(pid)) still runs after the engine exited; the engine logged:\n\(f.engineLog)")
        if running { kill(pid, SIGKILL) }
    }

    @Test func reconnectsAfterTheDaemonRestarts() throws {
        let f = try RsyncMirrorFixture(files: ["a.txt"])
        try f.startEngine()
        try f.waitRoot("synced", "root synced after reconcile")
        try f.d.restart()
        let epoch = try f.d.connect().epoch
        // A new daemon: the engine reconnects (with backoff), claims again and reconciles.
        try f.waitLog("epoch=\(epoch)")
        f.viewer = try f.d.connect(name: "rsync-test-viewer")
        _ = try f.viewer.request("OBSERVE", [.path(Array(f.root.utf8))])
        #expect(try f.viewer.request("ROOTS").data.first?.option("provider") == RsyncMirrorFixture.engineName)
        try touchFile(f.root + "/after.txt", "after the restart")
        try f.waitChild("after.txt", "synced")
        #expect(f.mirrorText("after.txt") == "after the restart")
        #expect(try f.viewer.status(f.root).state == .synced)
    }
}

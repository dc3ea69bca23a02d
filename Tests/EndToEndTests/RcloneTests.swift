#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@_spi(Wire) import SyncBadgeClient
import SyncBadgeCore

/// `syncbadge-rclone` against Debian's real rclone, mounting a local directory (the "cloud")
/// over FUSE with a VFS cache and a bandwidth limit. Not skipped where FUSE is missing: the
/// harness fails, saying so. One mount at a time: each uploads at a limited rate.
@Suite(.serialized)
struct RcloneEndToEndTests {
    /// 8 MB: rclone lets about 4 MB through at once, the rest at --bwlimit 2M, so the upload
    /// is seen `syncing` for about 2 s.
    static let size = 8_000_000

    /// A mount followed by the adapter, and a file of `size` bytes written to it, seen uploading.
    static func uploading(_ name: String) throws -> (RcloneMount, Connection, String) {
        let m = try RcloneMount()
        let c = try m.daemon.connect()
        try m.waitUntilFollowed(c)
        let path = m.mountPoint + "/" + name
        try RcloneMount.bytes(size).write(to: URL(fileURLWithPath: path))
        try c.waitForState(path, "syncing", timeout: 20, diagnostics: m.diagnostics) { $0.state == .syncing }
        return (m, c, path)
    }

    /// `ACTION id path reply=1` is answered `ERR failed` with a message containing `text`.
    func expectFailedAnswer(_ c: Connection, _ id: String, _ path: String, saying text: String) throws {
        do {
            let r = try c.request("ACTION", [.word(id), .path(Array(path.utf8)), .option("reply", "1")], timeout: 15)
            Issue.record("\(id) answered OK (\(r.ok.option("message") ?? "")), not failed")
        } catch ClientError.server(let code, let message) {
            #expect(code == "failed")
            #expect(message?.contains(text) == true, "\(message ?? "")")
        }
    }

    func describe(_ items: [Item]) -> String {
        items.map { "\($0.state.map { "\($0)" } ?? "-")\($0.progress.map { "(\($0))" } ?? "")" }.joined(separator: " ")
    }

    @Test func writeGoesPendingThenSyncingThenSynced() throws {
        let m = try RcloneMount()
        let c = try m.daemon.connect()
        try m.waitUntilFollowed(c)
        let path = m.mountPoint + "/big.bin"
        let bytes = RcloneMount.bytes(Self.size)
        try bytes.write(to: URL(fileURLWithPath: path))
        let seen = try c.states(of: path, diagnostics: m.diagnostics) { $0.state == .synced }
        // In this order: written, queued for upload, uploading with progress, uploaded.
        let states = seen.compactMap(\.state)
        let firstSyncing = try #require(states.firstIndex(of: .syncing), "never syncing: \(describe(seen))\n\(m.diagnostics())")
        #expect(states[..<firstSyncing].contains(.pending), "\(describe(seen))")
        #expect(seen.contains { $0.state == .syncing && ($0.progress ?? 0) > 0 }, "\(describe(seen))")
        #expect(!states[firstSyncing...].contains(.pending), "\(describe(seen))")
        #expect(seen.last?.badge == "rclone-local")
        #expect(try Data(contentsOf: URL(fileURLWithPath: m.remoteDir + "/big.bin")) == bytes)
        // The root rolls up to synced, and the toolbar says nothing is left.
        try c.waitForState(m.mountPoint, "the root synced", diagnostics: m.diagnostics) { $0.state == .synced && $0.counts?[.syncing] ?? 0 == 0 }
        // The toolbar item is defined on the adapter's other connection: its push may come
        // after the file's state.
        let toolbar = try c.request(.toolbar, timeout: 15).data.first { $0.option("provider") == "rclone" }
        if toolbar?.option("name") != m.remoteDir {
            try c.waitForPush(timeout: 15, "the toolbar with nothing left") { $0.kind == "TOOLBAR" && $0.option("name") == m.remoteDir }
        }
    }

    @Test func editDuringUploadEndsSyncedWithTheLastContent() throws {
        let (m, c, path) = try Self.uploading("doc.bin")
        // rclone cancels the running upload ("context canceled") and queues the file again.
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try h.seekToEnd()
        try h.write(contentsOf: Data("the last words".utf8))
        try h.close()
        let last = try Data(contentsOf: URL(fileURLWithPath: path))
        let seen = try c.states(of: path, timeout: 40, diagnostics: m.diagnostics) { $0.state == .synced }
        #expect(!seen.contains { $0.state == .error }, "\(describe(seen))")
        #expect(try Data(contentsOf: URL(fileURLWithPath: m.remoteDir + "/doc.bin")) == last)
        // Synced for the generation of the last write: no write came after it.
        #expect(try c.status(path).gen == seen.last?.gen)
    }

    /// A union of two read-only upstreams: rclone accepts the write into its cache, and each
    /// upload fails with "permission denied" (and is retried).
    @Test func readOnlyRemoteShowsRclonesError() throws {
        let ro = try TempDir()
        for d in ["a", "b"] { try FileManager.default.createDirectory(atPath: ro.sub(d), withIntermediateDirectories: true) }
        let m = try RcloneMount(remote: ":union,upstreams='\(ro.sub("a")):ro \(ro.sub("b")):ro':")
        let c = try m.daemon.connect()
        try m.waitUntilFollowed(c)
        let path = m.mountPoint + "/refused.txt"
        try Data("no room up there".utf8).write(to: URL(fileURLWithPath: path))
        let item = try c.waitForState(path, "error", timeout: 20, diagnostics: m.diagnostics) { $0.state == .error }
        #expect(item.message == "permission denied", "\(m.diagnostics())")
        // "Show rclone's log line" says the same, from rclone's list of transfers.
        let r = try c.request("ACTION", [.word("rclone.log"), .path(Array(path.utf8)), .option("reply", "1")], timeout: 15)
        #expect(r.ok.option("message")?.contains("refused.txt: failed: permission denied") == true, "\(r.ok)")
        // Upload now needs vfs/queue-set-expiry (rclone 1.68): said unavailable on 1.60.
        try expectFailedAnswer(c, "rclone.upload-now", path, saying: "this rclone has no vfs/queue-set-expiry")
    }

    /// rclone stops (its mount goes) and mounts again: the adapter gives up its claim, claims
    /// the mount point again, and reports what is written after.
    @Test func rcloneRestart() throws {
        let m = try RcloneMount()
        let c = try m.daemon.connect()
        try m.waitUntilFollowed(c)
        try Data("before".utf8).write(to: URL(fileURLWithPath: m.mountPoint + "/before.txt"))
        try c.waitForState(m.mountPoint + "/before.txt", "synced", diagnostics: m.diagnostics) { $0.state == .synced }
        func provider() throws -> String? {
            try c.request(.roots, timeout: 15).data.first { $0.path == m.mountPoint }?.option("provider")
        }
        #expect(try provider() == "rclone")
        // Stopped during an upload: the file waits in rclone's cache for its next start.
        let big = m.mountPoint + "/big.bin"
        let bytes = RcloneMount.bytes(Self.size)
        try bytes.write(to: URL(fileURLWithPath: big))
        try c.waitForState(big, "syncing", timeout: 20, diagnostics: m.diagnostics) { $0.state == .syncing }
        m.unmount()
        try c.waitForPush(timeout: 15, "the claim given up") { $0.kind == "ROOT" && $0.path == m.mountPoint && $0.option("provider") == nil }
        let waiting = try c.waitForState(big, "no longer syncing", diagnostics: m.diagnostics) { $0.state != .syncing }
        #expect(waiting.state == .pending, "\(waiting)")
        try m.mount()
        try c.waitForPush(timeout: 15, "the mount claimed again") { $0.kind == "ROOT" && $0.path == m.mountPoint && $0.option("provider") == "rclone" }
        try c.waitForState(big, "synced once rclone uploaded it after its restart", timeout: 30, diagnostics: m.diagnostics) { $0.state == .synced }
        #expect(try Data(contentsOf: URL(fileURLWithPath: m.remoteDir + "/big.bin")) == bytes)
        let after = m.mountPoint + "/after.txt"
        try Data("after".utf8).write(to: URL(fileURLWithPath: after))
        try c.waitForState(after, "synced after the restart", timeout: 20, diagnostics: m.diagnostics) { $0.state == .synced }
        try c.waitForState(m.mountPoint + "/before.txt", "still synced", diagnostics: m.diagnostics) { $0.state == .synced }
        #expect(try String(contentsOfFile: m.remoteDir + "/after.txt", encoding: .utf8) == "after")
    }

    /// syncbadged restarts (a new epoch): the adapter reconnects, claims the mount again and
    /// reports what is written after, with what it had reported before still there.
    @Test func daemonRestart() throws {
        let m = try RcloneMount()
        var c = try m.daemon.connect()
        try m.waitUntilFollowed(c)
        let before = m.mountPoint + "/before.txt"
        try Data("before".utf8).write(to: URL(fileURLWithPath: before))
        try c.waitForState(before, "synced", diagnostics: m.diagnostics) { $0.state == .synced }
        try m.daemon.restart()
        c = try m.daemon.connect()
        // The adapter may have claimed it before this connection was made.
        if try c.request(.roots, timeout: 15).data.first(where: { $0.path == m.mountPoint })?.option("provider") != "rclone" {
            try c.waitForPush(timeout: 15, "the mount claimed again") { $0.kind == "ROOT" && $0.path == m.mountPoint && $0.option("provider") == "rclone" }
        }
        let after = m.mountPoint + "/after.txt"
        try Data("after".utf8).write(to: URL(fileURLWithPath: after))
        try c.waitForState(after, "synced after the restart", timeout: 20, diagnostics: m.diagnostics) { $0.state == .synced }
        #expect(try c.status(before).state == .synced)
        #expect(m.adapter?.process.isRunning == true)
    }

    /// The adapter is killed while a file uploads: the daemon releases its `syncing`, and the
    /// adapter started again reports the file synced once rclone is done.
    @Test func adapterKilledDuringUpload() throws {
        let (m, c, path) = try Self.uploading("big.bin")
        m.adapter?.stop(signal: SIGKILL)
        let released = try c.waitForState(path, "released to pending", diagnostics: m.diagnostics) { $0.state == .pending }
        #expect(released.progress == nil && released.message != nil)
        try m.startAdapterProcess(rc: m.rcAddr)
        try c.waitForState(path, "synced by the new adapter", timeout: 30, diagnostics: m.diagnostics) { $0.state == .synced }
    }

    @Test func cachedAndCloudOnlyBadges() throws {
        // Put in the cloud by someone else: rclone has nothing of it in its cache.
        let m = try RcloneMount(inCloud: ["remote.txt": Data("from elsewhere".utf8)])
        let c = try m.daemon.connect()
        try m.waitUntilFollowed(c)
        let cloud = try c.waitForState(m.mountPoint + "/remote.txt", "synced, in the cloud", diagnostics: m.diagnostics) { $0.state == .synced }
        #expect(cloud.badge == "rclone-cloud")
        let local = m.mountPoint + "/local.txt"
        try Data("written here".utf8).write(to: URL(fileURLWithPath: local))
        let here = try c.states(of: local, diagnostics: m.diagnostics) { $0.state == .synced }
        #expect(here.last?.badge == "rclone-local", "saw \(here.map { "\($0.state.map { "\($0)" } ?? "-") \($0.badge) \($0.message ?? "")" })\n\(m.diagnostics())")
        // Free up space: rclone 1.60's vfs/forget keeps the cached data, and the answer says so.
        try expectFailedAnswer(c, "rclone.free-space", local, saying: "keeps the cached copy until --vfs-cache-max-age")
        #expect(FileManager.default.fileExists(atPath: m.cacheDir + "/vfs") && m.adapter?.log.contains("rclone has no vfs/queue") == true)
        let badges = try c.request(.badges, timeout: 15).data.compactMap { $0.fields.first?.string }
        #expect(badges.contains("rclone-local") && badges.contains("rclone-cloud"))
    }
}

/// The rclone 1.68 path (vfs/queue, Upload now) against a stand-in rc that answers the JSON rclone
/// documents, beside a real mount whose cache the adapter reads.
@Suite(.serialized)
struct RcloneQueueEndToEndTests {
    @Test func queueStatesUploadNowAndNoCallsAtIdle() throws {
        let m = try RcloneMount(startAdapter: false)
        let c = try m.daemon.connect()
        let name = "notes.txt"
        try Data("seventy-nine bytes, more or less".utf8).write(to: URL(fileURLWithPath: m.mountPoint + "/" + name))
        // The real rclone's cache directories, and its upload done (the cache's metadata clean).
        let stats = try runToEnd(URL(fileURLWithPath: installed("rclone")!), ["rc", "--url", "http://\(m.rcAddr)", "vfs/stats"], seconds: 15)
        let disk = try #require((try JSONSerialization.jsonObject(with: Data(stats.out.utf8)) as? [String: Any])?["diskCache"] as? [String: Any])
        let dataRoot = try #require(disk["path"] as? String), metaRoot = try #require(disk["pathMeta"] as? String)
        let deadline = Date().addingTimeInterval(15)
        while !((try? String(contentsOfFile: metaRoot + "/" + name, encoding: .utf8))?.contains("\"Dirty\": false") ?? false) {
            guard Date() < deadline else { throw HarnessError(description: "rclone never uploaded \(name)\n\(m.rcloneLog)") }
            usleep(50_000)
        }
        let standIn = try RcStandIn(temp: m.daemon.temp, dataRoot: dataRoot, metaRoot: metaRoot, name: name)
        try m.startAdapterProcess(rc: standIn.address)
        let path = m.mountPoint + "/" + name
        try c.waitForState(path, "queued", timeout: 20, diagnostics: m.diagnostics) {
            $0.state == .pending && $0.message == "queued for upload in 30 s"
        }
        #expect(m.adapter?.log.contains("rclone has vfs/queue") == true)
        let r = try c.request("ACTION", [.word("rclone.upload-now"), .path(Array(path.utf8)), .option("reply", "1")], timeout: 15)
        #expect(r.ok.option("message") == "1 file goes up now")
        #expect(standIn.calls.contains { $0.call == "vfs/queue-set-expiry" && $0.id == 7 && $0.expiry ?? 0 < 0 })
        try standIn.switchTo("uploading")
        try c.waitForState(path, "syncing", diagnostics: m.diagnostics) { $0.state == .syncing && $0.progress == 50 }
        try standIn.switchTo("failed")
        let failed = try c.waitForState(path, "error", diagnostics: m.diagnostics) { $0.state == .error }
        #expect(failed.message?.hasPrefix("permission denied (tried 2 times") == true, "\(failed.message ?? "")")
        try standIn.switchTo("done")
        let done = try c.waitForState(path, "synced", diagnostics: m.diagnostics) { $0.state == .synced }
        #expect(done.badge == "rclone-local")
        // Idle: no round is scheduled. A round takes 4 calls; one may be on its way as the
        // state was read, none after it in four busy intervals.
        let settled = standIn.calls.count
        usleep(1_000_000)
        #expect(standIn.calls.count <= settled + 4)
        let later = standIn.calls.count
        usleep(1_000_000)
        #expect(standIn.calls.count == later, "\(standIn.calls.suffix(8))")
    }
}

/// `Tests/RcloneAdapterTests/Fixtures/rc-standin.py` with a script of four states for one file.
final class RcStandIn {
    struct Call { var call: String; var state: String; var id: Int?; var expiry: Double? }
    let process: ChildProcess
    let stateFile: String
    let logFile: String
    let address: String

    init(temp: TempDir, dataRoot: String, metaRoot: String, name: String) throws {
        let script = temp.sub("standin.json")
        stateFile = temp.sub("standin.state")
        logFile = temp.sub("standin.log")
        let portFile = temp.sub("standin.port")
        func stats(queued: Int, inProgress: Int) -> [String: Any] {
            ["fs": "gdrive:", "diskCache": ["path": dataRoot, "pathMeta": metaRoot, "uploadsQueued": queued,
                                             "uploadsInProgress": inProgress, "erroredFiles": 0]]
        }
        func item(uploading: Bool, tries: Int, expiry: Double) -> [String: Any] {
            ["name": name, "id": 7, "size": 32, "expiry": expiry, "tries": tries, "delay": 5.0, "uploading": uploading]
        }
        let none: [String: Any] = ["transferred": []]
        let states: [String: Any] = [
            "queued": ["vfs/stats": stats(queued: 1, inProgress: 0), "vfs/queue": ["queue": [item(uploading: false, tries: 0, expiry: 30)]],
                       "core/stats": [:] as [String: Any], "core/transferred": none, "vfs/queue-set-expiry": [:] as [String: Any]],
            "uploading": ["vfs/stats": stats(queued: 0, inProgress: 1), "vfs/queue": ["queue": [item(uploading: true, tries: 0, expiry: -1)]],
                          "core/stats": ["transferring": [["name": name, "size": 32, "bytes": 16, "percentage": 50]]], "core/transferred": none],
            "failed": ["vfs/stats": stats(queued: 1, inProgress: 0), "vfs/queue": ["queue": [item(uploading: false, tries: 2, expiry: 3.5)]],
                       "core/stats": ["lastError": "permission denied"],
                       "core/transferred": ["transferred": [["name": name, "size": 32, "bytes": 0, "error": "permission denied",
                                                             "completed_at": "2026-11-27T19:33:02.42362597Z"]]]],
            "done": ["vfs/stats": stats(queued: 0, inProgress: 0), "vfs/queue": ["queue": [] as [Any]], "core/stats": [:] as [String: Any],
                     "core/transferred": ["transferred": [["name": name, "size": 32, "bytes": 32, "error": "",
                                                           "completed_at": "2026-11-27T19:34:02.42362597Z"]]]],
        ]
        try JSONSerialization.data(withJSONObject: ["states": states]).write(to: URL(fileURLWithPath: script))
        try "queued".write(toFile: stateFile, atomically: true, encoding: .utf8)
        let py = Products.repository.appendingPathComponent("Tests/RcloneAdapterTests/Fixtures/rc-standin.py")
        process = try ChildProcess(URL(fileURLWithPath: "/usr/bin/python3"), [py.path, script, stateFile, portFile, logFile])
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: portFile) {
            guard Date() < deadline, process.process.isRunning else { throw HarnessError(description: "the stand-in rc did not start: \(process.log)") }
            usleep(20_000)
        }
        address = "127.0.0.1:" + (try String(contentsOfFile: portFile, encoding: .utf8))
    }

    func switchTo(_ state: String) throws {
        try state.write(toFile: stateFile, atomically: true, encoding: .utf8)
    }

    var calls: [Call] {
        let text = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            let params = o["params"] as? [String: Any] ?? [:]
            return Call(call: o["call"] as? String ?? "", state: o["state"] as? String ?? "",
                        id: (params["id"] as? NSNumber)?.intValue, expiry: (params["expiry"] as? NSNumber)?.doubleValue)
        }
    }
}


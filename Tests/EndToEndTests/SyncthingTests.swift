#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@_spi(Wire) import SyncBadgeClient
import SyncBadgeCore

/// Two real Syncthing instances on loopback sharing one folder, one daemon, and one adapter
/// per instance (each claims its side's folder as a root).
final class SyncthingPair {
    let daemon: DaemonHarness
    let a: SyncthingInstance
    let b: SyncthingInstance
    var adapterA: ChildProcess?
    var adapterB: ChildProcess?
    let folderID = "shared"

    init(folderOptionsB: [String: Any] = [:], deviceOptionsB: [String: Any] = [:], optionsB: [String: Any] = [:]) throws {
        daemon = try DaemonHarness()
        a = try SyncthingInstance(temp: daemon.temp, name: "a")
        b = try SyncthingInstance(temp: daemon.temp, name: "b")
        try a.launch()
        try b.launch()
        try a.waitUntilServing()
        try b.waitUntilServing()
        try a.share(id: folderID, with: b, dials: false)
        try b.share(id: folderID, with: a, dials: true, folderOptions: folderOptionsB, deviceOptions: deviceOptionsB, options: optionsB)
        adapterA = try ChildProcess.syncthingAdapter(socket: daemon.socket, syncthing: a)
        adapterB = try ChildProcess.syncthingAdapter(socket: daemon.socket, syncthing: b)
        // Each root is added, claimed and reconciled: its own state turns synced.
        let c = try daemon.connect()
        for s in [a, b] {
            try c.waitForState(s.folder, "the root reconciled", timeout: 20, diagnostics: diagnostics) { $0.state == .synced }
        }
    }

    /// A pair whose B receives at about 1 MB/s, so that a big file takes seconds to arrive.
    static func slowB() throws -> SyncthingPair {
        try SyncthingPair(optionsB: ["maxRecvKbps": 1000, "limitBandwidthInLan": true])
    }

    /// Writes 4 MiB that do not compress to A's folder as `big.bin`: seconds on their way to
    /// a `slowB` pair's B.
    func writeBigFileOnA() throws {
        var bytes = [UInt8](repeating: 0, count: 4 << 20)
        for i in bytes.indices { bytes[i] = UInt8(truncatingIfNeeded: i &* 2654435761 >> 13) }
        try Data(bytes).write(to: URL(fileURLWithPath: a.folder + "/big.bin"))
    }

    func diagnostics() -> String {
        "--- adapter A:\n\(adapterA?.log.suffix(3000) ?? "")\n--- adapter B:\n\(adapterB?.log.suffix(3000) ?? "")"
            + "\n--- syncbadged:\n\(daemon.log.suffix(12000))"
    }

    deinit {
        adapterA?.stop()
        adapterB?.stop()
        a.stop()
        b.stop()
    }
}

extension Connection {
    /// Waits until `STATUS path` satisfies `done`, woken by the pushes for the path's
    /// directory (observed here); throws at the deadline with what it last saw.
    @discardableResult
    func waitForState(_ path: String, _ what: String, timeout: Double = 15, diagnostics: () -> String = { "" },
                      until done: (Item) -> Bool) throws -> Item {
        var last: Item?
        return try waitOnPushes(near: path, what, timeout: timeout, diagnostics: diagnostics, probe: {
            guard let item = try? status(path) else { return nil }
            last = item
            return done(item) ? item : nil
        }, last: {
            last.map { "\($0.state.map { "\($0)" } ?? "outside") message=\($0.message ?? "-") progress=\($0.progress.map(String.init) ?? "-")" } ?? "no item"
        })
    }

    /// Waits until `MENU items path` offers every id in `ids`. The daemon filters a provider's
    /// items by the path's state at that moment, and a state can pass through `pending` for an
    /// instant (a write the provider has not answered yet), so one look is not enough.
    @discardableResult
    func waitForMenuItems(_ path: String, _ ids: [String], timeout: Double = 15, diagnostics: () -> String = { "" }) throws -> [String] {
        var last: [String] = []
        return try waitOnPushes(near: path, "menu items \(ids)", timeout: timeout, diagnostics: diagnostics, probe: {
            guard let items = try? request("MENU", [.word("items"), .path(Array(path.utf8))], timeout: 15).data else { return nil }
            last = items.map { $0.fields.first?.string ?? "" }
            return ids.allSatisfy(last.contains) ? last : nil
        }, last: {
            "items \(last), state \((try? self.status(path))?.state.map { "\($0)" } ?? "none")"
        })
    }

    /// Tries `probe` until it gives a value, woken by the pushes for `path`'s directory
    /// (observed here); throws at the deadline with `last()`.
    private func waitOnPushes<T>(near path: String, _ what: String, timeout: Double, diagnostics: () -> String,
                                 probe: () -> T?, last: () -> String) throws -> T {
        let dir = (try? status(path))?.kind == .dir ? path : (path as NSString).deletingLastPathComponent
        var observing = false
        defer { if observing { _ = try? request("UNOBSERVE", [.path(Array(dir.utf8))], timeout: 15) } }
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            // Not a root yet, or the directory not there yet: its `* ROOT` push or the
            // parent's `* ITEM` wakes the wait, and the observation is tried again.
            if !observing { observing = (try? request("OBSERVE", [.path(Array(dir.utf8)), .option("list", "0")], timeout: 15)) != nil }
            if let value = probe() { return value }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { break }
            do {
                _ = try nextPush(timeout: observing ? left : min(left, 0.1))
            } catch {
                throw HarnessError(description: "waiting for \(what) on \(path): \(error)\n" + diagnostics())
            }
        }
        throw HarnessError(description: "\(path) never showed \(what) within \(timeout) s; last: \(last())\n" + diagnostics())
    }
}

// One pair at a time: their starts and transfers compete for two cores, and the suite is no
// faster run side by side.
@Suite(.serialized, .enabled(if: toolsOnPath(["syncthing"])))
struct SyncthingEndToEndTests {
    @Test func newFileGoesPendingThenSyncedOnBothSides() throws {
        let pair = try SyncthingPair()
        let c = try pair.daemon.connect()
        let onA = pair.a.folder + "/new.txt", onB = pair.b.folder + "/new.txt"
        try touchFile(onA, "hello")
        try c.waitForState(onA, "pending") { $0.state == .pending }
        let syncedA = try c.waitForState(onA, "synced on A", diagnostics: pair.diagnostics) { $0.state == .synced }
        // A says synced only once B has it.
        #expect(try String(contentsOfFile: onB, encoding: .utf8) == "hello")
        #expect(syncedA.gen != nil)
        try c.waitForState(onB, "synced on B", diagnostics: pair.diagnostics) { $0.state == .synced }
        try c.waitForState(pair.b.folder, "B's root synced", diagnostics: pair.diagnostics) { $0.state == .synced && $0.counts?[.pending] ?? 0 == 0 }
        // The key is a secret: not in anything the adapter said.
        let logA = pair.adapterA?.log ?? ""
        #expect(logA.contains("following Syncthing"))
        #expect(!logA.contains(SyncthingInstance.apiKey))
    }

    /// B receives slowly: the new file does not exist on B until it is complete, so B's root
    /// carries its `syncing`, with progress rising; A shows B's download of it as `syncing` too.
    @Test func largeFileShowsSyncingWithRisingProgress() throws {
        let pair = try SyncthingPair.slowB()
        let c = try pair.daemon.connect()
        try pair.writeBigFileOnA()
        let first = try c.waitForState(pair.b.folder, "B's root syncing with progress", diagnostics: pair.diagnostics) {
            $0.state == .syncing && ($0.progress ?? 0) > 0 && ($0.message ?? "").contains("big.bin")
        }
        try c.waitForState(pair.b.folder, "B's progress rising", diagnostics: pair.diagnostics) {
            $0.state == .syncing && ($0.progress ?? 0) > (first.progress ?? 0)
        }
        try c.waitForState(pair.a.folder + "/big.bin", "A sending with progress", diagnostics: pair.diagnostics) {
            $0.state == .syncing && ($0.progress ?? 0) > 0
        }
        try c.waitForState(pair.b.folder + "/big.bin", "synced on B", timeout: 20, diagnostics: pair.diagnostics) { $0.state == .synced }
        try c.waitForState(pair.a.folder + "/big.bin", "synced on A", diagnostics: pair.diagnostics) { $0.state == .synced }
        try c.waitForState(pair.b.folder, "B's root back to synced", diagnostics: pair.diagnostics) { $0.state == .synced && $0.progress == nil }
    }

    /// A write that lands after Syncthing indexed a version, while B still lacks it, leaves
    /// A `pending` until the newer version reached B: never `synced` with B holding the old one.
    @Test func fileWrittenDuringItsTransferStaysPending() throws {
        let pair = try SyncthingPair()
        let c = try pair.daemon.connect()
        let onA = pair.a.folder + "/doc.txt", onB = pair.b.folder + "/doc.txt"
        // B's folder paused: A's first version waits for B (the transfer cannot finish).
        try pair.b.rest("PATCH", "/rest/config/folders/\(pair.folderID)", json: ["paused": true])
        try touchFile(onA, "first")
        try c.waitForState(onA, "waiting for B", diagnostics: pair.diagnostics) { $0.state == .pending && ($0.message ?? "").hasPrefix("waiting for") }
        try touchFile(onA, "second version")
        try pair.b.rest("PATCH", "/rest/config/folders/\(pair.folderID)", json: ["paused": false])
        let dir = pair.a.folder
        _ = try c.request("OBSERVE", [.path(Array(dir.utf8)), .option("list", "0")], timeout: 15)
        let deadline = Date().addingTimeInterval(20)
        while true {
            let item = try c.status(onA)
            if item.state == .synced {
                // Synced only with the version B has.
                #expect(try String(contentsOfFile: onB, encoding: .utf8) == "second version")
                break
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw HarnessError(description: "never synced: \(item.state.map { "\($0)" } ?? "outside") \(item.message ?? "")\n" + pair.diagnostics()) }
            _ = try c.nextPush(timeout: left)
        }
    }

    @Test func stignorePatternGivesIgnored() throws {
        let pair = try SyncthingPair()
        let c = try pair.daemon.connect()
        try pair.a.rest("POST", "/rest/db/ignores?folder=\(pair.folderID)", json: ["ignore": ["*.log", "/build"]])
        // Syncthing announces no change of patterns: the adapter reads them again when the
        // daemon reports the folder's .stignore changed.
        try FileManager.default.createDirectory(atPath: pair.a.folder + "/build", withIntermediateDirectories: true)
        try touchFile(pair.a.folder + "/debug.log", "x")
        try touchFile(pair.a.folder + "/kept.txt", "x")
        try c.waitForState(pair.a.folder + "/debug.log", "ignored", diagnostics: pair.diagnostics) { $0.state == .ignored }
        try c.waitForState(pair.a.folder + "/build", "ignored", diagnostics: pair.diagnostics) { $0.state == .ignored }
        try c.waitForState(pair.a.folder + "/kept.txt", "synced", diagnostics: pair.diagnostics) { $0.state == .synced }
        try c.waitForState(pair.a.folder + "/.stfolder", "ignored", diagnostics: pair.diagnostics) { $0.state == .ignored }
    }

    /// Both sides edit the file while B's folder is paused: Syncthing keeps one version and
    /// a conflict copy; both are `conflict` until "Keep this copy" resolves it.
    @Test func conflictThenKeepThisCopy() throws {
        let pair = try SyncthingPair()
        let c = try pair.daemon.connect()
        let onA = pair.a.folder + "/report.txt", onB = pair.b.folder + "/report.txt"
        try touchFile(onA, "base")
        try c.waitForState(onB, "synced on B", diagnostics: pair.diagnostics) { $0.state == .synced }
        try c.waitForState(onA, "synced on A", diagnostics: pair.diagnostics) { $0.state == .synced }
        try pair.b.rest("PATCH", "/rest/config/folders/\(pair.folderID)", json: ["paused": true])
        try touchFile(onA, "edited on A")
        try touchFile(onB, "edited on B, longer")
        // A indexed its edit (it waits for B) before B comes back with its own.
        try c.waitForState(onA, "A's edit indexed", diagnostics: pair.diagnostics) { ($0.message ?? "").hasPrefix("waiting for") }
        try pair.b.rest("PATCH", "/rest/config/folders/\(pair.folderID)", json: ["paused": false])
        let original = try c.waitForState(onA, "conflict on A's original", diagnostics: pair.diagnostics) { $0.state == .conflict }
        let copies = try FileManager.default.contentsOfDirectory(atPath: pair.a.folder).filter { $0.contains(".sync-conflict-") && !$0.hasPrefix(".syncthing.") }
        #expect(copies.count == 1)
        let copy = pair.a.folder + "/" + copies[0]
        try c.waitForState(copy, "conflict on the copy", diagnostics: pair.diagnostics) { $0.state == .conflict }
        #expect(original.message?.contains(copies[0]) == true)
        // Syncthing may still touch the copy after its rename: the daemon then shows it `pending`
        // until the adapter answers the change with `conflict` again.
        try c.waitForMenuItems(copy, ["syncthing.keep-this", "syncthing.keep-other"], diagnostics: pair.diagnostics)
        let kept = try String(contentsOfFile: copy, encoding: .utf8)
        let beforeAction = try c.status(onA)
        // `reply=1`: answered once the adapter renamed the copy over the original.
        let answer = try c.request("ACTION", [.word("syncthing.keep-this"), .path(Array(copy.utf8)), .option("reply", "1")], timeout: 15)
        try c.waitForState(onA, "the resolved original synced", timeout: 20, diagnostics: pair.diagnostics) { $0.state == .synced }
        let seen = "kept \(kept.debugDescription), original before the action: \(beforeAction.state.map { "\($0)" } ?? "-") "
            + "\(beforeAction.message ?? ""), answer: \(answer.ok.option("message") ?? "-"), A's folder: \((try? FileManager.default.contentsOfDirectory(atPath: pair.a.folder)) ?? [])"
        #expect(try String(contentsOfFile: onA, encoding: .utf8) == kept, "\(seen)\n\(pair.diagnostics())")
        #expect(!FileManager.default.fileExists(atPath: copy))
        #expect(try String(contentsOfFile: onB, encoding: .utf8) == kept, "\(seen)")
    }

    /// B cannot write into an immutable directory: Syncthing's message shows on the directory
    /// (the file does not exist there), and goes once the directory is writable again.
    @Test func receiveErrorIsShownAndCleared() throws {
        let pair = try SyncthingPair()
        let c = try pair.daemon.connect()
        try FileManager.default.createDirectory(atPath: pair.a.folder + "/locked", withIntermediateDirectories: true)
        let lockedB = pair.b.folder + "/locked"
        try c.waitForState(lockedB, "the directory on B", diagnostics: pair.diagnostics) { $0.state == .synced }
        let (rc, _) = try spawn(installed("chattr")!, ["+i", lockedB], environment: [:])
        #expect(rc == 0)
        defer { _ = try? spawn(installed("chattr")!, ["-i", lockedB], environment: [:]) }
        try touchFile(pair.a.folder + "/locked/f.txt", "data")
        let failed = try c.waitForState(lockedB, "error on B's directory", diagnostics: pair.diagnostics) { $0.state == .error }
        #expect(failed.message?.contains("operation not permitted") == true)
        #expect(failed.message?.contains("locked/f.txt") == true)
        // A keeps the file pending: B needs it.
        try c.waitForState(pair.a.folder + "/locked/f.txt", "pending on A", diagnostics: pair.diagnostics) { $0.state == .pending }
        _ = try spawn(installed("chattr")!, ["-i", lockedB], environment: [:])
        // "Rescan now" on B's folder makes Syncthing pull again at once.
        _ = try c.request("ACTION", [.word("syncthing.rescan"), .path(Array(pair.b.folder.utf8))], timeout: 15)
        try c.waitForState(lockedB + "/f.txt", "the file on B", timeout: 20, diagnostics: pair.diagnostics) { $0.state == .synced }
        try c.waitForState(lockedB, "the directory cleared", diagnostics: pair.diagnostics) { $0.state == .synced && $0.message == nil }
        try c.waitForState(pair.a.folder + "/locked/f.txt", "synced on A", diagnostics: pair.diagnostics) { $0.state == .synced }
    }

    /// Syncthing A killed and started again, and then syncbadged restarted: the adapter says
    /// so on the root, comes back by itself and rebuilds every state.
    @Test func syncthingAndDaemonRestartsAreRecovered() throws {
        let pair = try SyncthingPair()
        var c = try pair.daemon.connect()
        // SIGTERM to the monitor we started: a SIGKILL would orphan its child, still serving.
        pair.a.stop()
        let down = try c.waitForState(pair.a.folder, "Syncthing down on the root", diagnostics: pair.diagnostics) { $0.state == .error }
        #expect(down.message?.contains("Syncthing") == true)
        try pair.a.start()
        try c.waitForState(pair.a.folder, "the root rebuilt", timeout: 20, diagnostics: pair.diagnostics) { $0.state == .synced }
        try touchFile(pair.a.folder + "/after-restart.txt", "x")
        try c.waitForState(pair.a.folder + "/after-restart.txt", "synced after Syncthing's restart", diagnostics: pair.diagnostics) { $0.state == .synced }

        try pair.daemon.restart()
        c = try pair.daemon.connect()
        // Claimed again by the adapter (its menu items are back), and states follow again.
        let deadline = Date().addingTimeInterval(15)
        while true {
            let roots = try c.request("ROOTS", [], timeout: 15).data
            if roots.filter({ $0.option("provider") != nil }).count == 2 { break }
            guard Date() < deadline else { throw HarnessError(description: "roots not claimed again\n" + pair.diagnostics()) }
            // A claim is not pushed to viewers: ask again shortly, until the deadline.
            _ = try c.nextPush(timeout: min(0.1, max(0, deadline.timeIntervalSinceNow)))
        }
        try touchFile(pair.a.folder + "/after-daemon.txt", "x")
        try c.waitForState(pair.a.folder + "/after-daemon.txt", "synced after the daemon's restart", diagnostics: pair.diagnostics) { $0.state == .synced }
    }
}

/// One Syncthing each, no pair: these run beside the pairs.
extension SyncthingEndToEndTests {
    /// The adapter killed in the middle of a transfer: its `syncing` goes with its connection,
    /// and no badge stays `syncing` for an engine that is gone.
    @Test func killingTheAdapterMidTransferLeavesNoSyncingBehind() throws {
        let pair = try SyncthingPair.slowB()
        let c = try pair.daemon.connect()
        try pair.writeBigFileOnA()
        try c.waitForState(pair.b.folder, "B's root syncing", diagnostics: pair.diagnostics) { $0.state == .syncing }
        try #require(pair.adapterB).stop(signal: SIGKILL)
        let released = try c.waitForState(pair.b.folder, "B's root released", diagnostics: pair.diagnostics) { $0.state != .syncing }
        #expect(released.state == .pending && released.progress == nil, "\(released)")
        #expect(released.message?.contains("stopped before this finished syncing") == true, "\(released)")
    }

    /// "Show Syncthing's view" (1.2's answer): both devices, by name, with the versions.
    @Test func showSyncthingsViewNamesBothDevices() throws {
        let pair = try SyncthingPair()
        let c = try pair.daemon.connect()
        let onA = pair.a.folder + "/notes.txt"
        try touchFile(onA, "hello")
        try c.waitForState(onA, "synced on A", diagnostics: pair.diagnostics) { $0.state == .synced }
        let menu = try c.request("MENU", [.word("items"), .path(Array(onA.utf8))], timeout: 15).data.compactMap { $0.fields.first?.string }
        #expect(menu.contains("syncthing.view"))
        let r = try runCLI(["action", "syncthing.view", onA, "--socket", pair.daemon.socket])
        #expect(r.status == 0, "\(r)\n\(pair.diagnostics())")
        let peer = (pair.b.home as NSString).lastPathComponent
        #expect(r.out.contains("notes.txt in Syncthing folder shared"), "\(r.out)")
        #expect(r.out.contains("Local version: ") && r.out.contains("Global version: "), "\(r.out)")
        let upToDate = r.out.split(separator: "\n").first { $0.hasPrefix("Up to date: ") } ?? ""
        #expect(upToDate.contains("(this device)") && upToDate.contains(peer), "\(r.out)")
        #expect(r.out.contains("Still needs it: no device"), "\(r.out)")
    }
}

/// One Syncthing with a folder of its own, its adapter, and a viewer that saw the root
/// reconciled.
final class SoloSyncthing {
    let daemon: DaemonHarness
    let st: SyncthingInstance
    let adapter: ChildProcess
    let viewer: Connection

    init() throws {
        daemon = try DaemonHarness()
        st = try SyncthingInstance(temp: daemon.temp, name: "solo", ownFolder: "solo")
        try st.start()
        adapter = try ChildProcess.syncthingAdapter(socket: daemon.socket, syncthing: st)
        viewer = try daemon.connect()
        try viewer.waitForState(st.folder, "the root reconciled", timeout: 20, diagnostics: diagnostics) { $0.state == .synced }
    }

    func diagnostics() -> String {
        "--- adapter:\n\(adapter.log.suffix(3000))\n--- syncthing:\n\(st.logText.suffix(2000))"
    }

    deinit {
        adapter.stop()
        st.stop()
    }
}

@Suite(.enabled(if: toolsOnPath(["syncthing"])))
struct SyncthingSingleInstanceTests {
    /// A Unix-socket GUI (1.19 writes it as a bare path) and an HTTPS one (`tls="true"`,
    /// trusting Syncthing's own https-cert.pem through the adapter's tunnel), read from
    /// config.xml with no option. Started beside Syncthing, before its certificate exists.
    @Test(arguments: [SyncthingInstance.GUI.unix, .https])
    func guiAddressesFromConfig(_ gui: SyncthingInstance.GUI) throws {
        let daemon = try DaemonHarness()
        let st = try SyncthingInstance(temp: daemon.temp, name: "solo", gui: gui, ownFolder: "solo")
        try st.launch()
        defer { st.stop() }
        let adapter = try ChildProcess.syncthingAdapter(socket: daemon.socket, syncthing: st)
        defer { adapter.stop() }
        let c = try daemon.connect()
        let diagnostics = { "--- adapter:\n\(adapter.log.suffix(3000))\n--- syncthing:\n\(st.logText.suffix(2000))" }
        try c.waitForState(st.folder, "the root reconciled", timeout: 20, diagnostics: diagnostics) { $0.state == .synced }
        try touchFile(st.folder + "/f.txt", "x")
        try c.waitForState(st.folder + "/f.txt", "synced (shared with nobody)", diagnostics: diagnostics) { $0.state == .synced }
        #expect(adapter.log.contains(gui == .https ? "https://127.0.0.1:\(st.guiPort)" : "unix://"))
        #expect(!adapter.log.contains(SyncthingInstance.apiKey))
        if gui == .https {
            // The tunnel's private directory goes with the adapter, stopped by SIGTERM.
            let line = try #require(adapter.log.split(separator: "\n").first { $0.contains("TLS tunnel at ") })
            let socket = try #require(line.split(separator: " ").first { $0.hasSuffix("/tls.sock") }).description
            let directory = (socket as NSString).deletingLastPathComponent
            var st = stat()
            #expect(stat(directory, &st) == 0 && st.st_mode & 0o777 == 0o700)
            adapter.stop()
            #expect(!FileManager.default.fileExists(atPath: directory))
        }
    }

    /// An HTTPS GUI whose certificate is not the https-cert.pem beside config.xml: the adapter
    /// trusts no other certificate; it stops with one line naming the address, the config file
    /// and the certificate file, and the key never leaves it.
    @Test func httpsGUIWithAnotherCertificateExits78() throws {
        let daemon = try DaemonHarness()
        let st = try SyncthingInstance(temp: daemon.temp, name: "tls", gui: .https, ownFolder: "tls")
        try st.start()
        defer { st.stop() }
        // Syncthing's own config, and another certificate of its (the device's) as the GUI's.
        let home = daemon.temp.sub("other-cert-home")
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: st.home + "/config.xml", toPath: home + "/config.xml")
        try FileManager.default.copyItem(atPath: st.home + "/cert.pem", toPath: home + "/https-cert.pem")
        let (status, text) = try runAdapterToExit(socket: daemon.socket, home: home)
        #expect(status == 78)
        let lines = text.split(separator: "\n").filter { $0.hasPrefix("syncbadge-syncthing:") }
        #expect(lines.count == 1)
        #expect(lines.first?.contains("https://127.0.0.1:\(st.guiPort)") == true)
        #expect(lines.first?.contains(home + "/config.xml") == true)
        #expect(lines.first?.contains("not the one in \(home)/https-cert.pem") == true)
        #expect(!text.contains(SyncthingInstance.apiKey))
    }

    /// The adapter's toolbar item: "Pause syncing" pauses Syncthing's folders and "Resume
    /// syncing" resumes them, triggered from a viewer through the daemon.
    @Test func toolbarPausesAndResumesSyncthing() throws {
        let solo = try SoloSyncthing()
        let (st, c, diagnostics) = (solo.st, solo.viewer, solo.diagnostics)
        // The toolbar comes with the adapter's provider connection, which may define it and
        // claim after the root's state was set (on its other connection): its `* TOOLBAR` push
        // says when.
        try waitForToolbar(c, "Pause syncing", diagnostics: diagnostics)
        let items = try c.request("MENU", [.word("toolbar"), .option("provider", "syncthing")], timeout: 15).data
        #expect(items.map { $0.fields.first?.string ?? "" } == ["syncthing.pause", "syncthing.resume"])

        // Asked with reply=1 (1.2), the adapter says what it did; its toolbar item then says
        // what a click does now.
        let paused = try c.request("ACTION", [.word("syncthing.pause"), .option("provider", "syncthing"), .word("reply=1")], timeout: 15)
        #expect(paused.ok.option("message") == "Paused 1 Syncthing folder")
        do {
            try st.waitForFolder("solo", paused: true)
        } catch { throw HarnessError(description: "\(error)\n" + diagnostics()) }
        try waitForToolbar(c, "Resume syncing", diagnostics: diagnostics)
        let menu = try c.request("MENU", [.word("toolbar"), .option("provider", "syncthing")], timeout: 15).data
        #expect(menu.map { "\($0.fields.first?.string ?? ""):\($0.option("enabled") ?? "")" } == ["syncthing.pause:0", "syncthing.resume:1"])
        _ = try c.request("ACTION", [.word("syncthing.resume"), .option("provider", "syncthing")], timeout: 15)
        do {
            try st.waitForFolder("solo", paused: false)
        } catch { throw HarnessError(description: "\(error)\n" + diagnostics()) }
        try waitForToolbar(c, "Pause syncing", diagnostics: diagnostics)
        // A pause made in Syncthing's own GUI (its REST API, as the GUI does) is followed too.
        _ = try st.rest("PATCH", "/rest/config/folders/solo", json: ["paused": true])
        try waitForToolbar(c, "Resume syncing", diagnostics: diagnostics)
        _ = try st.rest("PATCH", "/rest/config/folders/solo", json: ["paused": false])
        try waitForToolbar(c, "Pause syncing", diagnostics: diagnostics)
        // Syncing again: a new file reaches synced.
        try touchFile(st.folder + "/after-resume.txt", "x")
        try c.waitForState(st.folder + "/after-resume.txt", "synced after resuming", diagnostics: diagnostics) { $0.state == .synced }
    }

    /// Waits until the adapter's line in `TOOLBAR` is named `name`, woken by `* TOOLBAR` pushes.
    func waitForToolbar(_ c: Connection, _ name: String, timeout: Double = 20, diagnostics: () -> String) throws {
        let deadline = Date().addingTimeInterval(timeout)
        var last: [String] = []
        while true {
            last = try c.request("TOOLBAR", [], timeout: 15).data.filter { $0.option("provider") == "syncthing" }.compactMap { $0.option("name") }
            if last == [name] { return }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw HarnessError(description: "the toolbar never said \(name); last: \(last)\n" + diagnostics()) }
            _ = try c.nextPush(timeout: left)
        }
    }

    /// A folder removed from Syncthing is given up with UNCLAIM (1.2): its root loses its
    /// provider, and the adapter keeps its one connection to the daemon.
    @Test func aFolderRemovedFromSyncthingIsUnclaimedWithoutAReconnect() throws {
        let solo = try SoloSyncthing()
        let (st, c, adapter, diagnostics) = (solo.st, solo.viewer, solo.adapter, solo.diagnostics)
        let deadline = Date().addingTimeInterval(20)
        while try c.request("ROOTS", [], timeout: 15).data.first(where: { $0.path == st.folder })?.option("provider") != "syncthing" {
            guard deadline.timeIntervalSinceNow > 0 else { throw HarnessError(description: "never claimed\n" + diagnostics()) }
            _ = try c.nextPush(timeout: deadline.timeIntervalSinceNow)
        }
        // Pushes from before the claim (the root's own, without a provider) are not the answer.
        while try c.nextPush(timeout: 0) != nil {}
        _ = try st.rest("DELETE", "/rest/config/folders/solo")
        let unclaimed = try c.waitForPush(timeout: 20) { $0.kind == "ROOT" && $0.path == st.folder && $0.option("provider") == nil }
        #expect(unclaimed.fields[1].string != "removed")
        #expect(adapter.log.components(separatedBy: "provider connection to syncbadged open").count == 2, "\(diagnostics())")
    }

    /// A wrong key exits 78 with one line naming the address and the config file, not the key.
    @Test func wrongKeyExits78() throws {
        let daemon = try DaemonHarness()
        let st = try SyncthingInstance(temp: daemon.temp, name: "solo")
        try st.start()
        defer { st.stop() }
        let home = daemon.temp.sub("wrong-home")
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let xml = try String(contentsOfFile: st.home + "/config.xml", encoding: .utf8)
            .replacingOccurrences(of: SyncthingInstance.apiKey, with: "not-the-key-42")
        try xml.write(toFile: home + "/config.xml", atomically: true, encoding: .utf8)
        let (status, text) = try runAdapterToExit(socket: daemon.socket, home: home)
        #expect(status == 78)
        let lines = text.split(separator: "\n").filter { $0.hasPrefix("syncbadge-syncthing:") }
        #expect(lines.count == 1)
        #expect(text.contains("http://127.0.0.1:\(st.guiPort)"))
        #expect(text.contains(home + "/config.xml"))
        #expect(!text.contains("not-the-key-42"))
    }
}

/// Runs `syncbadge-syncthing` on a Syncthing home until it exits: its status and standard error.
func runAdapterToExit(socket: String, home: String) throws -> (status: Int32, stderr: String) {
    let r = try runToEnd(Products.syncthingAdapter, ["--socket", socket, "--syncthing-home", home], seconds: 60)
    return (r.status, r.err)
}

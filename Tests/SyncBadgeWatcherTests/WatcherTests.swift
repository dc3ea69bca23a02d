#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Logging
import Synchronization
import Testing
import SyncBadgeCore
@testable import SyncBadgeWatcher
import SyncBadgeWatchEvents

/// Real inotify on real temporary directories. libinotifytools is one global per process, so
/// every test that makes a `Watcher` lives in this one serialized suite, one watcher at a time.
@Suite(.serialized) struct WatcherTests {
    // MARK: Fixtures

    /// Collects every delivered event; `wait(for:)` blocks until a predicate over all of them
    /// holds, with a deadline (woken by each delivery, never by a timer of its own).
    final class Events: Sendable {
        let events = Mutex<[WatcherMessage]>([])
        let signal = DispatchSemaphore(value: 0)
        /// When armed, the next delivery blocks the watcher thread until `release()`.
        let gate = Mutex<Bool>(false)
        let blocked = DispatchSemaphore(value: 0)
        let released = DispatchSemaphore(value: 0)

        /// Deliveries that did not open with the batch's identities.
        let withoutIdentities = Mutex<Int>(0)

        func append(_ batch: [WatcherMessage]) {
            if case .identities? = batch.first {} else { withoutIdentities.withLock { $0 += 1 } }
            events.withLock { $0.append(contentsOf: batch) }
            signal.signal()
            let hold = gate.withLock { g in
                defer { g = false }
                return g
            }
            if hold {
                blocked.signal()
                released.wait()
            }
        }

        func armGate() { gate.withLock { $0 = true } }
        func release() { released.signal() }

        var all: [WatcherMessage] { events.withLock { $0 } }

        @discardableResult
        func wait(timeout seconds: Double = 10, _ predicate: ([WatcherMessage]) -> Bool) -> Bool {
            let deadline = DispatchTime.now() + seconds
            while true {
                if predicate(all) { return true }
                if signal.wait(timeout: deadline) == .timedOut { return predicate(all) }
            }
        }
    }

    /// A watcher on a fresh root, shut down and cleaned up by `close()`.
    final class Fixture {
        let root: String
        let control: String
        let events: Events
        let watcher: Watcher
        var scratch: [String] = []

        init() throws {
            root = try Self.makeTempDir()
            control = try Self.makeTempDir()
            let events = Events()
            self.events = events
            watcher = try Watcher(controlDirectory: Array(control.utf8), logger: Logger(label: "watcher-tests")) { batch in
                events.append(batch)
            }
        }

        static func makeTempDir() throws -> String {
            var template = Array("/tmp/syncbadge-watcher-XXXXXX".utf8CString)
            guard let p = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
                throw POSIXError(errno)
            }
            return String(cString: p)
        }

        func tempDir() throws -> String {
            let d = try Self.makeTempDir()
            scratch.append(d)
            return d
        }

        /// Adds the root and waits for its answer.
        func addRoot(_ path: String? = nil, token: UInt64 = 1) -> Result<RootScan, RootError>? {
            let p = Array((path ?? root).utf8)
            watcher.addRoot(p, token: token)
            var result: Result<RootScan, RootError>?
            events.wait { evs in
                for e in evs {
                    if case .rootAdded(let r, let t, let res) = e, r == p, t == token { result = res; return true }
                }
                return false
            }
            return result
        }

        func close() {
            watcher.shutdown()
            for d in [root, control] + scratch { run("rm", "-rf", d) }
        }
    }

    struct POSIXError: Error { let code: Int32; init(_ c: Int32) { code = c } }

    // MARK: Shell-free file operations

    static func write(_ path: String, _ text: String, append: Bool = false) {
        let fd = open(path, O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0o644)
        precondition(fd >= 0, "open \(path): \(errno)")
        _ = Array(text.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        Glibc.close(fd)
    }

    static func mkdirp(_ path: String) { precondition(mkdir(path, 0o755) == 0, "mkdir \(path): \(errno)") }

    static func move(_ from: String, _ to: String) { precondition(rename(from, to) == 0, "rename \(from): \(errno)") }

    static func b(_ s: String) -> [UInt8] { Array(s.utf8) }

    // MARK: Event predicates

    static func changed(_ evs: [WatcherMessage], _ path: String, _ what: ChangeKind, kind: EntryKind = .file) -> Bool {
        evs.contains { if case .changed(let p, let k, let w) = $0 { p == b(path) && k == kind && w == what } else { false } }
    }

    static func deleted(_ evs: [WatcherMessage], _ path: String, dir: Bool) -> Bool {
        evs.contains { if case .deleted(let p, let d) = $0 { p == b(path) && d == dir } else { false } }
    }

    static func moved(_ evs: [WatcherMessage], _ from: String, _ to: String, kind: EntryKind) -> Bool {
        evs.contains { if case .moved(let f, let t, let k) = $0 { f == b(from) && t == b(to) && k == kind } else { false } }
    }

    static func appeared(_ evs: [WatcherMessage], _ path: String) -> ScanTree? {
        for e in evs { if case .directoryAppeared(let p, let s) = e, p == b(path) { return s } }
        return nil
    }

    /// Relative paths of a scan's entries, `/` after directories.
    static func listing(_ s: ScanTree) -> Set<String> {
        var paths: [String] = []
        for (i, e) in s.entries.enumerated() {
            var p = String(decoding: s.name(i), as: UTF8.self)
            if e.parent >= 0 { p = String(paths[Int(e.parent)].dropLast()) + "/" + p }
            paths.append(p + (e.kind == .dir ? "/" : ""))
        }
        return Set(paths)
    }

    /// The scan's entry of that name (anywhere in it).
    static func entry(_ s: ScanTree, named name: String) -> ScanTree.Entry? {
        s.entries.indices.first { s.name($0).elementsEqual(name.utf8) }.map { s.entries[$0] }
    }

    // MARK: Tests

    @Test func addRootScansWhatIsThere() throws {
        let f = try Fixture()
        defer { f.close() }
        Self.write(f.root + "/a", "x")
        Self.mkdirp(f.root + "/d")
        Self.write(f.root + "/d/x", "y")
        Self.mkdirp(f.root + "/d/e")
        precondition(symlink("/etc/passwd", f.root + "/l") == 0)
        guard case .success(let rs)? = f.addRoot(token: 42) else {
            Issue.record("no successful rootAdded: \(f.events.all)")
            return
        }
        #expect(Self.listing(rs.scan) == ["a", "d/", "d/x", "d/e/", "l"])
        let l = Self.entry(rs.scan, named: "l")
        #expect(l?.kind == .link)
        #expect(rs.watches == 3)
        #expect(rs.degraded == nil)
        #expect(rs.ignoreFile == nil)
        #expect(f.watcher.watches(of: Self.b(f.root)) == 3)
        #expect(f.watcher.totalWatches == 3)
    }

    @Test func addRootErrors() throws {
        let f = try Fixture()
        defer { f.close() }
        Self.write(f.root + "/file", "x")
        precondition(symlink(f.root, f.root + "/link") == 0)
        guard case .failure(let e1)? = f.addRoot(f.root + "/missing", token: 1) else { Issue.record("missing: no failure"); return }
        #expect(e1 == .notFound)
        guard case .failure(let e2)? = f.addRoot(f.root + "/file", token: 2) else { Issue.record("file: no failure"); return }
        #expect(e2 == .notADirectory)
        guard case .failure(let e3)? = f.addRoot(f.root + "/link", token: 3) else { Issue.record("link: no failure"); return }
        #expect(e3 == .notADirectory)
        #expect(f.watcher.totalWatches == 0)
    }

    @Test func createWriteAttribRenameDelete() throws {
        let f = try Fixture()
        defer { f.close() }
        guard case .success? = f.addRoot() else { Issue.record("addRoot failed"); return }
        let a = f.root + "/a", c = f.root + "/c"

        Self.write(a, "")
        #expect(f.events.wait { Self.changed($0, a, .create) })
        Self.write(a, "more", append: true)
        #expect(f.events.wait { Self.changed($0, a, .modify) })
        precondition(chmod(a, 0o600) == 0)
        #expect(f.events.wait { Self.changed($0, a, .attrib) })
        Self.move(a, c)
        #expect(f.events.wait { Self.moved($0, a, c, kind: .file) })
        precondition(unlink(c) == 0)
        #expect(f.events.wait { Self.deleted($0, c, dir: false) })
        precondition(symlink("nowhere", f.root + "/ln") == 0)
        #expect(f.events.wait { Self.changed($0, f.root + "/ln", .create, kind: .link) })
        // The root's own attributes.
        precondition(chmod(f.root, 0o750) == 0)
        #expect(f.events.wait { Self.changed($0, f.root, .attrib, kind: .dir) })
    }

    /// Every batch opens with the identities of the paths its changes name below a root the
    /// hub compares, read on the watcher's thread after its events: what the hub compares a
    /// synced file's with.
    @Test func aBatchOpensWithTheIdentitiesOfWhatItChanges() throws {
        let f = try Fixture()
        defer { f.close() }
        guard case .success? = f.addRoot() else { Issue.record("addRoot failed"); return }
        f.watcher.compareIdentities(under: Self.b(f.root))
        let a = f.root + "/a", c = f.root + "/c"
        Self.write(a, "data")
        Self.move(a, c)
        let now = FileStat.lstat(Self.b(c))?.identity
        #expect(now != nil)
        #expect(f.events.wait { evs in
            evs.contains { e in
                if case .identities(let found) = e, let i = found[Self.b(c)] { return i == now }
                return false
            }
        })
        #expect(f.events.wait { Self.moved($0, a, c, kind: .file) })
        #expect(f.events.withoutIdentities.withLock { $0 } == 0)
    }

    /// Writes, attribute changes and renames are read; a creation alone is not (the hub never
    /// compares a new file's identity), nor a deletion; nor anything below a root the hub does
    /// not compare.
    @Test func whichChangesHaveTheirIdentityRead() {
        let p = { (s: String) in Self.b("/nonexistent-syncbadge-test/" + s) }
        let elsewhere = Self.b("/nonexistent-syncbadge-other/written")
        let batch: [WatcherMessage] = [
            .changed(path: p("created"), kind: .file, what: .create),
            .changed(path: p("written"), kind: .file, what: .modify),
            .changed(path: p("chmod"), kind: .file, what: .attrib),
            .moved(from: p("old"), to: p("new"), kind: .file),
            .directoryAppeared(path: p("dir"), subtree: ScanTree()),
            .deleted(path: p("gone"), wasDirectory: false),
            .changed(path: elsewhere, kind: .file, what: .modify),
        ]
        let read = WatcherLoop.identities(of: batch, under: [Self.b("/nonexistent-syncbadge-test")])
        #expect(Set(read.keys) == [p("written"), p("chmod"), p("new")])
        // Gone by the time it was read: nil, and the change counts.
        #expect(read.values.allSatisfy { $0 == nil })
        #expect(WatcherLoop.identities(of: batch, under: []).isEmpty)
    }

    /// Below a root the hub never asked to compare (no provider reported a file synced there),
    /// a write is not read; once it asks, the next write is, until the root is removed.
    @Test func onlyComparedRootsHaveTheirWritesRead() throws {
        let f = try Fixture()
        defer { f.close() }
        guard case .success? = f.addRoot() else { Issue.record("addRoot failed"); return }
        let a = f.root + "/a"
        // Whether the events from `from` on hold a write of `a`, and an identity read for it.
        let written = { (from: Int) in f.events.wait { Self.changed(Array($0.dropFirst(from)), a, .modify) } }
        let read = { (from: Int) in
            f.events.all.dropFirst(from).contains { if case .identities(let found) = $0 { found[Self.b(a)] != nil } else { false } }
        }
        Self.write(a, "one")
        #expect(written(0))
        #expect(!read(0))
        f.watcher.compareIdentities(under: Self.b(f.root))
        var mark = f.events.all.count
        Self.write(a, "two")
        #expect(written(mark))
        #expect(read(mark))
        // Removed and added again, as a user's root: not compared until the hub asks again.
        f.watcher.removeRoot(Self.b(f.root))
        #expect(f.watcher.compared.withLock { $0 }.isEmpty)
        guard case .success? = f.addRoot(token: 7) else { Issue.record("addRoot again failed"); return }
        mark = f.events.all.count
        Self.write(a, "three")
        #expect(written(mark))
        #expect(!read(mark))
    }

    @Test func aNewDirectoryFilledAtOnceIsSeenCompletely() throws {
        let f = try Fixture()
        defer { f.close() }
        guard case .success? = f.addRoot() else { Issue.record("addRoot failed"); return }
        let d = f.root + "/burst"
        Self.mkdirp(d)
        let names = (0..<50).map { "f\($0)" }
        for n in names { Self.write(d + "/" + n, n) }

        func seen(_ evs: [WatcherMessage]) -> Set<String> {
            var out: Set<String> = []
            if let s = Self.appeared(evs, d) { out.formUnion(Self.listing(s)) }
            for e in evs {
                if case .changed(let p, .file, .create) = e, let rel = PathBytes.relativeComponents(p, under: Self.b(d)), rel.count == 1 {
                    out.insert(String(decoding: rel[0], as: UTF8.self))
                }
            }
            return out
        }
        let ok = f.events.wait { Self.appeared($0, d) != nil && seen($0).isSuperset(of: names) }
        #expect(ok, "missing: \(Set(names).subtracting(seen(f.events.all)).sorted())")

        // And it is watched: a later change inside is reported.
        Self.write(d + "/later", "x")
        #expect(f.events.wait { Self.changed($0, d + "/later", .create) })
        #expect(f.watcher.watches(of: Self.b(f.root)) == 2)
    }

    @Test func movesOutOfAndIntoTheRoot() throws {
        let f = try Fixture()
        defer { f.close() }
        let outside = try f.tempDir()
        Self.write(f.root + "/leaving", "x")
        Self.mkdirp(f.root + "/olddir")
        Self.write(f.root + "/olddir/inner", "x")
        guard case .success? = f.addRoot() else { Issue.record("addRoot failed"); return }
        #expect(f.watcher.watches(of: Self.b(f.root)) == 2)

        Self.move(f.root + "/leaving", outside + "/leaving")
        #expect(f.events.wait { Self.deleted($0, f.root + "/leaving", dir: false) })

        Self.move(f.root + "/olddir", outside + "/olddir")
        #expect(f.events.wait { Self.deleted($0, f.root + "/olddir", dir: true) })
        #expect(f.watcher.watches(of: Self.b(f.root)) == 1)

        // A directory tree moved in from outside.
        Self.mkdirp(outside + "/incoming")
        Self.mkdirp(outside + "/incoming/sub")
        Self.write(outside + "/incoming/one", "1")
        Self.write(outside + "/incoming/sub/two", "2")
        Self.move(outside + "/incoming", f.root + "/incoming")
        var scan: ScanTree?
        #expect(f.events.wait { evs in scan = Self.appeared(evs, f.root + "/incoming"); return scan != nil })
        #expect(scan.map(Self.listing) == ["one", "sub/", "sub/two"])
        #expect(f.watcher.watches(of: Self.b(f.root)) == 3)
        // Its subdirectories are watched now.
        Self.write(f.root + "/incoming/sub/three", "3")
        #expect(f.events.wait { Self.changed($0, f.root + "/incoming/sub/three", .create) })
    }

    @Test func aDirectoryRenamedWithinKeepsBeingWatchedUnderItsNewName() throws {
        let f = try Fixture()
        defer { f.close() }
        Self.mkdirp(f.root + "/d1")
        Self.mkdirp(f.root + "/d1/sub")
        guard case .success? = f.addRoot() else { Issue.record("addRoot failed"); return }
        Self.move(f.root + "/d1", f.root + "/d2")
        #expect(f.events.wait { Self.moved($0, f.root + "/d1", f.root + "/d2", kind: .dir) })
        Self.write(f.root + "/d2/sub/new", "x")
        #expect(f.events.wait { Self.changed($0, f.root + "/d2/sub/new", .create) })
        #expect(f.watcher.watches(of: Self.b(f.root)) == 3)
    }

    @Test func aDirectoryMovedBetweenRootsIsAMoveAndItsWatchesChangeRoot() throws {
        let f = try Fixture()
        defer { f.close() }
        let other = try f.tempDir()
        Self.mkdirp(f.root + "/d")
        Self.mkdirp(f.root + "/d/e")
        guard case .success? = f.addRoot() else { Issue.record("addRoot failed"); return }
        guard case .success? = f.addRoot(other, token: 2) else { Issue.record("addRoot failed"); return }
        #expect(f.watcher.watches(of: Self.b(f.root)) == 3)
        #expect(f.watcher.watches(of: Self.b(other)) == 1)
        Self.move(f.root + "/d", other + "/d")
        #expect(f.events.wait { Self.moved($0, f.root + "/d", other + "/d", kind: .dir) })
        #expect(f.watcher.watches(of: Self.b(f.root)) == 1)
        #expect(f.watcher.watches(of: Self.b(other)) == 3)
        Self.write(other + "/d/e/x", "x")
        #expect(f.events.wait { Self.changed($0, other + "/d/e/x", .create) })
    }

    @Test func addingARootTwiceChangesNothing() throws {
        let f = try Fixture()
        defer { f.close() }
        Self.write(f.root + "/a", "x")
        guard case .success(let first)? = f.addRoot(token: 1) else { Issue.record("addRoot failed"); return }
        #expect(first.scan.count == 1)
        guard case .success(let second)? = f.addRoot(token: 2) else { Issue.record("addRoot failed"); return }
        #expect(second.scan.count == 0)
        #expect(second.watches == 1)
        #expect(f.watcher.totalWatches == 1)
    }

    @Test func aBarrierComesAfterEarlierEvents() throws {
        let f = try Fixture()
        defer { f.close() }
        guard case .success? = f.addRoot() else { Issue.record("addRoot failed"); return }
        for round in 0..<5 {
            let paths = (0..<20).map { f.root + "/r\(round)-\($0)" }
            for p in paths { Self.write(p, "x") }
            let token = UInt64(100 + round)
            f.watcher.barrier(token: token)
            var barrierIndex: Int?
            let got = f.events.wait { evs in
                barrierIndex = evs.firstIndex { if case .barrier(let t) = $0 { t == token } else { false } }
                return barrierIndex != nil
            }
            try #require(got, "barrier \(token) never came")
            let before = Array(f.events.all[..<barrierIndex!])
            for p in paths {
                #expect(Self.changed(before, p, .create), "round \(round): \(p) not reported before the barrier")
            }
        }
    }

    @Test func theIgnoreFileIsReadWhenItChanges() throws {
        let f = try Fixture()
        defer { f.close() }
        Self.write(f.root + "/.syncbadgeignore", "old\n")
        guard case .success(let rs)? = f.addRoot() else { Issue.record("addRoot failed"); return }
        #expect(rs.ignoreFile == Self.b("old\n"))
        let root = Self.b(f.root)

        Self.write(f.root + "/.syncbadgeignore", "*.log\nbuild/\n")
        #expect(f.events.wait { evs in evs.contains {
            if case .ignoreFileChanged(let r, let c) = $0 { r == root && c == Self.b("*.log\nbuild/\n") } else { false }
        } })
        precondition(unlink(f.root + "/.syncbadgeignore") == 0)
        #expect(f.events.wait { evs in evs.contains {
            if case .ignoreFileChanged(let r, nil) = $0 { r == root } else { false }
        } })
        // Only the root's own ignore file counts.
        Self.mkdirp(f.root + "/sub")
        Self.write(f.root + "/sub/.syncbadgeignore", "x")
        Self.write(f.root + "/marker", "")
        #expect(f.events.wait { Self.changed($0, f.root + "/marker", .create) })
        #expect(!f.events.all.contains {
            if case .ignoreFileChanged(_, let c) = $0 { c == Self.b("x") } else { false }
        })
    }

    @Test func removingTheRootDirectoryReportsItVanished() throws {
        let f = try Fixture()
        defer { f.close() }
        Self.mkdirp(f.root + "/sub")
        Self.write(f.root + "/sub/file", "x")
        guard case .success? = f.addRoot() else { Issue.record("addRoot failed"); return }
        run("rm", "-rf", f.root)
        #expect(f.events.wait { evs in evs.contains { if case .rootVanished(let r, _) = $0 { r == Self.b(f.root) } else { false } } })
        #expect(f.watcher.watches(of: Self.b(f.root)) == 0)
    }

    @Test func aDeletedSubtreeIsForgottenAndARecreatedOneWatchedAgain() throws {
        let f = try Fixture()
        defer { f.close() }
        Self.mkdirp(f.root + "/sub")
        Self.mkdirp(f.root + "/sub/deep")
        Self.write(f.root + "/sub/deep/file", "x")
        guard case .success? = f.addRoot() else { Issue.record("addRoot failed"); return }
        #expect(f.watcher.watches(of: Self.b(f.root)) == 3)
        run("rm", "-rf", f.root + "/sub")
        #expect(f.events.wait { Self.deleted($0, f.root + "/sub", dir: true) })
        #expect(Self.deleted(f.events.all, f.root + "/sub/deep", dir: true))
        #expect(Self.deleted(f.events.all, f.root + "/sub/deep/file", dir: false))
        f.watcher.barrier(token: 5)
        #expect(f.events.wait { $0.contains { if case .barrier(5) = $0 { true } else { false } } })
        #expect(f.watcher.watches(of: Self.b(f.root)) == 1)

        // The same path again: a new directory, watched under its old name.
        Self.mkdirp(f.root + "/sub")
        #expect(f.events.wait { Self.appeared($0, f.root + "/sub") != nil })
        Self.write(f.root + "/sub/again", "x")
        #expect(f.events.wait { Self.changed($0, f.root + "/sub/again", .create) })
        #expect(f.watcher.watches(of: Self.b(f.root)) == 2)
    }

    @Test func aKernelQueueOverflowRescansTheRoot() throws {
        let f = try Fixture()
        defer { f.close() }
        Self.write(f.root + "/a", "")
        Self.write(f.root + "/b", "")
        Self.mkdirp(f.root + "/d")
        guard case .success? = f.addRoot() else { Issue.record("addRoot failed"); return }
        // Hold the watcher thread in the sink, then queue more events than the kernel keeps.
        f.events.armGate()
        Self.write(f.root + "/trigger", "")
        try #require(f.events.blocked.wait(timeout: .now() + 10) == .success, "the sink was never called")
        let limit = Int(Self.readProc("/proc/sys/fs/inotify/max_queued_events") ?? 16_384)
        for i in 0...(limit + 100) {
            precondition(chmod(f.root + (i % 2 == 0 ? "/a" : "/b"), i % 4 < 2 ? 0o600 : 0o644) == 0)
        }
        f.events.release()
        #expect(f.events.wait { $0.contains { if case .overflow = $0 { true } else { false } } })
        var rescan: RootScan?
        #expect(f.events.wait { evs in
            for e in evs { if case .rootRescanned(let r, let s) = e, r == Self.b(f.root) { rescan = s; return true } }
            return false
        })
        #expect(rescan.map { Self.listing($0.scan) } == ["a", "b", "d/", "trigger"])
        // A rescan records identities, for files only.
        #expect(rescan.flatMap { Self.entry($0.scan, named: "a") }?.identity != nil)
        #expect(rescan.flatMap { Self.entry($0.scan, named: "d") }?.identity == nil)
        #expect(f.watcher.watches(of: Self.b(f.root)) == 2)
        // And watching goes on.
        Self.write(f.root + "/d/after", "x")
        #expect(f.events.wait { Self.changed($0, f.root + "/d/after", .create) })
    }

    static func readProc(_ path: String) -> Int? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var buf = [UInt8](repeating: 0, count: 64)
        let n = read(fd, &buf, buf.count)
        guard n > 0 else { return nil }
        return Int(String(decoding: buf[..<n], as: UTF8.self).trimmingSuffix())
    }

    @Test func removeRootStopsWatching() throws {
        let f = try Fixture()
        defer { f.close() }
        let other = try f.tempDir()
        guard case .success? = f.addRoot() else { Issue.record("addRoot failed"); return }
        guard case .success? = f.addRoot(other, token: 2) else { Issue.record("addRoot failed"); return }
        f.watcher.removeRoot(Self.b(f.root))
        // Commands run in order: once this barrier is back, the root is no longer watched.
        f.watcher.barrier(token: 8)
        #expect(f.events.wait { $0.contains { if case .barrier(8) = $0 { true } else { false } } })
        Self.write(f.root + "/unseen", "x")
        Self.write(other + "/seen", "x")
        f.watcher.barrier(token: 9)
        #expect(f.events.wait { $0.contains { if case .barrier(9) = $0 { true } else { false } } })
        #expect(Self.changed(f.events.all, other + "/seen", .create))
        #expect(!Self.changed(f.events.all, f.root + "/unseen", .create))
        #expect(f.watcher.watches(of: Self.b(f.root)) == 0)
        #expect(f.watcher.totalWatches == 1)
    }
}

extension String {
    func trimmingSuffix() -> String {
        var s = self
        while let last = s.last, last.isWhitespace { s.removeLast() }
        return s
    }
}

/// Runs a program and waits for it (for `rm -rf`).
func run(_ args: String...) {
    var pid = pid_t()
    let argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    guard posix_spawnp(&pid, args[0], nil, nil, argv, environ) == 0 else { return }
    var status: Int32 = 0
    waitpid(pid, &status, 0)
}

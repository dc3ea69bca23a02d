import Foundation
import NIOCore
import NIOEmbedded
import Testing
import SyncBadgeCore
import SyncBadgeWatchEvents
@testable import SyncBadgeServer

/// The hub as a whole, on an EmbeddedEventLoop with fakes (Support/HubHarness.swift), lines
/// in and lines out with no channel: the paths that only floods, full disks and crashes reach
/// in the end-to-end suite.
@Suite struct HubTests {
    @Test func aSlowReaderMissesPushesAndGetsOneResetPerDirectory() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["a", "b"])
        let viewer = try h.connect()
        #expect(try viewer.request("OBSERVE /r").last == "OK count=2")
        viewer.setWritable(false)
        h.hub.apply([.changed(path: Array("/r/a".utf8), kind: .file, what: .modify),
                        .changed(path: Array("/r/b".utf8), kind: .file, what: .modify)])
        #expect(viewer.pushes() == [])
        h.hub.apply([.changed(path: Array("/r/c".utf8), kind: .file, what: .create)])
        #expect(viewer.pushes() == [])
        // It reads again: the root's latest state, the directory's own line (not in the
        // listing the RESET brings) and one RESET for the directory, not the backlog.
        viewer.setWritable(true)
        let back = viewer.pushes()
        #expect(back.count == 3)
        #expect(back.first == "ROOT /r pending watches=1")
        #expect(back.dropFirst().first?.hasPrefix("ITEM /r pending ") == true)
        #expect(back.last == "RESET /r")
        // And pushes flow again.
        h.hub.apply([.changed(path: Array("/r/a".utf8), kind: .file, what: .attrib)])
        h.hub.apply([.deleted(path: Array("/r/b".utf8), wasDirectory: false)])
        #expect(viewer.pushes().contains("GONE /r/b"))
    }

    /// One step whose pushes would not fit under a viewer's output cap (a recursive SET of a
    /// big folder) gives it one RESET at once, not the first megabyte of pushes and then the
    /// RESET; a step that fits is pushed line by line, to the same viewer, before and after.
    @Test func aStepTooBigForTheOutputCapIsOneResetAtOnce() throws {
        let h = try HubHarness()
        // Over 1 MiB of ITEM lines: 12,000 of more than 100 bytes.
        let names = (0..<12_000).map { "a-file-name-long-enough-that-twelve-thousand-lines-pass-a-mebibyte-\($0)" }
        try h.addRoot(files: names)
        try h.addRoot("/small", files: ["x", "y"])
        let viewer = try h.connect()
        #expect(try viewer.request("OBSERVE /r").last == "OK count=12000")
        #expect(try viewer.request("OBSERVE /small").last == "OK count=2")
        _ = viewer.pushes()
        let provider = try h.connect(role: .provider)
        #expect(h.set(provider, "SET syncing /small recursive=1").first?.hasPrefix("OK") == true)
        #expect(viewer.pushes().filter { $0.hasPrefix("ITEM /small") }.count == 3)
        #expect(h.set(provider, "SET synced /r recursive=1").first?.hasPrefix("OK") == true)
        let pushes = viewer.pushes()
        #expect(pushes.filter { $0.hasPrefix("RESET") } == ["RESET /r"])
        // Only the observed directory's own line, which its listing does not hold.
        #expect(pushes.filter { $0.hasPrefix("ITEM") }.map { $0.split(separator: " ")[1] } == ["/r"])
        // What it relists is the new state.
        let listing = try viewer.request("LIST /r")
        #expect(listing.count == 12_001)
        #expect(listing.dropLast().allSatisfy { $0.hasPrefix("ITEM /r/") && $0.contains(" synced ") })
        #expect(h.set(provider, "SET pending /small/x").first?.hasPrefix("OK") == true)
        #expect(viewer.pushes().contains { $0.hasPrefix("ITEM /small/x pending") })
    }

    /// A step over the size the daemon counts (64 KiB) that still fits under the cap: every
    /// line is pushed, no RESET.
    @Test func aStepUnderTheCapIsPushedLineByLineHoweverBig() throws {
        let h = try HubHarness()
        // About 200 KB of ITEM lines: 2,000 of about 100 bytes.
        let names = (0..<2_000).map { "a-file-name-long-enough-that-two-thousand-lines-pass-sixty-four-kibibytes-\($0)" }
        try h.addRoot(files: names)
        let viewer = try h.connect()
        #expect(try viewer.request("OBSERVE /r").last == "OK count=2000")
        _ = viewer.pushes()
        let provider = try h.connect(role: .provider)
        #expect(h.set(provider, "SET synced /r recursive=1").first?.hasPrefix("OK") == true)
        let pushes = viewer.pushes()
        #expect(!pushes.contains { $0.hasPrefix("RESET") })
        #expect(pushes.filter { $0.hasPrefix("ITEM /r/") && $0.contains(" synced ") }.count == 2_000)
    }

    /// The rule is the cap's, line by line: a step whose last line is the one that takes the
    /// viewer's output past the cap is pushed whole (that line is written, as `Clients.push`
    /// writes it); with one byte more held before the step, that line would be dropped, and the
    /// viewer gets its RESET instead.
    @Test func aStepIsResetOnlyIfAPushOfItWouldBeDropped() throws {
        let names = (0..<2_000).map { "a-file-name-long-enough-that-two-thousand-lines-pass-sixty-four-kibibytes-\($0)" }
        // The flip, with `held` bytes already in the viewer's output when it is published;
        // its pushes but the filler.
        func flip(held: Int) throws -> [String] {
            let runner = QueuedWorkerThread()
            let h = try HubHarness(storeThread: runner)
            try h.addRoot(files: names)
            let viewer = try h.connect()
            #expect(try viewer.request("OBSERVE /r").last == "OK count=2000")
            _ = viewer.pushes()
            let provider = try h.connect(role: .provider)
            let set = provider.send("SET synced /r recursive=1")
            // The SET is applied, and published, once the files' thread has looked at the
            // paths; every step before hands each client its output at its end, so the filler
            // is written just before that thread's work completes.
            h.passBarriers()
            while runner.pending > 0 {
                var left = held
                while left > 0 {
                    // "* FILL x…x\n", at least 8 bytes a line: the last two share what is left.
                    let n = left >= 2_000 ? 1_000 : (left > 1_000 ? left / 2 : left)
                    h.hub.outbox.writeLines(viewer.id, Array("* FILL \(String(repeating: "x", count: n - 8))\n".utf8))
                    left -= n
                }
                runner.runAll()
                h.passBarriers()
            }
            #expect(provider.answer(set).first?.hasPrefix("OK") == true)
            return viewer.pushes().filter { !$0.hasPrefix("FILL") }
        }
        let whole = try flip(held: 0).filter { $0.hasPrefix("ITEM") }
        #expect(whole.count == 2_001)
        let bytes = whole.reduce(0) { $0 + $1.utf8.count + 3 }    // "* " and the LF
        let last = whole.last!.utf8.count + 3
        let atTheCap = Outbox.highWater - (bytes - last)
        let fits = try flip(held: atTheCap)
        #expect(fits.filter { $0.hasPrefix("ITEM") } == whole)
        #expect(!fits.contains { $0.hasPrefix("RESET") })
        let over = try flip(held: atTheCap + 1)
        #expect(over.filter { $0.hasPrefix("RESET") } == ["RESET /r"])
        #expect(over.filter { $0.hasPrefix("ITEM") }.map { $0.split(separator: " ")[1] } == ["/r"])
    }

    /// In one step too big for the cap: a reading viewer of the big directory gets its RESET at
    /// once; a viewer already backed up gets it when it reads again (Backpressure), once; a
    /// viewer of a small directory in the same step gets its pushes line by line.
    @Test func aBigStepResetsOnlyTheViewersItFloods() throws {
        let h = try HubHarness()
        let names = (0..<12_000).map { "a-file-name-long-enough-that-twelve-thousand-lines-pass-a-mebibyte-\($0)" }
        try h.addRoot(files: names + ["d/x", "d/y"])
        let (reading, behind, small, both) = (try h.connect(), try h.connect(), try h.connect(), try h.connect())
        for v in [reading, behind, both] { #expect(try v.request("OBSERVE /r").last == "OK count=12001") }
        for v in [small, both] { #expect(try v.request("OBSERVE /r/d").last == "OK count=2") }
        for v in [reading, behind, small, both] { _ = v.pushes() }
        behind.setWritable(false)
        let provider = try h.connect(role: .provider)
        #expect(h.set(provider, "SET synced /r recursive=1").first?.hasPrefix("OK") == true)
        let read = reading.pushes()
        #expect(read.filter { $0.hasPrefix("RESET") } == ["RESET /r"])
        #expect(!read.contains { $0.hasPrefix("ITEM /r/") })
        #expect(behind.pushes() == [])
        let smallPushes = small.pushes()
        #expect(!smallPushes.contains { $0.hasPrefix("RESET") })
        for path in ["/r/d/x", "/r/d/y", "/r/d"] {
            #expect(smallPushes.contains { $0.hasPrefix("ITEM \(path) synced ") })
        }
        // A viewer of both: each reset, and each one's own line.
        let bothPushes = both.pushes()
        #expect(Set(bothPushes.filter { $0.hasPrefix("RESET") }) == ["RESET /r", "RESET /r/d"])
        #expect(Set(bothPushes.filter { $0.hasPrefix("ITEM") }.map { $0.split(separator: " ")[1] }) == ["/r", "/r/d"])
        #expect(bothPushes.filter { $0.hasPrefix("ITEM") }.count == 2)
        // The viewer behind: the root's own line as it is now (its listing holds only the
        // children), then the reset.
        behind.setWritable(true)
        let caughtUp = behind.pushes().filter { $0.hasPrefix("ITEM") || $0.hasPrefix("RESET") }
        #expect(caughtUp.count == 2)
        #expect(caughtUp.first?.hasPrefix("ITEM /r synced ") == true)
        #expect(caughtUp.last == "RESET /r")
    }

    /// A slow reader gets the own line of each directory it missed one of, as it is now, if it
    /// still observes the directory or its parent (whose listing holds the directory): the
    /// `LIST` after a `RESET` holds only the children. None of a directory gone meanwhile.
    @Test func aSlowReaderGetsTheOwnLineOfEachDirectoryItStillSees() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["a", "p/d/x", "e/y"])
        let (inside, parent, gone, left) = (try h.connect(), try h.connect(), try h.connect(), try h.connect())
        for (v, dirs) in [(inside, ["/r/p/d"]), (parent, ["/r/p", "/r/p/d"]), (gone, ["/r/e"]), (left, ["/r", "/r/e"])] {
            for dir in dirs { #expect(try v.request("OBSERVE \(dir)").last?.hasPrefix("OK count=") == true) }
            _ = v.pushes()
            v.setWritable(false)
        }
        let provider = try h.connect(role: .provider)
        #expect(h.set(provider, "SET error /r/p/d/x").first?.hasPrefix("OK") == true)
        #expect(h.set(provider, "SET error /r/e/y").first?.hasPrefix("OK") == true)
        // While they are behind, two stop observing a directory whose parent they still observe,
        // and /r/e goes.
        let unobserved = [parent.send("UNOBSERVE /r/p/d"), left.send("UNOBSERVE /r/e")]
        h.hub.apply([.deleted(path: Array("/r/e/y".utf8), wasDirectory: false),
                     .deleted(path: Array("/r/e".utf8), wasDirectory: true)])
        for v in [inside, parent, gone, left] { v.setWritable(true) }
        #expect(parent.answer(unobserved[0]) == ["OK"] && left.answer(unobserved[1]) == ["OK"])
        func back(_ v: FakeClient) -> [String] { v.pushes().filter { !$0.hasPrefix("ROOT") } }
        let insideBack = back(inside)
        #expect(insideBack.count == 2)
        #expect(insideBack.first?.hasPrefix("ITEM /r/p/d error ") == true)
        #expect(insideBack.last == "RESET /r/p/d")
        // It no longer observes /r/p/d: no reset of it, but its line, and its parent's.
        let parentBack = back(parent)
        #expect(parentBack.count == 2)
        #expect(parentBack.contains { $0.hasPrefix("ITEM /r/p error ") } && parentBack.contains { $0.hasPrefix("ITEM /r/p/d error ") })
        // Its GONE is never dropped, and nothing stands in for what it missed before.
        #expect(back(gone) == ["GONE /r/e"])
        let leftBack = back(left)
        #expect(leftBack.count == 2)
        #expect(leftBack.first?.hasPrefix("ITEM /r ") == true)
        #expect(leftBack.last == "RESET /r")
    }

    /// A directory removed in the step that also missed a push about it: the viewer, behind,
    /// is not told to reset it when it reads again, even once a new directory of the same name
    /// is observed (on the same node: the deleted entry's tombstone, made live again).
    @Test func aRemovedDirectoryIsNotResetForAPushMissedInTheSameStep() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["a", "d/x"])
        let viewer = try h.connect()
        #expect(try viewer.request("OBSERVE /r").last == "OK count=2")
        #expect(try viewer.request("OBSERVE /r/d").last == "OK count=1")
        _ = viewer.pushes()
        viewer.setWritable(false)
        // `rm -r d` as the watcher reports it: a file first, then the directory.
        h.hub.apply([.deleted(path: Array("/r/d/x".utf8), wasDirectory: false),
                     .deleted(path: Array("/r/d".utf8), wasDirectory: true)])
        var scan = ScanTree()
        scan.append(parent: -1, name: Array("z".utf8), kind: .file)
        h.hub.apply([.directoryAppeared(path: Array("/r/d".utf8), subtree: scan)])
        let again = viewer.send("OBSERVE /r/d")
        viewer.setWritable(true)
        #expect(viewer.answer(again).last == "OK count=1")
        #expect(viewer.pushes().filter { $0.hasPrefix("RESET") } == ["RESET /r"])
    }

    @Test func anOverflowRescanResetsObserversAndChangeFeeds() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["a"])
        let viewer = try h.connect()
        _ = try viewer.request("OBSERVE /r")
        let provider = try h.connect(role: .provider)
        #expect(try provider.request("SUBSCRIBE-CHANGES /r") == ["OK"])
        var scan = ScanTree()
        scan.append(parent: -1, name: Array("a".utf8), kind: .file)
        scan.append(parent: -1, name: Array("new".utf8), kind: .file)
        h.hub.apply([.overflow, .rootRescanned(root: Array("/r".utf8), scan: RootScan(scan: scan, ignoreFile: nil, watches: 1, degraded: nil))])
        let pushes = viewer.pushes()
        #expect(pushes.contains("RESET /r"))
        #expect(pushes.contains { $0.hasPrefix("ITEM /r/new pending") })
        #expect(provider.pushes().contains("RESET-CHANGES /r"))
    }

    /// A full disk: the SET is not acknowledged, the batch is kept and written again by a timer
    /// with backoff, and goes through once the disk takes it; nothing is lost.
    @Test func aFailedCommitIsRetriedWithBackoffUntilItSucceeds() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["a", "b"])
        let provider = try h.connect(role: .provider)
        h.store.state.withLock { $0.failing = true }
        let tag = provider.send("SET synced /r/a")
        h.passBarriers()
        let failed = provider.answer(tag)
        #expect(failed.count == 1 && failed[0].hasPrefix("ERR internal"))
        let firstFailures = h.store.state.withLock { $0.failedCommits }
        #expect(firstFailures >= 1)
        // The timer tries again (250 ms, then twice as long each time), while it still fails.
        h.loop.advanceTime(by: .milliseconds(250))
        #expect(h.store.state.withLock { $0.failedCommits } == firstFailures + 1)
        h.loop.advanceTime(by: .milliseconds(250))
        #expect(h.store.state.withLock { $0.failedCommits } == firstFailures + 1)  // backing off
        h.loop.advanceTime(by: .milliseconds(250))
        #expect(h.store.state.withLock { $0.failedCommits } == firstFailures + 2)
        // The disk takes writes again: the kept batch goes first, and new SETs are answered OK.
        h.store.state.withLock { $0.failing = false }
        h.loop.advanceTime(by: .seconds(1))
        #expect(h.store.state.withLock { $0.committedBatches } >= 1)
        #expect(h.set(provider, "SET synced /r/b").first?.hasPrefix("OK gen=") == true)
        // The state of the failed SET was applied all along, and is now stored.
        let viewer = try h.connect()
        #expect(try viewer.request("STATUS /r/a").first?.hasPrefix("ITEM /r/a synced") == true)
    }

    @Test func aDepartedProvidersSyncingIsReleasedAndItsClaimGoes() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["a", "b"])
        let viewer = try h.connect()
        _ = try viewer.request("OBSERVE /r")
        let provider = try h.connect(role: .provider, name: "engine")
        #expect(try provider.request("CLAIM /r") == ["OK"])
        let t1 = provider.send("SET syncing /r/a progress=50")
        let t2 = provider.send("SET error /r/b message=nope")
        h.passBarriers()
        #expect(provider.answer(t1).first?.hasPrefix("OK") == true && provider.answer(t2).first?.hasPrefix("OK") == true)
        _ = viewer.pushes()
        provider.disconnect()
        let pushes = viewer.pushes()
        #expect(pushes.contains { $0.hasPrefix("ITEM /r/a pending badge=pending") && $0.contains("message=engine%20stopped") && !$0.contains("progress=") })
        #expect(pushes.contains { $0.hasPrefix("ROOT /r") && !$0.contains("provider=") })
        #expect(try viewer.request("STATUS /r/b").first?.hasPrefix("ITEM /r/b error") == true)
    }

    @Test func aVanishedRootTurnsErrorAndSaysWhy() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["a"])
        let viewer = try h.connect()
        h.hub.apply([.rootVanished(root: Array("/r".utf8), reason: "unmounted")])
        let root = viewer.pushes().first { $0.hasPrefix("ROOT /r ") }
        #expect(root?.hasPrefix("ROOT /r error") == true && root?.contains("message=the%20root%20directory%20was%20unmounted") == true)
        #expect(try viewer.request("STATUS /r").first?.hasPrefix("ITEM /r error") == true)
        // Its entries keep what they had.
        #expect(try viewer.request("STATUS /r/a").first?.hasPrefix("ITEM /r/a unknown") == true)
    }

    /// The allocation-free STATUS path answers byte for byte what the general one does (an
    /// unknown option sends a request the general way).
    @Test func plainStatusAnswersAsTheGeneralPathDoes() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["a", "two words", "b", "tab\tname", "caf\u{FF}e", "x.swp"])
        let provider = try h.connect(role: .provider)
        #expect(h.set(provider, "SET error /r/a message=no%20space progress=3").first?.hasPrefix("OK") == true)
        let viewer = try h.connect()
        h.hub.apply([.deleted(path: Array("/r/b".utf8), wasDirectory: false)])  // a tombstone
        for request in ["STATUS /r", "STATUS /r/a", "STATUS /r/two%20words", "STATUS /r/a /r/b /r", "STATUS /elsewhere",
                        "STATUS /r/missing", "STATUS /r/a/", "STATUS r/a", "STATUS /r/a  /r/b", "STATUS",
                        "STATUS /r/tab\tname", "STATUS /r/caf\u{FF}e", "STATUS /r/x.swp", "STATUS /r/b"] {
            let fast = try viewer.request(request)
            let general = try viewer.request(request + " x=1")
            #expect(fast == general, "\(request)")
            #expect(!fast.isEmpty)
        }
        #expect(try viewer.request("STATUS /r/a /r/two%20words") == ["ITEM /r/a error badge=error kind=file progress=3 message=no%20space gen=1",
                                                                    "ITEM /r/two%20words unknown badge=unknown kind=file gen=1", "OK"])
        // A CR before the LF is dropped, whichever way the line goes.
        #expect(try viewer.request("STATUS /r/a\r") == viewer.request("STATUS /r/a"))
        // Before HELLO, STATUS is refused as any verb is.
        let stranger = h.stranger()
        #expect(try stranger.request("STATUS /r/a") == ["ERR hello-required"])
    }

    /// A recursive SET gives its provider only the entries it changed: a file it skipped as
    /// stale stays the syncing of the SET that made it so, and is released with that one.
    @Test func aRecursiveSetOwnsOnlyWhatItChanged() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["f", "g"])
        let viewer = try h.connect()
        _ = try viewer.request("OBSERVE /r")
        let gen = try viewer.request("STATUS /r").first!.split(separator: " ").first { $0.hasPrefix("gen=") }!.dropFirst(4)
        h.hub.apply([.changed(path: Array("/r/f".utf8), kind: .file, what: .modify)])  // f's gen moves past the root's
        let a = try h.connect(role: .provider, name: "a")
        #expect(h.set(a, "SET syncing /r/f").first?.hasPrefix("OK") == true)
        #expect(h.set(a, "SET synced /r gen=\(gen) recursive=1").first?.hasPrefix("OK") == true)
        #expect(try viewer.request("STATUS /r/f").first?.hasPrefix("ITEM /r/f syncing") == true)
        #expect(try viewer.request("STATUS /r/g").first?.hasPrefix("ITEM /r/g synced") == true)
        _ = viewer.pushes()
        a.disconnect()
        #expect(viewer.pushes().contains { $0.hasPrefix("ITEM /r/f pending") })
    }

    /// A SET that waited for its barrier while its provider went away is applied, and its
    /// `syncing` released at once: the close came before it.
    @Test func aSyncingSetWhoseProviderLeftBeforeItsBarrierIsReleased() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["f"])
        let a = try h.connect(role: .provider, name: "a")
        a.send("SET syncing /r/f progress=10")
        a.disconnect()
        h.passBarriers()
        let viewer = try h.connect()
        let f = try viewer.request("STATUS /r/f").first
        #expect(f?.hasPrefix("ITEM /r/f pending") == true && f?.contains("message=a%20stopped") == true)
    }

    /// ROOT lines of a root in error say why, whoever put it there (1.1).
    @Test func aRootInErrorByAProviderSaysWhyToo() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["f", "g"])
        let a = try h.connect(role: .provider)
        let t = a.send("SET error /r/f message=disk%20full")
        h.passBarriers()
        _ = a.answer(t)
        let viewer = try h.connect()
        #expect(try viewer.request("ROOTS").first == "ROOT /r error watches=1 message=1%20entry%20in%20error")
        let t2 = a.send("SET error /r message=quota%20exceeded")
        h.passBarriers()
        _ = a.answer(t2)
        #expect(try viewer.request("ROOTS").first == "ROOT /r error watches=1 message=quota%20exceeded")
    }

    /// LIST writes each child's line in reused buffers: the same line STATUS gives for it.
    @Test func listedLinesAreTheChildrensStatusLines() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["b", "a", "two words", "pct%"])
        let viewer = try h.connect()
        let listed = try viewer.request("LIST /r")
        #expect(listed.last == "OK count=4")
        let items = listed.dropLast()
        #expect(items.map { $0.split(separator: " ")[1] } == ["/r/a", "/r/b", "/r/pct%25", "/r/two%20words"])
        for line in items {
            let path = line.split(separator: " ")[1]
            #expect(try viewer.request("STATUS \(path)").first == line)
        }
    }

    @Test func theDaemonsShutdownReleasesNothing() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["a"])
        let provider = try h.connect(role: .provider)
        #expect(h.set(provider, "SET syncing /r/a").first?.hasPrefix("OK") == true)
        h.hub.shutdown()
        #expect(provider.lines().contains("* BYE shutdown"))
        provider.disconnect()
        let viewer = try h.connect()
        #expect(try viewer.request("STATUS /r/a").first?.hasPrefix("ITEM /r/a syncing") == true)
    }

    /// PROTOCOL.md: as soon as the daemon holds a too-long line it says `* BYE too-long` and
    /// closes, even while an earlier request of that connection still waits (here for a scan).
    @Test func aTooLongLineEndsTheConnectionAtOnceBehindAWaitingRequest() throws {
        let h = try HubHarness()
        let admin = try h.connect(role: .admin)
        let tag = admin.send("ADD-ROOT /r")
        #expect(h.watcher.lastAddRootToken != nil && admin.answer(tag).isEmpty)
        admin.write(String(repeating: "x", count: LineFramer.maxLineLength + 1))
        #expect(admin.pushes().last == "BYE too-long")
        #expect(!admin.isOpen)
    }

    /// The session frames its reads itself: every line of a read is answered, in order, and a
    /// line cut between reads is answered once its LF comes, whatever the cut.
    @Test func everyLineOfAReadIsAnsweredAndACutLineWaitsForItsEnd() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["a", "b"])
        let viewer = try h.connect()
        // Each line's tag, verb and first word.
        func heads() -> [String] { viewer.lines().map { $0.split(separator: " ").prefix(3).joined(separator: " ") } }
        viewer.write("1 STATUS /r/a\n2 STATUS /r/b\n3 PI")
        #expect(heads() == ["1 ITEM /r/a", "1 OK", "2 ITEM /r/b", "2 OK"])
        viewer.write("NG\r")
        #expect(heads() == [])
        viewer.write("\n\n4 STATUS /r/")
        #expect(heads() == ["3 OK"])
        for byte in "a\n5 PING\n".utf8 { viewer.write(String(decoding: [byte], as: UTF8.self)) }
        #expect(heads() == ["4 ITEM /r/a", "4 OK", "5 OK"])
    }

    /// Lines read while a request waits (here for a scan) are answered after it, in order, even
    /// when a line was cut between the reads.
    @Test func linesBehindAWaitingRequestAreAnsweredInOrder() throws {
        let h = try HubHarness()
        let admin = try h.connect(role: .admin)
        admin.write("1 ADD-ROOT /r\n2 PING\n3 STA")
        guard let token = h.watcher.lastAddRootToken else { throw HarnessError("no scan asked for") }
        admin.write("TUS /r\n")
        #expect(admin.lines().filter { !$0.hasPrefix("* ") } == [])
        var scan = ScanTree()
        scan.append(parent: -1, name: Array("a".utf8), kind: .file)
        h.hub.apply([.rootAdded(root: Array("/r".utf8), token: token,
                                   result: .success(RootScan(scan: scan, ignoreFile: nil, watches: 1, degraded: nil)))])
        h.passBarriers()
        let lines = admin.lines().filter { !$0.hasPrefix("* ") }
        #expect(lines.map { $0.split(separator: " ").first! } == ["1", "2", "3", "3"])
        #expect(lines.last == "3 OK")
    }

    /// A line longer than the limit that arrives in pieces is refused once the pieces add up
    /// to more than the limit, before its LF comes (PROTOCOL.md, "Framing").
    @Test func aTooLongLineInPiecesEndsTheConnection() throws {
        let h = try HubHarness()
        let viewer = try h.connect()
        viewer.write("1 PING\n" + String(repeating: "x", count: 40_000))
        #expect(viewer.lines() == ["1 OK"])
        viewer.write(String(repeating: "x", count: LineFramer.maxLineLength - 40_000))
        #expect(viewer.lines() == [])
        viewer.write("x")
        #expect(viewer.lines() == ["* BYE too-long"])
        // Nothing after it is read.
        viewer.write("\n2 PING\n")
        #expect(viewer.lines() == [])
    }

    /// A path outside every root is looked up on disk off the event loop (`fileWork`), not on the event
    /// loop: its answer, and the requests behind it, wait for that thread.
    @Test func statusOutsideTheRootsLooksAtTheDiskOffTheLoop() throws {
        let runner = QueuedWorkerThread()
        let h = try HubHarness(storeThread: runner)
        let viewer = try h.connect()
        let status = viewer.send("STATUS /elsewhere")
        let ping = viewer.send("PING")
        #expect(viewer.lines() == [] && runner.pending == 1)
        runner.runAll()
        #expect(viewer.lines() == ["\(status) ITEM /elsewhere outside badge=outside kind=file", "\(status) OK", "\(ping) OK"])
    }

    /// The built-in Ignore writes the root's ignore file off the event loop; the action is
    /// answered once it is written, and the requests behind it after.
    @Test func theIgnoreActionWritesTheFileOffTheLoop() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hub-ignore-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let runner = QueuedWorkerThread()
        let h = try HubHarness(storeThread: runner)
        let admin = try h.connect(role: .admin)
        let add = admin.send("ADD-ROOT \(dir)")
        var scan = ScanTree()
        scan.append(parent: -1, name: Array("a.log".utf8), kind: .file)
        h.hub.apply([.rootAdded(root: Array(dir.utf8), token: try #require(h.watcher.lastAddRootToken),
                                   result: .success(RootScan(scan: scan, ignoreFile: nil, watches: 1, degraded: nil)))])
        runner.runAll()
        #expect(admin.answer(add) == ["OK"])
        let viewer = try h.connect()
        let action = viewer.send("ACTION syncbadge.ignore \(dir)/a.log")
        let ping = viewer.send("PING")
        let file = dir + "/.syncbadgeignore"
        #expect(viewer.lines() == [] && !FileManager.default.fileExists(atPath: file))
        runner.runAll()
        #expect(viewer.lines() == ["\(action) OK", "\(ping) OK"])
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "/a.log\n")
    }

    /// A change to a synced file has its identity read off the event loop, not on the event
    /// loop; the events after it wait for the read, requests are answered meanwhile, and an
    /// identity that did not change changes nothing.
    @Test func aSyncedFilesIdentityIsReadOffTheLoopAndLaterEventsWaitForIt() throws {
        let runner = QueuedWorkerThread()
        let disk = FakeDisk()
        let h = try HubHarness(storeThread: runner, files: disk)
        try h.addRoot(files: ["a", "b", "c"])
        let provider = try h.connect(role: .provider)
        let set = provider.send("SET synced /r/a")
        h.passBarriers()
        // The SET waits for the file's identity, read off the loop.
        #expect(provider.answer(set) == [] && runner.pending == 1)
        h.runUntilIdle()
        #expect(provider.answer(set).first?.hasPrefix("OK gen=") == true)
        let viewer = try h.connect()
        // Unchanged on disk (metadata noise): still synced, once the read is back.
        h.hub.apply([.changed(path: Array("/r/a".utf8), kind: .file, what: .attrib)])
        #expect(runner.pending == 1)
        h.runUntilIdle()
        #expect(try viewer.request("STATUS /r/a").first?.hasPrefix("ITEM /r/a synced") == true)
        // Written: pending, and the deletion queued behind it waits for the read.
        disk.write("/r/a")
        h.hub.apply([.changed(path: Array("/r/a".utf8), kind: .file, what: .modify),
                        .deleted(path: Array("/r/b".utf8), wasDirectory: false)])
        #expect(runner.pending == 1)
        #expect(try viewer.request("STATUS /r/a").first?.hasPrefix("ITEM /r/a synced") == true)
        #expect(try viewer.request("STATUS /r/b").first?.hasPrefix("ITEM /r/b unknown") == true)
        h.hub.apply([.changed(path: Array("/r/c".utf8), kind: .file, what: .modify)])
        h.runUntilIdle()
        #expect(try viewer.request("STATUS /r/a").first?.hasPrefix("ITEM /r/a pending") == true)
        #expect(try viewer.request("STATUS /r/b").first?.hasPrefix("ITEM /r/b pending") == true)
        #expect(try viewer.request("STATUS /r/c").first?.hasPrefix("ITEM /r/c pending") == true)
    }

    /// A change that comes with the watcher's identities for its batch is compared with them:
    /// nothing is read off the loop, so nothing waits; they hold until the next batch's.
    @Test func aChangeWithTheWatchersIdentitiesIsComparedWithoutAReadOffTheLoop() throws {
        let runner = QueuedWorkerThread()
        let disk = FakeDisk()
        let h = try HubHarness(storeThread: runner, files: disk)
        try h.addRoot(files: ["a"])
        // Nothing synced yet: the watcher reads nothing below the root.
        #expect(h.watcher.compared.isEmpty)
        let provider = try h.connect(role: .provider)
        let set = provider.send("SET synced /r/a")
        h.passBarriers()
        h.runUntilIdle()
        #expect(provider.answer(set).first?.hasPrefix("OK gen=") == true)
        // Now it does, so that the next write is compared without a read off the loop.
        #expect(h.watcher.compared == [Array("/r".utf8)])
        let viewer = try h.connect()
        let a = Array("/r/a".utf8)
        // Unchanged (the watcher read what the SET recorded): still synced, at once, also when
        // the drain's slice cut the batch after its identities.
        h.hub.apply([.identities([a: disk.lstat(a)?.identity])])
        h.hub.apply([.changed(path: a, kind: .file, what: .attrib)])
        #expect(runner.pending == 0)
        #expect(try viewer.request("STATUS /r/a").first?.hasPrefix("ITEM /r/a synced") == true)
        // Written: the watcher's read differs, and the file is pending at once (the disk here
        // says otherwise, so a read off the loop would have kept it synced).
        let written = FileIdentity(inode: 1, size: 2, mtimeNs: 99, ctimeNs: 99)
        h.hub.apply([.identities([a: written]), .changed(path: a, kind: .file, what: .modify)])
        // (A read off the loop would hold the change back: what is queued now is its commit.)
        #expect(try viewer.request("STATUS /r/a").first?.hasPrefix("ITEM /r/a pending") == true)
        // A file the watcher found gone by then: the change counts.
        let resync = provider.send("SET synced /r/a")
        h.passBarriers()
        h.runUntilIdle()
        #expect(provider.answer(resync).first?.hasPrefix("OK gen=") == true)
        h.hub.apply([.identities([a: nil]), .changed(path: a, kind: .file, what: .attrib)])
        #expect(try viewer.request("STATUS /r/a").first?.hasPrefix("ITEM /r/a pending") == true)
        // A later batch whose watcher did not read it (a creation alone, say) has it read off
        // the loop (not compared with the last batch's).
        let again = provider.send("SET synced /r/a")
        h.passBarriers()
        h.runUntilIdle()
        #expect(provider.answer(again).first?.hasPrefix("OK gen=") == true)
        h.hub.apply([.identities([:]), .changed(path: a, kind: .file, what: .attrib)])
        #expect(runner.pending == 1)
        #expect(try viewer.request("STATUS /r/a").first?.hasPrefix("ITEM /r/a synced") == true)
        disk.write("/r/a")
        h.runUntilIdle()
        #expect(try viewer.request("STATUS /r/a").first?.hasPrefix("ITEM /r/a pending") == true)
    }

    /// Until the SET's second barrier, a synced file's change counts whatever its identity
    /// (the settling window): the watcher's read, equal to the one the SET recorded, does not
    /// keep it synced.
    @Test func whileASetSettlesTheWatchersIdentityDoesNotKeepTheFileSynced() throws {
        let runner = QueuedWorkerThread()
        let disk = FakeDisk()
        let h = try HubHarness(storeThread: runner, files: disk)
        try h.addRoot(files: ["a"])
        let provider = try h.connect(role: .provider)
        let viewer = try h.connect()
        let a = Array("/r/a".utf8)
        let set = provider.send("SET synced /r/a")
        // The SET's own barrier only: it applies (its identity read off the loop), and the
        // settling barrier it asks for then is not answered yet.
        for token in h.watcher.takeBarriers() { h.hub.apply([.barrier(token: token)]) }
        while runner.pending > 0 { runner.runAll() }
        #expect(provider.answer(set).first?.hasPrefix("OK gen=") == true)
        #expect(try viewer.request("STATUS /r/a").first?.hasPrefix("ITEM /r/a synced") == true)
        h.hub.apply([.identities([a: disk.lstat(a)?.identity]), .changed(path: a, kind: .file, what: .modify)])
        #expect(try viewer.request("STATUS /r/a").first?.hasPrefix("ITEM /r/a pending") == true)
    }
}

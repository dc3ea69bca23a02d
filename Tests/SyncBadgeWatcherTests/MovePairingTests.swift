import Testing
@testable import SyncBadgeWatcher

/// The pairing of a rename's two inotify events, fed by hand: no inotify.
@Suite struct MovePairingTests {
    static func b(_ s: String) -> [UInt8] { Array(s.utf8) }

    static func departure(_ cookie: UInt32, _ path: String, dir: Bool = false, wd: Int32? = nil) -> MovePairing.Departure {
        .init(cookie: cookie, path: b(path), isDir: dir, wd: wd)
    }

    @Test func aFileRenameIsPairedByItsCookie() {
        var m = MovePairing()
        m.movedFrom(Self.departure(7, "/r/a"))
        #expect(m.isWaiting)
        #expect(m.eventArrived(isMovedTo: true, cookie: 7) == nil)
        #expect(m.movedTo(cookie: 7) == .fileRenamed(from: Self.b("/r/a")))
        #expect(!m.isWaiting)
        #expect(m.queueDrained(now: .now) == .nothing)
    }

    @Test func aWatchedDirectoryKeepsItsWatch() {
        var m = MovePairing()
        m.movedFrom(Self.departure(3, "/r/d", dir: true, wd: 12))
        #expect(m.eventArrived(isMovedTo: true, cookie: 3) == nil)
        #expect(m.movedTo(cookie: 3) == .directoryRenamed(from: Self.b("/r/d"), wd: 12))
    }

    @Test func anUnwatchedDirectoryIsGoneThereAndNewHere() {
        var m = MovePairing()
        m.movedFrom(Self.departure(3, "/r/d", dir: true, wd: nil))
        #expect(m.movedTo(cookie: 3) == .directoryReplaced(from: Self.b("/r/d")))
    }

    @Test func anotherEventMeansTheDepartureMovedOut() {
        var m = MovePairing()
        let d = Self.departure(5, "/r/a")
        m.movedFrom(d)
        // Any event that is not its partner: a creation, or a move-to with another cookie.
        #expect(m.eventArrived(isMovedTo: false, cookie: 5) == d)
        #expect(!m.isWaiting)
        m.movedFrom(d)
        #expect(m.eventArrived(isMovedTo: true, cookie: 6) == d)
        #expect(m.movedTo(cookie: 6) == .appeared)
    }

    @Test func anEmptyQueueMeansTheDepartureMovedOutOnceTheGraceIsOver() {
        var m = MovePairing()
        let d = Self.departure(9, "/r/d", dir: true, wd: 4)
        let t0 = ContinuousClock.now
        m.movedFrom(d)
        let end = t0 + MovePairing.arrivalGrace
        #expect(m.queueDrained(now: t0) == .waitUntil(end))
        // Empty again before the end: the same end, counted from the first time.
        #expect(m.queueDrained(now: t0 + .milliseconds(20)) == .waitUntil(end))
        #expect(m.isWaiting)
        #expect(m.queueDrained(now: end) == .movedOut(d))
        #expect(m.queueDrained(now: end) == .nothing)
        #expect(m.movedTo(cookie: 9) == .appeared)
    }

    /// The kernel queues a rename's halves one after the other: the move-to may come after the
    /// queue was found empty, and is still the same rename.
    @Test func anArrivalWithinTheGraceIsTheSameRename() {
        var m = MovePairing()
        let t0 = ContinuousClock.now
        m.movedFrom(Self.departure(9, "/r/a"))
        #expect(m.queueDrained(now: t0) == .waitUntil(t0 + MovePairing.arrivalGrace))
        #expect(m.eventArrived(isMovedTo: true, cookie: 9) == nil)
        #expect(m.movedTo(cookie: 9) == .fileRenamed(from: Self.b("/r/a")))
        #expect(m.queueDrained(now: t0 + MovePairing.arrivalGrace) == .nothing)
    }

    /// A second departure gets a grace of its own, from when the queue is found empty after it.
    @Test func eachDepartureHasItsOwnGrace() {
        var m = MovePairing()
        let t0 = ContinuousClock.now, t1 = t0 + .milliseconds(40)
        let first = Self.departure(1, "/r/a"), second = Self.departure(2, "/r/b")
        m.movedFrom(first)
        #expect(m.queueDrained(now: t0) == .waitUntil(t0 + MovePairing.arrivalGrace))
        #expect(m.eventArrived(isMovedTo: false, cookie: 2) == first)
        m.movedFrom(second)
        #expect(m.queueDrained(now: t1) == .waitUntil(t1 + MovePairing.arrivalGrace))
        #expect(m.queueDrained(now: t0 + MovePairing.arrivalGrace) == .waitUntil(t1 + MovePairing.arrivalGrace))
        #expect(m.queueDrained(now: t1 + MovePairing.arrivalGrace) == .movedOut(second))
    }

    @Test func anArrivalWithNoDepartureCameFromOutside() {
        var m = MovePairing()
        #expect(m.eventArrived(isMovedTo: true, cookie: 1) == nil)
        #expect(m.movedTo(cookie: 1) == .appeared)
    }
}

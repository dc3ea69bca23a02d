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
        #expect(m.queueDrained() == nil)
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

    @Test func anEmptyQueueMeansTheDepartureMovedOut() {
        var m = MovePairing()
        let d = Self.departure(9, "/r/d", dir: true, wd: 4)
        m.movedFrom(d)
        #expect(m.queueDrained() == d)
        #expect(m.queueDrained() == nil)
        #expect(m.movedTo(cookie: 9) == .appeared)
    }

    @Test func anArrivalWithNoDepartureCameFromOutside() {
        var m = MovePairing()
        #expect(m.eventArrived(isMovedTo: true, cookie: 1) == nil)
        #expect(m.movedTo(cookie: 1) == .appeared)
    }
}

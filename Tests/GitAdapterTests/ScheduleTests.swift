import Testing
import SyncBadgeClient
import SyncBadgeProtocol
@testable import GitAdapter

/// When each repository's passes run, and when the adapter connects again: no timer while
/// nothing is due.
@Suite struct PassScheduleTests {
    let t0 = ContinuousClock.now

    @Test func nothingRunsUntilTheClaimThenARebuild() {
        var s = PassSchedule()
        #expect(s.next(now: t0) == nil && s.wake(now: t0) == nil)
        s.changed(bytes("a"), gen: 3)
        #expect(s.next(now: t0) == nil)
        s.claimAccepted()
        #expect(s.next(now: t0) == .rebuild && s.wake(now: t0) == t0)
        s.rebuilt()
        // What was reported before is in the listing; the full pass follows at once.
        #expect(s.dirty.isEmpty && s.next(now: t0) == .full)
        _ = s.take(full: true)
        #expect(s.next(now: t0) == nil && s.wake(now: t0) == nil)
    }

    func idle() -> PassSchedule {
        var s = PassSchedule()
        s.claimAccepted()
        s.rebuilt()
        _ = s.take(full: true)
        return s
    }

    @Test func reportedPathsMakeAnIncrementalPassUnlessTheTopOrTooManyChanged() {
        var s = idle()
        s.changed(bytes("a.txt"), gen: 4)
        s.changed(bytes("old"), gen: nil)
        #expect(s.next(now: t0) == .incremental && s.wake(now: t0) == t0)
        let taken = s.take(full: false)
        #expect(taken == [bytes("a.txt"): UInt64?.some(4), bytes("old"): UInt64?.none])
        #expect(s.next(now: t0) == nil)
        s.changed([], gen: 9)
        #expect(s.next(now: t0) == .full)
        s = idle()
        for i in 0...PassSchedule.incrementalLimit { s.changed(bytes("f\(i)"), gen: UInt64(i)) }
        #expect(s.next(now: t0) == .full)
    }

    @Test func theWatcherWaitsForGitsWritesToSettle() {
        var s = idle()
        s.requestFull(settle: true, now: t0)
        #expect(s.next(now: t0) == nil)
        #expect(s.wake(now: t0) == t0 + PassSchedule.settle)
        // A second request does not push the pass further back.
        s.requestFull(settle: true, now: t0 + .milliseconds(20))
        #expect(s.wake(now: t0) == t0 + PassSchedule.settle)
        #expect(s.next(now: t0 + PassSchedule.settle) == .full)
        // Reported paths wait for the full pass, which covers them.
        s.changed(bytes("x"), gen: 2)
        #expect(s.next(now: t0) == nil)
        // An operation's end does not wait.
        s.fullNow(t0)
        #expect(s.next(now: t0) == .full)
        let taken = s.take(full: true)
        #expect(taken == [bytes("x"): 2] && s.dirty.isEmpty && !s.needsFull && s.fullAt == nil)
    }

    @Test func aLostConnectionOrDroppedChangesMeanARebuild() {
        var s = idle()
        s.changesLost()
        #expect(s.next(now: t0) == .rebuild)
        s = idle()
        s.unclaimed()
        #expect(s.next(now: t0) == nil && !s.claimed && !s.built)
    }
}

@Suite struct ReconnectTests {
    let t0 = ContinuousClock.now

    @Test func backoffDoublesToTwoSecondsAndIsSaidOnce() {
        var r = Reconnect()
        #expect(r.due(now: t0))
        let first = r.lost(now: t0)
        #expect(first && r.retryAt == t0 + .milliseconds(50) && !r.due(now: t0))
        #expect(r.due(now: t0 + .milliseconds(50)))
        var waits: [Duration] = []
        for _ in 0..<8 {
            let said = r.lost(now: t0)
            #expect(!said)
            waits.append(r.retryAt! - t0)
        }
        #expect(waits == [100, 200, 400, 800, 1600, 2000, 2000, 2000].map { Duration.milliseconds($0) })
        let back = r.connected()
        #expect(back && r.retryAt == nil && r.due(now: t0))
        let again = r.lost(now: t0)
        #expect(again && r.retryAt == t0 + .milliseconds(50))
    }

    @Test func aFirstConnectionIsNotNewsAndADropRetriesAtOnce() {
        var r = Reconnect()
        let back = r.connected()
        #expect(!back)
        _ = r.lost(now: t0)
        r.dropped()
        #expect(r.due(now: t0) && r.saidLost)
    }
}

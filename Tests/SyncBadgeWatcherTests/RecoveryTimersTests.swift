import Testing
@testable import SyncBadgeWatcher

/// Timed recovery on a clock of the test's own: every event takes `now`.
@Suite struct RecoveryTimersTests {
    static func b(_ s: String) -> [UInt8] { Array(s.utf8) }
    let t0 = ContinuousClock.now

    @Test func emptyWhileAllIsWell() {
        var r = RecoveryTimers()
        #expect(r.isEmpty)
        #expect(r.secondsUntilDue(now: t0) == -1)
        #expect(r.takeDue(now: t0 + .seconds(3600)).isEmpty)
    }

    @Test func overflowsRescanEveryRootAndBackOffWhenTheyRepeat() {
        var r = RecoveryTimers()
        let roots = [Self.b("/b"), Self.b("/a")]
        #expect(r.overflowed(roots: roots, now: t0) == .zero)
        #expect(r.secondsUntilDue(now: t0) == 0)
        var due = r.takeDue(now: t0)
        #expect(due.rescans.map(\.path) == [Self.b("/a"), Self.b("/b")], "in path order")
        #expect(due.rescans.allSatisfy { $0.reason == .overflow })
        #expect(r.isEmpty)
        // A storm: each overflow within 10 s of the last waits twice as long, up to 16 s.
        var delays: [Duration] = []
        for i in 1...7 { delays.append(r.overflowed(roots: roots, now: t0 + .seconds(i))) }
        #expect(delays == [.seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16), .seconds(16), .seconds(16)])
        // Once the storm is over, the next overflow rescans at once again.
        #expect(r.overflowed(roots: roots, now: t0 + .seconds(100)) == .zero)
        due = r.takeDue(now: t0 + .seconds(100))
        #expect(due.rescans.count == 2)
    }

    @Test func anOverflowRescanServesAPendingDegradedOne() {
        var r = RecoveryTimers()
        r.schedule(rescanOf: Self.b("/a"), in: .seconds(10), reason: .degraded, now: t0)
        r.schedule(rescanOf: Self.b("/a"), in: .seconds(2), reason: .overflow, now: t0)
        r.schedule(rescanOf: Self.b("/a"), in: .seconds(20), reason: .degraded, now: t0)
        #expect(r.secondsUntilDue(now: t0) == 2)
        #expect(r.takeDue(now: t0 + .seconds(1)).isEmpty)
        let due = r.takeDue(now: t0 + .seconds(2))
        #expect(due.rescans.map(\.reason) == [.overflow])
    }

    @Test func aDegradedRootIsRescannedLessAndLessOftenUntilItRecovers() {
        var r = RecoveryTimers()
        let a = Self.b("/a")
        var now = t0
        var waits: [Int] = []
        for _ in 0..<6 {
            #expect(r.rootChecked(a, degraded: true, now: now) == false)
            // A rescan already pending is not pushed back.
            #expect(r.rootChecked(a, degraded: true, now: now + .seconds(1)) == false)
            waits.append(r.secondsUntilDue(now: now))
            now = now + .seconds(waits.last!)
            #expect(r.takeDue(now: now).rescans.map(\.reason) == [.degraded])
        }
        #expect(waits == [2, 4, 8, 16, 30, 30])
        #expect(r.rootChecked(a, degraded: false, now: now) == true, "recovered")
        #expect(r.rootChecked(a, degraded: false, now: now) == false, "said once")
        #expect(r.isEmpty)
        // The next episode starts from the first wait again.
        _ = r.rootChecked(a, degraded: true, now: now)
        #expect(r.secondsUntilDue(now: now) == 2)
        r.rootUnwatched(a)
        #expect(r.isEmpty)
        #expect(r.rootChecked(a, degraded: false, now: now) == false, "an unwatched root does not recover")
    }

    @Test func aVanishedRootIsCheckedWithBackoffAndAtOnceWhenSomethingHappens() {
        var r = RecoveryTimers()
        let a = Self.b("/a")
        r.awaitReturn(a, now: t0)
        #expect(r.secondsUntilDue(now: t0) == 1)
        var due = r.takeDue(now: t0 + .seconds(1))
        #expect(due.returnChecks.map(\.path) == [a])
        #expect(due.returnChecks.map(\.delay) == [.seconds(1)])
        #expect(r.isEmpty, "a check is taken off: the caller awaits the return again or has the root back")
        var delay = Duration.seconds(1)
        var delays: [Duration] = []
        for _ in 0..<6 {
            delay = RecoveryTimers.nextReturnDelay(after: delay)
            delays.append(delay)
        }
        #expect(delays == [.seconds(2), .seconds(4), .seconds(8), .seconds(16), .seconds(30), .seconds(30)])
        r.awaitReturn(a, delay: .seconds(16), now: t0)
        // Its sentinel saw something: now, and the backoff starts over.
        r.checkReturnSoon(a, now: t0 + .seconds(3))
        due = r.takeDue(now: t0 + .seconds(3))
        #expect(due.returnChecks.map(\.delay) == [.seconds(1)])
        // A change of mounts checks every vanished root now, keeping its backoff.
        r.awaitReturn(a, delay: .seconds(16), now: t0)
        r.awaitReturn(Self.b("/b"), delay: .seconds(8), now: t0)
        r.checkEveryReturnNow(now: t0 + .seconds(2))
        due = r.takeDue(now: t0 + .seconds(2))
        #expect(due.returnChecks.map(\.path) == [a, Self.b("/b")])
        #expect(due.returnChecks.map(\.delay) == [.seconds(16), .seconds(8)])
        r.awaitReturn(a, now: t0)
        r.stopAwaitingReturn(a)
        #expect(r.isEmpty)
    }

    @Test func anIgnoreFileWithNoCloseIsReadAfterASecond() {
        var r = RecoveryTimers()
        let a = Self.b("/a")
        r.ignoreFileCreated(root: a, now: t0)
        #expect(r.secondsUntilDue(now: t0 + .milliseconds(200)) == 1, "rounded up")
        #expect(r.takeDue(now: t0 + .milliseconds(999)).isEmpty)
        #expect(r.takeDue(now: t0 + .seconds(1)).ignoreFileReads == [a])
        // Its close came first: nothing is left to read.
        r.ignoreFileCreated(root: a, now: t0)
        r.ignoreFileRead(root: a)
        #expect(r.isEmpty)
    }

    @Test func dueWorkComesInItsOrderAndOnlyWhenDue() {
        var r = RecoveryTimers()
        r.ignoreFileCreated(root: Self.b("/i"), now: t0)
        r.awaitReturn(Self.b("/v"), delay: .seconds(1), now: t0)
        r.schedule(rescanOf: Self.b("/o"), in: .seconds(1), reason: .overflow, now: t0)
        r.schedule(rescanOf: Self.b("/later"), in: .seconds(5), reason: .degraded, now: t0)
        let due = r.takeDue(now: t0 + .seconds(1))
        #expect(due.rescans.map(\.path) == [Self.b("/o")])
        #expect(due.returnChecks.map(\.path) == [Self.b("/v")])
        #expect(due.ignoreFileReads == [Self.b("/i")])
        #expect(r.secondsUntilDue(now: t0 + .seconds(1)) == 4)
    }
}

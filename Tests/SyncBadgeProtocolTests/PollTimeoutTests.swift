import Testing
import SyncBadgeProtocol

/// The one rounding of a deadline for `poll`, shared by the daemon's watcher and the adapters.
@Suite struct PollTimeoutTests {
    let t0 = ContinuousClock.now

    @Test func roundsUpAndIsInfiniteWithoutADeadline() {
        #expect(PollTimeout.milliseconds(until: nil, now: t0) == -1)
        #expect(PollTimeout.milliseconds(until: t0 + .microseconds(1500), now: t0) == 2)
        #expect(PollTimeout.milliseconds(until: t0 - .seconds(1), now: t0) == 0)
    }
}

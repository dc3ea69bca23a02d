import NIOCore
import Testing
import SyncBadgeCore
@testable import SyncBadgeServer

/// Protocol 1.2's state machines, with no hub: awaited answers, what holds a `syncing`, and
/// the toolbar set.
@Suite struct ActionRepliesTests {
    let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    @Test func anAnswerReachesTheClientThatAskedOnce() {
        var r = ActionReplies()
        let token = r.delivered(client: 1, tag: "7", provider: 2, now: t0)
        #expect(r.nextDeadline == t0 + .seconds(10))
        // Only the provider it was sent to may answer it, once.
        #expect(r.answered(token, by: 3, message: nil, failed: false) == nil)
        #expect(r.answered(token, by: 2, message: Array("done".utf8), failed: false)
            == .init(client: 1, tag: "7", outcome: .answered(message: Array("done".utf8))))
        #expect(r.answered(token, by: 2, message: nil, failed: false) == nil)
        #expect(r.nextDeadline == nil)
    }

    @Test func aFailedAnswerIsAFailure() {
        var r = ActionReplies()
        let token = r.delivered(client: 1, tag: "a", provider: 2, now: t0)
        #expect(r.answered(token, by: 2, message: Array("disk full".utf8), failed: true)?.outcome == .failed(message: Array("disk full".utf8)))
    }

    @Test func tokensAreUniqueAndNeverReused() {
        var r = ActionReplies()
        let a = r.delivered(client: 1, tag: "a", provider: 2, now: t0)
        _ = r.answered(a, by: 2, message: nil, failed: false)
        let b = r.delivered(client: 1, tag: "b", provider: 2, now: t0)
        #expect(a != b)
        #expect(WireParser.isTag(Array(a.utf8)) && WireParser.isTag(Array(b.utf8)))
    }

    @Test func unansweredRequestsTimeOutAtTheirOwnDeadline() {
        var r = ActionReplies(timeout: .seconds(10))
        _ = r.delivered(client: 1, tag: "a", provider: 2, now: t0)
        _ = r.delivered(client: 1, tag: "b", provider: 2, now: t0 + .seconds(5))
        #expect(r.expired(now: t0 + .seconds(9)) == [])
        #expect(r.expired(now: t0 + .seconds(10)) == [.init(client: 1, tag: "a", outcome: .timeout)])
        #expect(r.nextDeadline == t0 + .seconds(15))
        #expect(r.expired(now: t0 + .seconds(15)) == [.init(client: 1, tag: "b", outcome: .timeout)])
        #expect(r.nextDeadline == nil)
    }

    @Test func aProviderThatLeavesOwesNoProviderInDeliveryOrder() {
        var r = ActionReplies()
        for tag in ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"] { _ = r.delivered(client: 1, tag: tag, provider: 2, now: t0) }
        let other = r.delivered(client: 1, tag: "z", provider: 3, now: t0)
        let replies = r.providerClosed(2)
        #expect(replies.map(\.tag) == ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"])
        #expect(replies.allSatisfy { $0.outcome == .noProvider })
        #expect(r.answered(other, by: 3, message: nil, failed: false) != nil)
    }

    @Test func aClientThatLeavesIsOwedNothing() {
        var r = ActionReplies()
        let token = r.delivered(client: 1, tag: "a", provider: 2, now: t0)
        r.clientClosed(1)
        #expect(r.answered(token, by: 2, message: nil, failed: false) == nil)
        #expect(r.nextDeadline == nil)
    }
}

@Suite struct SyncingReleasesTests {
    @Test func aSyncingWithoutALeaseBelongsToItsConnection() {
        var r = SyncingReleases()
        #expect(r.set([1, 2], state: .syncing, by: 7, leaseMs: nil, nowMs: 0) == [])
        #expect(r.set([3], state: .syncing, by: 8, leaseMs: nil, nowMs: 0) == [])
        // Another state, set by anyone, ends it.
        _ = r.set([2], state: .synced, by: 8, leaseMs: nil, nowMs: 0)
        #expect(r.connectionClosed(7) == [1])
        #expect(r.connectionClosed(7) == [])
        #expect(r.nextDeadlineMs == nil)
    }

    @Test func aLeaseOutlivesItsConnectionUntilItRunsOut() {
        var r = SyncingReleases()
        #expect(r.set([1], state: .syncing, by: 7, leaseMs: 60_000, nowMs: 1_000) == [.init(node: 1, untilMs: 61_000)])
        #expect(r.connectionClosed(7) == [])
        #expect(r.nextDeadlineMs == 61_000)
        #expect(r.fired(nowMs: 60_999).isEmpty)
        let due = r.fired(nowMs: 61_000)
        #expect(due.map(\.node) == [1] && due.map(\.reason) == [.leaseRanOut])
        #expect(r.nextDeadlineMs == nil)
    }

    @Test func anyLaterSetEndsTheLease() {
        var r = SyncingReleases()
        _ = r.set([1, 2], state: .syncing, by: 7, leaseMs: 60_000, nowMs: 0)
        // The same provider, with no lease this time: now its connection holds it.
        #expect(r.set([1], state: .syncing, by: 7, leaseMs: nil, nowMs: 10) == [.init(node: 1, untilMs: nil)])
        // Another provider's synced.
        #expect(r.set([2], state: .synced, by: 9, leaseMs: nil, nowMs: 10) == [.init(node: 2, untilMs: nil)])
        #expect(r.nextDeadlineMs == nil)
        #expect(r.connectionClosed(7) == [1])
        // A new lease replaces the old one.
        _ = r.set([3], state: .syncing, by: 7, leaseMs: 1_000, nowMs: 0)
        #expect(r.set([3], state: .syncing, by: 7, leaseMs: 5_000, nowMs: 500) == [.init(node: 3, untilMs: 5_500)])
        #expect(r.nextDeadlineMs == 5_500)
    }

    @Test func storedSyncingIsHeldAfterAStartUnlessAProviderReports() {
        var r = SyncingReleases(holdMs: 30_000)
        let (expired, forget) = r.restored(syncing: [1, 2, 3, 4], leases: [3: 100_000, 4: 5_000, 9: 200_000], nowMs: 10_000)
        #expect(expired == [4])
        #expect(forget == [9])
        #expect(r.nextDeadlineMs == 40_000)
        // A provider came back for 2.
        _ = r.set([2], state: .syncing, by: 5, leaseMs: nil, nowMs: 20_000)
        let due = r.fired(nowMs: 40_000)
        #expect(due.map(\.node) == [1] && due.map(\.reason) == [.providerDidNotComeBack])
        #expect(r.nextDeadlineMs == 100_000)
        #expect(r.connectionClosed(5) == [2])
    }

    @Test func aHoldEndsWhenEverythingItHeldWasReported() {
        var r = SyncingReleases(holdMs: 30_000)
        _ = r.restored(syncing: [1], leases: [:], nowMs: 0)
        _ = r.set([1], state: .synced, by: 5, leaseMs: nil, nowMs: 1)
        #expect(r.nextDeadlineMs == nil)
    }

    @Test func unclaimReleasesOnlyThatRootsUnleasedSyncing() {
        var r = SyncingReleases()
        _ = r.set([1, 2], state: .syncing, by: 7, leaseMs: nil, nowMs: 0)
        _ = r.set([3], state: .syncing, by: 7, leaseMs: 1_000, nowMs: 0)
        #expect(r.unclaimed(7) { $0 != 2 } == [1])
        #expect(r.connectionClosed(7) == [2])
        #expect(r.nextDeadlineMs == 1_000)
    }

    @Test func removedEntriesAreForgotten() {
        var r = SyncingReleases()
        _ = r.restored(syncing: [1, 2], leases: [2: 9_000], nowMs: 0)
        r.forget { _ in true }
        #expect(r.nextDeadlineMs == nil)
        #expect(r.fired(nowMs: 100_000).isEmpty)
    }
}

@Suite struct ToolbarSetTests {
    let pause = ToolbarItem(name: "Pause syncing", tooltip: "Pause")
    let resume = ToolbarItem(name: "Resume syncing", tooltip: "Resume")

    @Test func anItemIsPushedOnceItsProviderHoldsAClaim() {
        var t = ToolbarSet()
        #expect(t.defined(1, provider: "st", item: pause) == nil)
        // Listed all the same, as in 1.0 (and addressable by name), but not pushed as shown.
        #expect(t.lines == [.init(provider: "st", item: pause)] && t.provider(named: "st") == 1)
        #expect(t.current(named: "st") == .removed(provider: "st"))
        #expect(t.claimed(1) == .show(.init(provider: "st", item: pause)))
        #expect(t.current(named: "st") == .show(.init(provider: "st", item: pause)))
        #expect(t.claimed(1) == nil)
        #expect(t.defined(1, provider: "st", item: pause) == nil)
        #expect(t.defined(1, provider: "st", item: resume) == .show(.init(provider: "st", item: resume)))
    }

    @Test func itGoesWithTheLastClaimOrTheConnection() {
        var t = ToolbarSet()
        _ = t.claimed(1)
        _ = t.claimed(1)
        #expect(t.defined(1, provider: "st", item: pause) == .show(.init(provider: "st", item: pause)))
        #expect(t.unclaimed(1) == nil)
        #expect(t.unclaimed(1) == .removed(provider: "st"))
        // A client that missed the pushes is told what the others were.
        #expect(t.current(named: "st") == .removed(provider: "st"))
        #expect(t.unclaimed(1) == nil)
        #expect(t.claimed(1) == .show(.init(provider: "st", item: pause)))
        #expect(t.closed(1) == .removed(provider: "st"))
        #expect(t.lines.isEmpty)
        #expect(t.closed(1) == nil)
    }

    @Test func aProviderIsFoundByName() {
        var t = ToolbarSet()
        _ = t.defined(4, provider: "git", item: pause)
        _ = t.defined(2, provider: "st", item: resume)
        #expect(t.provider(named: "git") == 4)
        #expect(t.provider(named: "none") == nil)
        #expect(t.lines.map(\.provider) == ["st", "git"])
        #expect(t.current(named: "none") == .removed(provider: "none"))
    }
}

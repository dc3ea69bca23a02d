import Testing
@testable import SyncBadgeServer
import SyncBadgeProtocol

/// ObserverIndex: exact, counted, per connection (PROTOCOL.md, "Observing directories").
@Suite struct ObserverIndexTests {
    @Test func observingTwiceNeedsTwoUnobserves() {
        var index = ObserverIndex()
        index.observe(7, by: 1)
        index.observe(7, by: 1)
        #expect(index.observers(of: 7)?.count == 1)  // one push per connection
        #expect(index.count == 1)
        let r1 = index.unobserve(7, by: 1)
        #expect(r1 == .stillObserved)
        #expect(index.isObserving(1, 7))
        let r2 = index.unobserve(7, by: 1)
        #expect(r2 == .ended)
        #expect(!index.isObserving(1, 7) && index.observers(of: 7) == nil && index.count == 0)
        let r3 = index.unobserve(7, by: 1)
        #expect(r3 == .notObserved)
    }

    @Test func connectionsAreIndependent() {
        var index = ObserverIndex()
        index.observe(7, by: 1)
        index.observe(7, by: 2)
        index.observe(8, by: 2)
        #expect(index.count == 3)
        let r4 = index.unobserve(8, by: 1)
        #expect(r4 == .notObserved)
        let r5 = index.unobserve(7, by: 1)
        #expect(r5 == .ended)
        #expect(index.observers(of: 7).map { Array($0) } == [2])
    }

    @Test func aClosedConnectionObservesNothing() {
        var index = ObserverIndex()
        index.observe(7, by: 1)
        index.observe(8, by: 1)
        index.observe(8, by: 2)
        index.closed(1)
        #expect(index.observers(of: 7) == nil)
        #expect(index.observers(of: 8).map { Array($0) } == [2])
        #expect(index.count == 1 && Set(index.observedNodes) == [8])
        index.closed(1)  // twice: nothing
        #expect(index.count == 1)
    }

    @Test func aRemovedDirectoryEndsEveryObservationOfIt() {
        var index = ObserverIndex()
        index.observe(7, by: 1)
        index.observe(7, by: 1)
        index.observe(7, by: 2)
        index.observe(9, by: 2)
        let ended = index.removed(7)
        #expect(ended == [1, 2])
        #expect(!index.isObserving(1, 7) && !index.isObserving(2, 7) && index.isObserving(2, 9))
        let r6 = index.unobserve(7, by: 1)
        #expect(r6 == .notObserved)
        let r7 = index.removed(7).isEmpty
        #expect(r7)
        #expect(index.count == 1)
    }
}

/// Backpressure: what a slow reader misses and gets back.
@Suite struct BackpressureTests {
    @Test func aReaderThatKeepsUpGetsEveryPush() {
        var b = Backpressure()
        let r8 = b.push(.observed(3), backedUp: false)
        #expect(r8)
        let r9 = b.push(.root([1]), backedUp: false)
        #expect(r9)
        #expect(!b.hasMissed)
        let r10 = b.caughtUp(observing: { _ in true }, subscribed: { _ in true })
        #expect(r10 == [])
    }

    @Test func aSlowReaderGetsOneLinePerThingItMissed() {
        var b = Backpressure()
        for _ in 0..<3 {
            let r11 = b.push(.observed(3), backedUp: true)
            #expect(!r11)
            let r12 = b.push(.change(root: [9]), backedUp: true)
            #expect(!r12)
            let r13 = b.push(.root([9]), backedUp: true)
            #expect(!r13)
            let r14 = b.push(.badge("cloud"), backedUp: true)
            #expect(!r14)
        }
        let r15 = b.push(.observed(4), backedUp: true)
        #expect(!r15)
        #expect(b.hasMissed)
        let back = b.caughtUp(observing: { $0 == 3 }, subscribed: { _ in true })
        // ROOT and BADGE first (their latest lines), then a RESET per directory still observed,
        // then RESET-CHANGES: 4 is no longer observed.
        #expect(back == [.root([9]), .badge("cloud"), .reset(3), .resetChanges(root: [9])])
        #expect(!b.hasMissed)
        let r16 = b.caughtUp(observing: { _ in true }, subscribed: { _ in true })
        #expect(r16 == [])
    }

    /// An observed directory's own line is not in the listing a `RESET` brings: it comes back
    /// by itself, to a client that still observes the directory or its parent.
    @Test func aSlowReaderGetsAnObservedDirectorysOwnLineBack() {
        var b = Backpressure()
        for _ in 0..<2 {
            let written = b.push(.own(3, parent: 1), backedUp: true)
            #expect(!written)
        }
        _ = b.push(.observed(3), backedUp: true)
        _ = b.push(.own(5, parent: 2), backedUp: true)
        _ = b.push(.own(6, parent: 3), backedUp: true)
        #expect(b.hasMissed)
        // 3 observed; 6's parent is 3; neither 5 nor its parent.
        let back = b.caughtUp(observing: { $0 == 3 }, subscribed: { _ in true })
        #expect(back == [.item(3, parent: 1), .item(6, parent: 3), .reset(3)])
        let written = b.push(.own(3, parent: 1), backedUp: true)
        #expect(!written)
        let again = b.caughtUp(observing: { $0 == 1 }, subscribed: { _ in true })
        #expect(again == [.item(3, parent: 1)])
    }

    @Test func aGoneDirectoryNeedsNoReset() {
        var b = Backpressure()
        _ = b.push(.observed(3), backedUp: true)
        _ = b.push(.own(3, parent: 1), backedUp: true)
        b.removed(3)
        let r17 = b.caughtUp(observing: { _ in true }, subscribed: { _ in true })
        #expect(r17 == [])
        // The GONE of an observation that just ended has nothing to stand in for it.
        let r18 = b.push(.observed(nil), backedUp: true)
        #expect(r18)
    }

    @Test func feedsNoLongerFollowedAreNotReset() {
        var b = Backpressure()
        _ = b.push(.change(root: [1]), backedUp: true)
        _ = b.push(.change(root: [2]), backedUp: true)
        let r19 = b.caughtUp(observing: { _ in true }, subscribed: { $0 == [2] })
        #expect(r19 == [.resetChanges(root: [2])])
    }
}

/// The verb table.
@Suite struct VerbTests {
    @Test func rolesMatchTheContract() {
        let viewer = Verb.allCases.filter { $0.allowed(for: .viewer) }.map(\.rawValue)
        #expect(Set(viewer) == ["HELLO", "PING", "BYE", "ROOTS", "BADGES", "STATUS", "LIST", "OBSERVE", "UNOBSERVE", "MENU", "ACTION", "TOOLBAR", "STATS"])
        let admin = Verb.allCases.filter { $0.allowed(for: .admin) && !$0.allowed(for: .viewer) }.map(\.rawValue)
        #expect(Set(admin) == ["ADD-ROOT", "REMOVE-ROOT"])
        let provider = Verb.allCases.filter { $0.allowed(for: .provider) && !$0.allowed(for: .viewer) }.map(\.rawValue)
        #expect(Set(provider) == ["CLAIM", "SET", "CHANGES", "SUBSCRIBE-CHANGES", "DEFINE-BADGE", "DEFINE-MENU", "DEFINE-TOOLBAR", "ANSWER", "UNCLAIM"])
        #expect(!Verb.set.allowed(for: .admin) && !Verb.addRoot.allowed(for: .provider))
    }

    @Test func pathVerbsSayHowManyPaths() {
        #expect(Verb.status.pathCount == 1...Int.max)
        for v in [Verb.list, .observe, .unobserve, .addRoot, .removeRoot, .claim, .changes, .subscribeChanges] {
            #expect(v.pathCount == 1...1, "\(v)")
        }
        #expect(Verb.set.pathCount == nil && Verb.menu.pathCount == nil)
    }
}

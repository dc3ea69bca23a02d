import NIOCore
import NIOEmbedded
import Testing
import SyncBadgeCore
@testable import SyncBadgeServer

/// Protocol 1.2 through the hub, on an EmbeddedEventLoop (Support/HubHarness.swift):
/// answers, leases, the restart hold, UNCLAIM and the toolbar pushes, at the contract's times.
@Suite struct HubProtocol12Tests {
    /// A provider that claimed `/r` and defined one item.
    func provider(_ h: HubHarness, name: String = "engine") throws -> FakeClient {
        let p = try h.connect(role: .provider, name: name)
        #expect(try p.request("CLAIM /r") == ["OK"])
        #expect(try p.request("DEFINE-MENU items sync.now title=Sync%20now") == ["OK"])
        return p
    }

    /// `/r` holding `a`, claimed by a provider, and a viewer whose `ACTION sync.now /r/a
    /// reply=1` was delivered: the viewer's tag and the provider's token.
    struct Awaiting {
        let h: HubHarness
        let provider: FakeClient
        let viewer: FakeClient
        let tag: String
        let token: String
    }

    func awaiting(others: (HubHarness) throws -> Void = { _ in }) throws -> Awaiting {
        let h = try HubHarness()
        try h.addRoot(files: ["a"])
        let p = try provider(h)
        try others(h)
        let v = try h.connect()
        let tag = v.send("ACTION sync.now /r/a reply=1")
        let token = try #require(actions(p).token)
        return Awaiting(h: h, provider: p, viewer: v, tag: tag, token: token)
    }

    /// The `* ACTION` pushes a provider received (other pushes dropped), and the first one's token.
    func actions(_ p: FakeClient) -> (lines: [String], token: String?) {
        let lines = p.pushes().filter { $0.hasPrefix("ACTION ") }
        let token = lines.first?.split(separator: " ").first { $0.hasPrefix("reply=") }.map { String($0.dropFirst("reply=".count)) }
        return (lines, token)
    }

    @Test func helloAnnouncesTheNewCapabilities() throws {
        let h = try HubHarness()
        let c = h.stranger()
        let hello = try c.request("HELLO proto=1 role=viewer")
        let caps = hello.first?.split(separator: " ").first { $0.hasPrefix("caps=") }?.dropFirst("caps=".count).split(separator: ",") ?? []
        for cap in ["action-reply", "lease", "unclaim", "toolbar-push"] { #expect(caps.contains(Substring(cap)), "\(hello)") }
    }

    @Test func anAnsweredActionAnswersTheClientAndItsQueuedRequestsFollowInOrder() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["a"])
        let p = try provider(h)
        let v = try h.connect(name: "viewer")
        _ = try v.request("OBSERVE /r")
        let tag = v.send("ACTION sync.now /r/a reply=1")
        let ping = v.send("PING")
        let (pushed, tokenSent) = actions(p)
        #expect(pushed.count == 1)
        #expect(pushed.first?.hasPrefix("ACTION sync.now /r/a from=viewer reply=") == true)
        let token = try #require(tokenSent)
        // Nothing yet, not even the PING behind it; pushes still flow.
        #expect(v.answer(tag) == [] && v.answer(ping) == [])
        _ = h.set(p, "SET syncing /r/a progress=5")
        #expect(v.pushes().contains { $0.hasPrefix("ITEM /r/a syncing") })
        #expect(try p.request("ANSWER \(token) message=queued%20for%20upload") == ["OK"])
        let lines = v.lines()
        #expect(lines == ["\(tag) OK message=queued%20for%20upload", "\(ping) OK"])
        // Answered once only.
        #expect(try p.request("ANSWER \(token)").first?.hasPrefix("ERR not-found") == true)
        #expect(!h.hub.menus.answers.timer.isArmed)
    }

    @Test func aFailedAnswerIsAnErrorWithTheProvidersMessage() throws {
        let a = try awaiting()
        #expect(try a.provider.request("ANSWER \(a.token) failed=1 message=remote%20is%20full") == ["OK"])
        #expect(a.viewer.answer(a.tag) == ["ERR failed message=remote%20is%20full"])
    }

    @Test func noAnswerInTenSecondsIsATimeout() throws {
        let a = try awaiting()
        let (h, p, v, tag, token) = (a.h, a.provider, a.viewer, a.tag, a.token)
        h.loop.advanceTime(by: .milliseconds(9_999))
        #expect(v.answer(tag) == [])
        h.loop.advanceTime(by: .milliseconds(1))
        #expect(v.answer(tag).first?.hasPrefix("ERR timeout") == true)
        #expect(try p.request("ANSWER \(token)").first?.hasPrefix("ERR not-found") == true)
        #expect(!h.hub.menus.answers.timer.isArmed)
    }

    @Test func aProviderThatLeavesBeforeAnsweringIsNoProvider() throws {
        let a = try awaiting()
        a.provider.disconnect()
        #expect(a.viewer.answer(a.tag).first?.hasPrefix("ERR no-provider") == true)
        #expect(!a.h.hub.menus.answers.timer.isArmed)
    }

    @Test func anotherConnectionCannotAnswerAndWithoutReplyNothingChanges() throws {
        var second: FakeClient?
        let a = try awaiting { second = try $0.connect(role: .provider, name: "other") }
        let (p, v, tag, token) = (a.provider, a.viewer, a.tag, a.token)
        let other = try #require(second)
        #expect(try other.request("ANSWER \(token)").first?.hasPrefix("ERR not-found") == true)
        #expect(try p.request("ANSWER \(token)") == ["OK"])
        #expect(v.answer(tag) == ["OK"])
        // Without reply=1: OK once delivered, and no token.
        #expect(try v.request("ACTION sync.now /r/a") == ["OK"])
        #expect(actions(p).lines == ["ACTION sync.now /r/a from=test"])
        // Built-ins answer at once, reply=1 or not.
        #expect(try v.request("ACTION syncbadge.details /r/a reply=1").first?.hasPrefix("OK message=state=") == true)
        // ANSWER is a provider's verb.
        #expect(try v.request("ANSWER r1").first?.hasPrefix("ERR forbidden") == true)
    }

    @Test func aLeasedSyncingOutlivesItsConnectionUntilTheLeaseRunsOut() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["a", "b"])
        let v = try h.connect()
        _ = try v.request("OBSERVE /r")
        let p = try h.connect(role: .provider, name: "one-shot")
        #expect(h.set(p, "SET syncing /r/a progress=40 lease=60").first?.hasPrefix("OK gen=") == true)
        #expect(h.set(p, "SET syncing /r/b").first?.hasPrefix("OK gen=") == true)
        #expect(h.store.state.withLock { $0.leases.count } == 1)
        p.disconnect()
        // b went with the connection; a stays for its lease.
        _ = v.pushes()
        #expect(try v.request("STATUS /r/a").first?.hasPrefix("ITEM /r/a syncing") == true)
        #expect(try v.request("STATUS /r/b").first?.hasPrefix("ITEM /r/b pending") == true)
        h.loop.advanceTime(by: .seconds(59))
        #expect(try v.request("STATUS /r/a").first?.hasPrefix("ITEM /r/a syncing") == true)
        h.loop.advanceTime(by: .seconds(1))
        let pushes = v.pushes()
        #expect(pushes.contains { $0.hasPrefix("ITEM /r/a pending badge=pending") && $0.contains("lease") && !$0.contains("progress=") })
        #expect(h.store.state.withLock { $0.leases.isEmpty })
        #expect(!h.hub.providers.held.timer.isArmed)
    }

    @Test func aLaterSetEndsTheLease() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["a"])
        let p = try h.connect(role: .provider)
        _ = h.set(p, "SET syncing /r/a lease=60")
        #expect(h.hub.providers.held.timer.isArmed)
        _ = h.set(p, "SET synced /r/a")
        #expect(!h.hub.providers.held.timer.isArmed)
        #expect(h.store.state.withLock { $0.leases.isEmpty })
        h.loop.advanceTime(by: .seconds(61))
        #expect(try p.request("STATUS /r/a").first?.hasPrefix("ITEM /r/a synced") == true)
    }

    @Test func aLeaseIsOneToADayAndOnlyForSyncing() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["a"])
        let p = try h.connect(role: .provider)
        for bad in ["0", "86401", "-1", "soon", "1.5"] {
            #expect(h.set(p, "SET syncing /r/a lease=\(bad)").first?.hasPrefix("ERR bad-request") == true)
        }
        #expect(h.set(p, "SET syncing /r/a lease=86400").first?.hasPrefix("OK") == true)
        #expect(h.set(p, "SET synced /r/a lease=soon").first?.hasPrefix("OK") == true)
        #expect(!h.hub.providers.held.timer.isArmed)
    }

    @Test func aStoredSyncingIsHeldThirtySecondsAfterAStartThenReleased() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["a", "b"])
        let p = try h.connect(role: .provider)
        _ = h.set(p, "SET syncing /r/a")
        _ = h.set(p, "SET syncing /r/b")
        // As at start, with both stored `syncing` and no lease.
        h.restoreLeases([])
        let v = try h.connect()
        _ = try v.request("OBSERVE /r")
        h.loop.advanceTime(by: .seconds(10))
        // The provider came back for b.
        _ = h.set(p, "SET syncing /r/b progress=80")
        h.loop.advanceTime(by: .seconds(20))
        let pushes = v.pushes()
        #expect(pushes.contains { $0.hasPrefix("ITEM /r/a pending") && $0.contains("restarted") })
        #expect(try v.request("STATUS /r/b").first?.hasPrefix("ITEM /r/b syncing") == true)
        #expect(!h.hub.providers.held.timer.isArmed)
    }

    @Test func aLeaseThatRanOutWhileDownIsReleasedAtStart() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["a"])
        let p = try h.connect(role: .provider)
        _ = h.set(p, "SET syncing /r/a lease=5")
        let stored = try h.store.leases()
        #expect(stored.count == 1)
        h.loop.advanceTime(by: .seconds(3))
        // As at start: the stored lease, whose deadline has not come yet, is timed again.
        h.restoreLeases(stored)
        h.loop.advanceTime(by: .seconds(1))
        #expect(try p.request("STATUS /r/a").first?.hasPrefix("ITEM /r/a syncing") == true)
        h.loop.advanceTime(by: .seconds(1))
        #expect(try p.request("STATUS /r/a").first?.hasPrefix("ITEM /r/a pending") == true)
    }

    @Test func aLeaseThatRanOutWhileTheDaemonWasDownIsReleasedAtOnce() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["a", "b"])
        let p = try h.connect(role: .provider)
        _ = h.set(p, "SET syncing /r/a")
        _ = h.set(p, "SET syncing /r/b")
        let v = try h.connect()
        _ = try v.request("OBSERVE /r")
        // As at start: a's stored lease ran out a second ago, b has none (held).
        let ranOut = LoopWallClock(loop: h.loop).nowMs() - 1_000
        h.restoreLeases([StoreChanges.Lease(root: Array("/r".utf8), relativePath: Array("a".utf8), untilMs: ranOut),
                                  StoreChanges.Lease(root: Array("/r".utf8), relativePath: Array("gone".utf8), untilMs: ranOut + 60_000)])
        let pushes = v.pushes()
        #expect(pushes.contains { $0.hasPrefix("ITEM /r/a pending") && $0.contains("lease") }, "\(pushes)")
        #expect(!pushes.contains { $0.hasPrefix("ITEM /r/b") })
        // The rows of a and of the entry that is no more are forgotten.
        #expect(h.store.state.withLock { $0.leases.isEmpty })
        h.loop.advanceTime(by: .seconds(30))
        #expect(try v.request("STATUS /r/b").first?.hasPrefix("ITEM /r/b pending") == true)
    }

    @Test func theSyncedDeletionOfALeasedTombstoneEndsItsLease() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["a"])
        let p = try h.connect(role: .provider)
        h.hub.apply([.deleted(path: Array("/r/a".utf8), wasDirectory: false)])
        _ = h.set(p, "SET syncing /r/a lease=60")
        #expect(h.store.state.withLock { $0.leases.count } == 1)
        _ = h.set(p, "SET synced /r/a")
        #expect(try p.request("STATUS /r/a").first?.hasPrefix("ERR not-found") == true)
        #expect(h.store.state.withLock { $0.leases.isEmpty })
        #expect(!h.hub.providers.held.timer.isArmed)
    }

    @Test func unclaimGivesUpTheRootItsToolbarAndItsSyncing() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["a", "b"])
        let v = try h.connect()
        let quiet = try h.connect(hello: " roots=0")
        let p = try h.connect(role: .provider, name: "st")
        #expect(try p.request("DEFINE-TOOLBAR name=Pause tooltip=Pause%20syncing") == ["OK"])
        #expect(v.pushes().isEmpty)
        #expect(try p.request("CLAIM /r") == ["OK"])
        #expect(v.pushes() == ["ROOT /r unknown provider=st watches=1", "TOOLBAR name=Pause tooltip=Pause%20syncing provider=st"])
        #expect(try p.request("DEFINE-TOOLBAR name=Resume tooltip=Resume%20syncing") == ["OK"])
        #expect(v.pushes() == ["TOOLBAR name=Resume tooltip=Resume%20syncing provider=st"])
        _ = h.set(p, "SET syncing /r/a")
        _ = h.set(p, "SET syncing /r/b lease=600")
        _ = v.pushes()
        #expect(try p.request("UNCLAIM /r") == ["OK"])
        let pushes = v.pushes()
        #expect(pushes.contains { $0.hasPrefix("ROOT /r") && !$0.contains("provider=") })
        #expect(pushes.contains("TOOLBAR provider=st removed"))
        #expect(try v.request("STATUS /r/a").first?.hasPrefix("ITEM /r/a pending") == true)
        #expect(try v.request("STATUS /r/b").first?.hasPrefix("ITEM /r/b syncing") == true)
        #expect(try p.request("UNCLAIM /r").first?.hasPrefix("ERR not-found") == true)
        #expect(try p.request("UNCLAIM /nowhere").first?.hasPrefix("ERR not-found") == true)
        // Another provider may claim it now.
        let other = try h.connect(role: .provider, name: "git")
        #expect(try other.request("CLAIM /r") == ["OK"])
        #expect(quiet.pushes().isEmpty)
    }

    @Test func theToolbarLineGoesWithItsProvidersConnectionAndItsRoot() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["a"])
        let v = try h.connect()
        let p = try h.connect(role: .provider, name: "st")
        _ = try p.request("CLAIM /r")
        _ = try p.request("DEFINE-TOOLBAR name=Pause tooltip=Pause")
        #expect(v.pushes().contains("TOOLBAR name=Pause tooltip=Pause provider=st"))
        p.disconnect()
        #expect(v.pushes().contains("TOOLBAR provider=st removed"))
        #expect(try v.request("TOOLBAR") == ["OK"])

        let q = try h.connect(role: .provider, name: "st2")
        _ = try q.request("CLAIM /r")
        _ = try q.request("DEFINE-TOOLBAR name=Pause tooltip=Pause")
        _ = v.pushes()
        let admin = try h.connect(role: .admin)
        #expect(try admin.request("REMOVE-ROOT /r") == ["OK"])
        #expect(v.pushes().contains("TOOLBAR provider=st2 removed"))
    }
}

import Testing
import SyncBadgeCore
@testable import SyncBadgeServer

/// RootRegistry: a root's own life, transition by transition.
@Suite struct RootRegistryTests {
    typealias Registry = RootRegistry
    let a = Array("/a".utf8), ab = Array("/a/b".utf8), c = Array("/c".utf8)

    @Test func addingChecksOverlapsScansAndTheStateDirectory() {
        var r = Registry()
        #expect(r.check(adding: a, privatePaths: []) == .add)
        let client = 7
        let token = r.begin(a, ignoreDefaults: true, scan: .init(client: client, tag: "1", restored: false))
        #expect(r[a]?.scanning == true)
        #expect(r.check(adding: a, privatePaths: []) == .busy("/a is being scanned"))
        #expect(r.check(adding: ab, privatePaths: []) == .busy("overlaps the root /a"))
        #expect(r.check(adding: c, privatePaths: [Array("/c/state".utf8)]) == .add)
        #expect(r.check(adding: Array("/c/state/x".utf8), privatePaths: [Array("/c/state".utf8)]) == .busy("that is the daemon's own state directory"))
        let scan = r.scanAnswered(token, path: a)
        #expect(scan?.client == client && scan?.isNew == true)
        #expect(r.scanAnswered(token, path: a) == nil)  // answered once
        r.watched(a, ignoreFile: Array("*.log".utf8), degraded: nil)
        #expect(r[a]?.scanning == false && r[a]?.ignoreFile == Array("*.log".utf8))
        #expect(r.check(adding: a, privatePaths: []) == .alreadyARoot)
    }

    @Test func aFailedScanDropsANewRootAndKeepsAStoredOneInError() {
        var r = Registry()
        let t1 = r.begin(a, ignoreDefaults: true, scan: .init(client: nil, tag: "1", restored: false))
        let t2 = r.begin(c, ignoreDefaults: true, scan: .init(client: nil, tag: "", restored: true))
        r.scanFailed(a, scan: r.scanAnswered(t1, path: a)!, message: "no such directory")
        r.scanFailed(c, scan: r.scanAnswered(t2, path: c)!, message: "no such directory")
        #expect(r[a] == nil)
        #expect(r[c]?.error == "no such directory" && r[c]?.scanning == false)
    }

    @Test func removalVanishingAndReturning() {
        var r = Registry()
        let remove1 = r.remove(a)
        #expect(remove1 == .notARoot)
        let t = r.begin(a, ignoreDefaults: false, scan: .init(client: nil, tag: "1", restored: false))
        let remove2 = r.remove(a)
        #expect(remove2 == .scanning)
        _ = r.scanAnswered(t, path: a)
        r.watched(a, ignoreFile: nil, degraded: nil)
        let vanished3 = r.vanished(a, message: "gone")
        #expect(vanished3)
        let vanished4 = r.vanished(c, message: "gone")
        #expect(!vanished4)
        let back = r.refreshed(a, ignoreFile: nil, degraded: "watch-limit")
        #expect(back?.wasInError == true && back?.wasDegraded == nil)
        #expect(r[a]?.error == nil && r[a]?.degraded == "watch-limit")
        let remove5 = r.remove(a)
        #expect(remove5 == .removed && r.count == 0)
    }

    @Test func claimsAreHeldByOneClientAndGoWithIt() {
        var r = Registry()
        let t = r.begin(a, ignoreDefaults: true, scan: .init(client: nil, tag: "", restored: false))
        _ = r.scanAnswered(t, path: a)
        r.watched(a, ignoreFile: nil, degraded: nil)
        let one = 1, two = 2
        guard case .claimed = r.claim(a, by: one) else { Issue.record("not claimed"); return }
        guard case .claimed = r.claim(a, by: one) else { Issue.record("a second claim by the holder"); return }
        guard case .heldBy(let holder) = r.claim(a, by: two) else { Issue.record("claimed twice"); return }
        #expect(holder == one)
        let closed6 = r.closed(two)
        #expect(closed6 == [])
        let closed7 = r.closed(one)
        #expect(closed7 == [a])
        #expect(r.claimant(of: a) == nil)
    }

    @Test func aScanOutlivesTheClientThatAskedForIt() {
        var r = Registry()
        let client = 7
        let t = r.begin(a, ignoreDefaults: true, scan: .init(client: client, tag: "1", restored: false))
        _ = r.closed(client)
        let scanAnswered8 = r.scanAnswered(t, path: a)
        #expect(scanAnswered8?.client == nil)
    }

    /// A root's `ROOT` line: its state from the tree unless the root itself is in error, and a
    /// root in error always says why (1.1).
    @Test func aRootLineSaysWhyItIsInError() {
        var r = Registry()
        let token = r.begin(a, ignoreDefaults: true, scan: .init(client: nil, tag: "", restored: true))
        #expect(r.scanAnswered(token, path: a) != nil)
        let scanning = r.line(r[a]!, reported: nil, provider: nil, watches: 0)
        #expect(scanning == .init(path: a, state: .unknown, watches: 0, scanning: true))
        r.watched(a, ignoreFile: nil, degraded: "watch-limit")
        func reported(_ state: SyncState, own: SyncState = .synced, message: String? = nil, inError: Int = 0) -> Registry.Reported {
            .init(state: state, ownState: own, ownMessage: message, entriesInError: inError)
        }
        let synced = r.line(r[a]!, reported: reported(.synced), provider: "git", watches: 4)
        #expect(synced == .init(path: a, state: .synced, provider: "git", watches: 4, degraded: "watch-limit"))
        #expect(r.line(r[a]!, reported: reported(.error, inError: 1), provider: nil, watches: 4).message == "1 entry in error")
        #expect(r.line(r[a]!, reported: reported(.error, inError: 3), provider: nil, watches: 4).message == "3 entries in error")
        #expect(r.line(r[a]!, reported: reported(.error, own: .error, message: "quota", inError: 3), provider: nil, watches: 4).message == "quota")
        // The root's own error wins over whatever the tree says.
        let vanishedNow = r.vanished(a, message: "/a: the root directory was deleted")
        #expect(vanishedNow)
        let vanished = r.line(r[a]!, reported: reported(.synced), provider: nil, watches: 0)
        #expect(vanished.state == .error && vanished.message == "/a: the root directory was deleted")
    }
}

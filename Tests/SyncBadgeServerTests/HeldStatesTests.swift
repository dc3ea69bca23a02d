import Testing
import SyncBadgeCore
@testable import SyncBadgeServer

/// HeldStates: who holds each `syncing` and the lease rows to store, transition by transition,
/// on a real tree and no I/O.
@Suite struct HeldStatesTests {
    static let root = Array("/r".utf8)

    /// A root with files `a` and `b`, both `syncing` as a SET leaves them.
    static func tree() -> (StateTree, a: StateTree.NodeID, b: StateTree.NodeID) {
        var t = StateTree()
        var scan = ScanTree()
        _ = scan.append(parent: -1, name: Array("a".utf8), kind: .file)
        _ = scan.append(parent: -1, name: Array("b".utf8), kind: .file)
        t.addRoot(path: root, scan: scan, rules: IgnoreRules())
        for p in ["/r/a", "/r/b"] { _ = t.set(Array(p.utf8), SetRequest(state: .syncing), identify: { _ in nil }) }
        return (t, t.find(Array("/r/a".utf8))!, t.find(Array("/r/b".utf8))!)
    }

    @Test func aLeaseIsStoredAndRunsOutAndTheRestartHoldEnds() {
        var (t, a, b) = Self.tree()
        var h = HeldStates(holdMs: 30_000)
        h.set([a], dropped: [], state: .syncing, by: 1, leaseMs: 60_000, nowMs: 1_000, tree: &t)
        #expect(h.takeLeaseRows() == [StoreChanges.Lease(root: Self.root, relativePath: Array("a".utf8), untilMs: 61_000)])
        #expect(h.takeLeaseRows().isEmpty)
        // b has no lease: its connection holds it, and no row is stored.
        h.set([b], dropped: [], state: .syncing, by: 1, leaseMs: nil, nowMs: 1_000, tree: &t)
        #expect(h.takeLeaseRows().isEmpty)
        let early = h.fired(nowMs: 60_999, tree: &t)
        #expect(early.leased.isEmpty && early.held.isEmpty)
        let due = h.fired(nowMs: 61_000, tree: &t)
        #expect(due.leased == [a] && due.held.isEmpty)
        #expect(h.takeLeaseRows() == [StoreChanges.Lease(root: Self.root, relativePath: Array("a".utf8), untilMs: nil)])
    }

    @Test func atStartARunOutLeaseIsReleasedAndRowsOfGoneEntriesDropped() {
        var (t, a, b) = Self.tree()
        var h = HeldStates(holdMs: 30_000)
        let stored = [StoreChanges.Lease(root: Self.root, relativePath: Array("a".utf8), untilMs: 5_000),
                      StoreChanges.Lease(root: Self.root, relativePath: Array("gone".utf8), untilMs: 90_000)]
        let expired = h.restore(stored, nowMs: 10_000, tree: &t)
        #expect(expired == [a])
        let rows = h.takeLeaseRows()
        #expect(rows.contains(StoreChanges.Lease(root: Self.root, relativePath: Array("gone".utf8), untilMs: nil)))
        #expect(rows.contains(StoreChanges.Lease(root: Self.root, relativePath: Array("a".utf8), untilMs: nil)))
        // b was stored `syncing` without a lease: held until the hold ends.
        #expect(h.fired(nowMs: 10_000 + 29_999, tree: &t).held.isEmpty)
        #expect(h.fired(nowMs: 10_000 + 30_000, tree: &t).held == [b])
    }

    @Test func aRemovedRootTakesItsLeaseRowsWithIt() {
        var (t, a, _) = Self.tree()
        var h = HeldStates(holdMs: 30_000)
        h.set([a], dropped: [], state: .syncing, by: 1, leaseMs: 60_000, nowMs: 0, tree: &t)
        t.removeRoot(path: Self.root)
        h.rootRemoved(Self.root, tree: &t)
        #expect(h.takeLeaseRows().isEmpty && h.releases.nextDeadlineMs == nil)
    }
}

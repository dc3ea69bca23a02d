import Testing
@testable import SyncBadgeWatcher

/// The tree of watched directories, told by hand what the kernel watches: no inotify.
@Suite struct WatchTreeTests {
    static func b(_ s: String) -> [UInt8] { Array(s.utf8) }

    /// /r (1) with a (2), a/x (3) and b (4); /s (10) with c (11).
    static func twoRoots() -> WatchTree {
        var t = WatchTree()
        t.watched(1, path: b("/r"), parent: -1, name: b("/r"), root: nil)
        t.rootWatched(b("/r"), wd: 1)
        t.watched(2, path: b("/r/a"), parent: 1, name: b("a"), root: 1)
        t.watched(3, path: b("/r/a/x"), parent: 2, name: b("x"), root: 1)
        t.watched(4, path: b("/r/b"), parent: 1, name: b("b"), root: 1)
        t.watched(10, path: b("/s"), parent: -1, name: b("/s"), root: nil)
        t.rootWatched(b("/s"), wd: 10)
        t.watched(11, path: b("/s/c"), parent: 10, name: b("c"), root: 10)
        return t
    }

    @Test func pathsComeFromTheTree() {
        let t = Self.twoRoots()
        #expect(t.path(of: 1) == Self.b("/r"))
        #expect(t.path(of: 3) == Self.b("/r/a/x"))
        #expect(t.path(of: 11) == Self.b("/s/c"))
        #expect(t.path(of: 99) == nil)
        #expect(t.watchCounts == [Self.b("/r"): 4, Self.b("/s"): 2])
        #expect(Set(t.subtree(2)) == [2, 3])
    }

    @Test func forgettingASubtreeReturnsEveryWatchInIt() {
        var t = Self.twoRoots()
        #expect(Set(t.forget(2)) == [2, 3])
        #expect(t[1]?.children == [Self.b("b"): 4])
        #expect(t.path(of: 3) == nil)
        #expect(t.watchCounts[Self.b("/r")] == 2)
        #expect(t.forget(2) == [])
    }

    @Test func aRenamedDirectoryKeepsItsSubtreeUnderTheNewName() {
        var t = Self.twoRoots()
        #expect(t.relink(2, parent: 4, name: Self.b("moved")) == false)
        #expect(t.path(of: 3) == Self.b("/r/b/moved/x"))
        #expect(t[1]?.children[Self.b("a")] == nil)
        #expect(t.watchCounts[Self.b("/r")] == 4)
    }

    @Test func aDirectoryMovedToAnotherRootTakesItsWatchesAlong() {
        var t = Self.twoRoots()
        #expect(t.relink(2, parent: 11, name: Self.b("a")) == true)
        #expect(t.path(of: 3) == Self.b("/s/c/a/x"))
        #expect(t[3]?.root == 10)
        #expect(t.watchCounts == [Self.b("/r"): 2, Self.b("/s"): 4])
    }

    @Test func theSameWatchSeenUnderANewNameDropsTheOldLink() {
        var t = Self.twoRoots()
        // The kernel gives a directory already watched its old wd: `a` is now `b/a2`.
        t.watched(2, path: Self.b("/r/b/a2"), parent: 4, name: Self.b("a2"), root: 1)
        #expect(t[1]?.children[Self.b("a")] == nil)
        #expect(t.path(of: 3) == Self.b("/r/b/a2/x"))
        #expect(t.watchCounts[Self.b("/r")] == 4)
    }

    @Test func theWatchLimitDegradesARootUntilItIsUnwatched() {
        var t = Self.twoRoots()
        #expect(t.watchLimitReached(root: 1) == true)
        #expect(t.watchLimitReached(root: 1) == false, "logged once per episode")
        #expect(t.isDegraded(1))
        t.recovered(Self.b("/r"))
        #expect(t.watchLimitReached(root: 1) == true, "a new episode after recovering")
        #expect(Set(t.unwatchRoot(Self.b("/r")) ?? []) == [1, 2, 3, 4])
        #expect(!t.isDegraded(1))
        #expect(t.unwatchRoot(Self.b("/r")) == nil)
        #expect(t.watchCounts == [Self.b("/s"): 2])
    }

    @Test func aRescanForgetsWhatItDidNotSeeAgain() {
        var t = Self.twoRoots()
        _ = t.watchLimitReached(root: 1)
        guard let (wd, before) = t.beginRescan(Self.b("/r")) else {
            Issue.record("no rescan of a watched root")
            return
        }
        #expect(wd == 1)
        #expect(!t.isDegraded(1))
        // The rescan watches /r, a and a new c again; b and a/x are gone.
        t.watched(1, path: Self.b("/r"), parent: -1, name: Self.b("/r"), root: nil)
        t.watched(2, path: Self.b("/r/a"), parent: 1, name: Self.b("a"), root: 1)
        t.watched(5, path: Self.b("/r/c"), parent: 1, name: Self.b("c"), root: 1)
        #expect(Set(t.finishRescan(Self.b("/r"), before: before, newWd: 1)) == [3, 4])
        #expect(t.watchCounts[Self.b("/r")] == 3)
        #expect(t.path(of: 5) == Self.b("/r/c"))
        #expect(t.beginRescan(Self.b("/nowhere")) == nil)
    }
}

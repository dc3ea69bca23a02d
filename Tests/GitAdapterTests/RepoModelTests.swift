import Testing
@testable import GitAdapter

/// The planner: the fewest `SET`s that make the daemon show every verdict, each with the
/// generation it saw.
@Suite struct RepoModelTests {
    /// A tree as the daemon lists it after `ADD-ROOT`: everything `unknown`.
    func fresh() -> RepoModel {
        var m = RepoModel()
        m.upsert([], isDirectory: true, gen: 1, shown: Verdict(.unknown))
        m.listed(RepoModel.root, children: [
            (bytes(".git"), true, 1, Verdict(.unknown)),
            (bytes("a.txt"), false, 1, Verdict(.unknown)),
            (bytes("src"), true, 1, Verdict(.unknown)),
            (bytes("build"), true, 1, Verdict(.unknown)),
        ])
        m.listed(m.find(bytes("src"))!, children: [
            (bytes("src/x.c"), false, 3, Verdict(.unknown)),
            (bytes("src/y.c"), false, 7, Verdict(.pending)),
        ])
        m.listed(m.find(bytes("build"))!, children: [(bytes("build/o"), false, 1, Verdict(.unknown))])
        return m
    }

    func judge(_ map: [String: Verdict], default d: Verdict = .synced) -> RepoModel.Judge {
        { node, above in
            if above { return .ignored }
            if GitView.isGitDirectory(node.rel) { return .ignored }
            return map[String(decoding: node.rel, as: UTF8.self)] ?? d
        }
    }

    @Test func uniformSubtreesGoInOneRecursiveSetWithTheirNewestGeneration() {
        let m = fresh()
        let plan = m.plan(judge: judge(["build": .ignored]))
        #expect(plan == [
            RepoModel.PlannedSet(rel: [], verdict: .synced, gen: 1),
            RepoModel.PlannedSet(rel: bytes(".git"), verdict: .ignored, gen: 1),
            RepoModel.PlannedSet(rel: bytes("a.txt"), verdict: .synced, gen: 1),
            RepoModel.PlannedSet(rel: bytes("src"), verdict: .synced, gen: 7, recursive: true),
            RepoModel.PlannedSet(rel: bytes("build"), verdict: .ignored, gen: 1, recursive: true),
        ])
    }

    @Test func onlyWhatDiffersIsSentAgain() {
        var m = fresh()
        let j = judge(["build": .ignored, "src/y.c": Verdict(.pending, "modified")])
        for s in m.plan(judge: j) { m.applied(s) }
        #expect(m.plan(judge: j).isEmpty)
        // One file staged: one SET, with that file's generation.
        let staged = judge(["build": .ignored, "src/y.c": Verdict(.pending, "modified"), "src/x.c": Verdict(.pending, "staged")])
        #expect(m.plan(judge: staged) == [RepoModel.PlannedSet(rel: bytes("src/x.c"), verdict: Verdict(.pending, "staged"), gen: 3)])
    }

    /// A push of a few files in a big clean directory: those files alone, not the directory
    /// again (the daemon would record every entry a recursive SET covers).
    @Test func aFewChangesInABigSubtreeAreSetOneByOne() {
        var m = RepoModel()
        m.upsert([], isDirectory: true, gen: 1, shown: .synced)
        m.listed(RepoModel.root, children: [(bytes("big"), true, 1, .synced)])
        m.listed(m.find(bytes("big"))!, children: (0..<10).map { (bytes("big/f\($0)"), false, UInt64(1 + $0), $0 == 4 ? Verdict(.pending, "not pushed: 1 commit") : .synced) })
        #expect(m.plan(judge: judge([:])) == [RepoModel.PlannedSet(rel: bytes("big/f4"), verdict: .synced, gen: 5)])
    }

    @Test func aWholeTreeCleanIsOneSet() {
        var m = RepoModel()
        m.upsert([], isDirectory: true, gen: 2, shown: Verdict(.unknown))
        m.listed(RepoModel.root, children: [(bytes("d"), true, 2, Verdict(.unknown)), (bytes("f"), false, 5, Verdict(.pending))])
        m.listed(m.find(bytes("d"))!, children: [(bytes("d/g"), false, 9, Verdict(.unknown))])
        #expect(m.plan(judge: judge([:])) == [RepoModel.PlannedSet(rel: [], verdict: .synced, gen: 9, recursive: true)])
    }

    /// A directory never listed is not covered by a recursive SET: what is below it is not known.
    @Test func unknownChildrenAreListedFirst() {
        var m = RepoModel()
        m.upsert([], isDirectory: true, gen: 1, shown: .synced)
        m.listed(RepoModel.root, children: [(bytes("new"), true, 4, Verdict(.pending)), (bytes(".git"), true, 1, .ignored)])
        let j = judge([:])
        #expect(m.unknownDirectories(judge: j) == [m.find(bytes("new"))!])
        #expect(m.plan(judge: j) == [RepoModel.PlannedSet(rel: bytes("new"), verdict: .synced, gen: 4)])
    }

    @Test func outcomesUpdateWhatIsShown() {
        var m = fresh()
        // The recursive SET covers what is not newer than its generation.
        m.upsert(bytes("src/late.c"), isDirectory: false, gen: 12, shown: Verdict(.pending))
        m.applied(RepoModel.PlannedSet(rel: bytes("src"), verdict: .synced, gen: 7, recursive: true))
        #expect(m[m.find(bytes("src/x.c"))!].shown == .synced)
        #expect(m[m.find(bytes("src/late.c"))!].shown == Verdict(.pending))
        // Ignored on a directory covers everything below.
        m.applied(RepoModel.PlannedSet(rel: bytes("build"), verdict: .ignored, gen: 1))
        #expect(m[m.find(bytes("build/o"))!].shown == .ignored)
        // A tombstone set synced is gone.
        m.upsert(bytes("old.txt"), isDirectory: false, gone: true, gen: 20, shown: Verdict(.pending))
        m.applied(RepoModel.PlannedSet(rel: bytes("old.txt"), verdict: .synced, gen: 20))
        #expect(m.find(bytes("old.txt")) == nil)
        m.stale(bytes("a.txt"), gen: 30)
        #expect(m[m.find(bytes("a.txt"))!].gen == 30 && m[m.find(bytes("a.txt"))!].shown == Verdict(.pending))
    }

    @Test func listingReplacesChildrenButKeepsTombstones() {
        var m = fresh()
        let src = m.find(bytes("src"))!
        m.upsert(bytes("src/gone.c"), isDirectory: false, gone: true, gen: 8, shown: Verdict(.pending))
        m.listed(src, children: [(bytes("src/x.c"), false, 3, .synced)])
        #expect(m.find(bytes("src/y.c")) == nil)
        #expect(m.find(bytes("src/gone.c")) != nil)
        #expect(m[src].children.count == 2)
        m.remove(src)
        #expect(m.find(bytes("src/x.c")) == nil && m.find(bytes("src")) == nil)
        // Ids are reused.
        let again = m.upsert(bytes("z/deep/file"), isDirectory: false, gen: 1, shown: nil)
        #expect(m[again].rel == bytes("z/deep/file"))
        #expect(m.find(bytes("z/deep")) != nil && m[m.find(bytes("z/deep"))!].isDirectory)
    }

    @Test func aChangedDirectoryMustBeListed() {
        var m = fresh()
        let id = m.changed(bytes("src"), gen: 40, isDirectory: true, gone: false)
        #expect(!m[id].childrenKnown)
        let file = m.changed(bytes("a.txt"), gen: 41, isDirectory: false, gone: true)
        #expect(m[file].gone && m[file].gen == 41)
    }
}

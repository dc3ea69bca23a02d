import Testing
import SyncBadgeProtocol
@testable import GitAdapter

/// What an incremental pass does to the model: the daemon's reports, the `SET`s for the paths
/// it covers, and the daemon's answers.
@Suite struct ChangeTests {
    func listed() -> RepoModel {
        var m = RepoModel()
        m.upsert([], isDirectory: true, gen: 1, shown: .synced)
        m.listed(RepoModel.root, children: [
            (bytes("a.txt"), false, 1, .synced), (bytes("src"), true, 1, .synced), (bytes("build"), true, 1, .ignored),
        ])
        m.listed(m.find(bytes("src"))!, children: [(bytes("src/x.c"), false, 2, .synced)])
        m.listed(m.find(bytes("build"))!, children: [(bytes("build/o"), false, 1, .ignored)])
        return m
    }

    @Test func reportsMakePendingEntriesAndTombstones() {
        var m = listed()
        m.reported(bytes("src/y.c"), gen: 5, what: .create, isDirectory: false, from: bytes("a.txt"))
        let old = m[m.find(bytes("a.txt"))!]
        #expect(old.gone && old.shown == Verdict(.pending))
        let new = m[m.find(bytes("src/y.c"))!]
        #expect(!new.gone && new.gen == 5 && new.shown == Verdict(.pending))
        m.reported(bytes("src/x.c"), gen: 6, what: .delete, isDirectory: false, from: nil)
        #expect(m[m.find(bytes("src/x.c"))!].gone)
    }

    /// An attribute change on a listed directory keeps its children known; a directory
    /// created or moved in must be listed.
    @Test func aDirectorysChildrenAreKnownOnlyAfterAModify() {
        var m = listed()
        m.reported(bytes("src"), gen: 7, what: .modify, isDirectory: true, from: nil)
        #expect(m[m.find(bytes("src"))!].childrenKnown)
        m.reported(bytes("src"), gen: 8, what: .move, isDirectory: true, from: nil)
        #expect(!m[m.find(bytes("src"))!].childrenKnown)
        m.reported(bytes("new"), gen: 9, what: .modify, isDirectory: true, from: nil)
        #expect(!m[m.find(bytes("new"))!].childrenKnown)
    }

    @Test func eachChangedSubtreeIsPlannedOnceWithWhatIsAbove() {
        var m = listed()
        m.reported(bytes("src"), gen: 10, what: .modify, isDirectory: true, from: nil)
        m.reported(bytes("src/x.c"), gen: 11, what: .modify, isDirectory: false, from: nil)
        m.reported(bytes("build/o"), gen: 12, what: .modify, isDirectory: false, from: nil)
        let view = GitView(status: try! GitStatus.parse(bytes("# branch.oid a\0# branch.head main\0# branch.upstream o/main\0# branch.ab +0 -0\0"
            + "1 .M N... 100644 100644 100644 a a src/x.c\0! build/\0")))
        let judge = view.judge(root: .synced)
        let plan = m.plan(changed: [bytes("build/o"), bytes("src"), bytes("src/x.c")], ignoredDirectories: view.ignoredDirectories, judge: judge)
        // src/x.c goes with src; build/o is ignored by the directory above it.
        #expect(plan == [
            RepoModel.PlannedSet(rel: bytes("build/o"), verdict: .ignored, gen: 12),
            RepoModel.PlannedSet(rel: bytes("src"), verdict: .synced, gen: 10),
            RepoModel.PlannedSet(rel: bytes("src/x.c"), verdict: Verdict(.pending, "modified"), gen: 11),
        ])
        #expect(RepoModel.ancestors(of: bytes("a/b/c")) == [bytes("a/b"), bytes("a")])
        #expect(RepoModel.ancestors(of: bytes("a")).isEmpty)
    }

    @Test func answersUpdateTheModelAndReturnStaleAndRefused() {
        struct Refusal: Error, Equatable { var code: String }
        var m = listed()
        m.upsert(bytes("gone.txt"), isDirectory: false, gone: true, gen: 3, shown: Verdict(.pending))
        let plan = [
            RepoModel.PlannedSet(rel: bytes("a.txt"), verdict: Verdict(.pending, "modified"), gen: 1),
            RepoModel.PlannedSet(rel: bytes("src/x.c"), verdict: .synced, gen: 2),
            RepoModel.PlannedSet(rel: bytes("gone.txt"), verdict: .synced, gen: 3),
            RepoModel.PlannedSet(rel: bytes("build"), verdict: .ignored, gen: 1),
        ]
        let outcomes: [Result<SetOutcome, Refusal>] = [.success(.applied), .success(.stale(gen: 14)), .success(.notFound), .failure(Refusal(code: "bad-path"))]
        let (stale, refused) = m.answered(plan, outcomes)
        #expect(m[m.find(bytes("a.txt"))!].shown == Verdict(.pending, "modified"))
        #expect(stale.map(\.rel) == [bytes("src/x.c")] && stale.map(\.gen) == [14])
        #expect(m[m.find(bytes("src/x.c"))!].gen == 14)
        #expect(m.find(bytes("gone.txt")) == nil)
        #expect(refused.map(\.0) == [plan[3]] && refused.map(\.1) == [Refusal(code: "bad-path")])
    }
}

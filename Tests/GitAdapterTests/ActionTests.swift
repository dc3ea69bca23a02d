import Testing
import SyncBadgeProtocol
@testable import GitAdapter

/// Menu actions: what git is asked, and the answers.
@Suite struct GitActionTests {
    @Test func idsNameTheActions() {
        #expect(GitAction(id: "git.fetch-all") == .fetchAll)
        #expect(GitAction(id: "git.log") == .log)
        #expect(GitAction(id: "git.push") == .operation("push"))
        #expect(GitAction(id: "git.pull") == .operation("pull"))
        #expect(GitAction(id: "git.fetch") == .operation("fetch"))
        #expect(GitAction(id: "git.rebase") == .unknown("git.rebase"))
    }

    @Test func quickActionsNameTheirPathsLiterally() {
        let rels = [bytes("a b.txt"), bytes("*.c")]
        #expect(GitAction.stage.command(rels, hasHead: true)! == (["--literal-pathspecs", "add", "-A"], rels))
        // The top level itself is ".", for add and restore; and the whole history for log.
        #expect(GitAction.stage.command([[]], hasHead: true)!.paths == [bytes(".")])
        #expect(GitAction.log.command([[], bytes("a")], hasHead: true)!.paths.isEmpty)
        #expect(GitAction.log.command([bytes("a")], hasHead: true)!.paths == [bytes("a")])
        #expect(GitAction.unstage.command([bytes("a")], hasHead: true)!.arguments == ["--literal-pathspecs", "restore", "--staged"])
        // No commit yet: nothing to restore from, so out of the index.
        #expect(GitAction.unstage.command([bytes("a")], hasHead: false)!.arguments == ["--literal-pathspecs", "rm", "--cached", "-r", "-q"])
        #expect(GitAction.operation("push").command(rels, hasHead: true) == nil)
    }

    @Test func answersSayWhatGitDid() {
        let ok = GitOutput(status: 0, stdout: bytes("  abc123 2026-11-28 Ann: first\n"))
        #expect(GitAction.log.answer(ok, count: 1) == ActionAnswer("abc123 2026-11-28 Ann: first\n"))
        #expect(GitAction.log.answer(GitOutput(status: 0, stdout: []), count: 1) == ActionAnswer("no commit changed it"))
        #expect(GitAction.log.answer(GitOutput(status: 0, stdout: []), count: 2) == ActionAnswer("no commit changed them"))
        #expect(GitAction.stage.answer(GitOutput(status: 0, stdout: []), count: 1) == ActionAnswer("staged 1 path"))
        #expect(GitAction.unstage.answer(GitOutput(status: 0, stdout: []), count: 3) == ActionAnswer("unstaged 3 paths"))
        let failed = GitOutput(status: 128, stdout: [], stderr: bytes("fatal: pathspec 'x' did not match any files\n"))
        #expect(GitAction.stage.answer(failed, count: 1) == ActionAnswer("fatal: pathspec 'x' did not match any files", failed: true))
        #expect(GitAction.fetchingAll(1) == ActionAnswer("fetching 1 repository"))
        #expect(GitAction.fetchingAll(2) == ActionAnswer("fetching 2 repositories"))
    }
}

/// A push or pull on the root's badge, and the answers of the actions that started it.
@Suite struct OperationProgressTests {
    let t0 = ContinuousClock.now

    @Test func progressIsShownWhenItChangesAndAPercentageAtMostEveryInterval() {
        var p = OperationProgress(kind: "push", now: t0)
        #expect(p.toShow(now: t0, throttled: false) == Verdict(.syncing, "git push", progress: 0))
        p.sent(Verdict(.syncing, "git push", progress: 0), now: t0)
        #expect(p.toShow(now: t0, throttled: false) == nil)
        p.reader.feed(bytes("Writing objects:  45% (5/11)\r"))
        // A new phase goes out at once.
        let phase = p.toShow(now: t0, throttled: true)
        #expect(phase == Verdict(.syncing, "git push: Writing objects", progress: 45))
        p.sent(phase!, now: t0)
        p.reader.feed(bytes("Writing objects:  90% (10/11)\r"))
        #expect(p.toShow(now: t0 + .milliseconds(100), throttled: true) == nil)
        #expect(p.toShow(now: t0 + .milliseconds(100), throttled: false) == Verdict(.syncing, "git push: Writing objects", progress: 90))
        #expect(p.toShow(now: t0 + OperationProgress.interval, throttled: true) == Verdict(.syncing, "git push: Writing objects", progress: 90))
    }

    @Test func waitingActionsAreToldItRunsAfterTheirDeadline() {
        var p = OperationProgress(kind: "pull", now: t0)
        p.waiting("t1", now: t0)
        p.waiting("t2", now: t0 + .seconds(1))
        #expect(p.nextDeadline == t0 + OperationProgress.answerWithin)
        let early = p.due(now: t0 + .seconds(2))
        #expect(early.isEmpty)
        let first = p.due(now: t0 + OperationProgress.answerWithin)
        #expect(first == ["t1"] && p.replies.map(\.token) == ["t2"])
        #expect(p.interim == ActionAnswer("git pull is running: the folder shows its progress"))
    }

    @Test func theEndIsDoneOrGitsOwnWords() {
        var p = OperationProgress(kind: "push", now: t0)
        #expect(p.error(status: 0) == nil)
        #expect(p.final(error: nil) == ActionAnswer("git push: done"))
        #expect(p.error(status: 1) == "git push failed (exit status 1)")
        p.reader.feed(bytes("error: failed to push some refs to '/tmp/r.git'\n"))
        p.reader.finish()
        let said = p.error(status: 1)
        #expect(said == "error: failed to push some refs to '/tmp/r.git'")
        #expect(p.final(error: said) == ActionAnswer(said, failed: true))
    }
}

@Suite struct FollowedTreesTests {
    func loc(_ top: String) -> Location { Location(top: top, gitDir: top + "/.git", commonDir: top + "/.git") }

    @Test func addsDropsAndSaysEachRefusalOnce() {
        var t = FollowedTrees()
        let first = t.reconcile([("/a", .success(loc("/a"))), ("/a/sub", .success(loc("/a"))), ("/n", .failure(GitFailure(message: "not a git repository")))],
                                following: [])
        #expect(first == FollowedTrees.Change(add: [loc("/a")], drop: [], say: [("/n", "not a git repository")]))
        let same = t.reconcile([("/a", .success(loc("/a"))), ("/n", .failure(GitFailure(message: "not a git repository")))], following: ["/a"])
        #expect(same == FollowedTrees.Change())
        let next = t.reconcile([("/b", .success(loc("/b"))), ("/n", .failure(GitFailure(message: "no such directory")))], following: ["/a"])
        #expect(next == FollowedTrees.Change(add: [loc("/b")], drop: ["/a"], say: [("/n", "no such directory")]))
        // Named again after it was left out: said again.
        _ = t.reconcile([], following: ["/b"])
        let again = t.reconcile([("/n", .failure(GitFailure(message: "no such directory")))], following: [])
        #expect(again.say.map(\.dir) == ["/n"])
    }

    @Test func toolbarItemNamesBranchesAndUpstreams() {
        let main = BranchInfo(oid: "a", head: "main", upstream: "origin/main", ahead: 2, behind: 0)
        #expect(ToolbarText.item([]) == ToolbarItem(name: "git", tooltip: "git: no working tree followed"))
        #expect(ToolbarText.item([("/src/api", main)]) == ToolbarItem(name: "main ↑2", tooltip: "git: /src/api (main ↑2, upstream origin/main)"))
        #expect(ToolbarText.item([("/src/api", main), ("/src/web", nil)])
            == ToolbarItem(name: "api: main ↑2  web: ?", tooltip: "git: /src/api (main ↑2, upstream origin/main); /src/web (?)"))
    }
}

import Testing
@testable import GitAdapter

func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

/// Output recorded from git 2.39 (`git status --porcelain=v2 -z --branch --ignored=matching
/// --untracked-files=all`), NUL-separated.
@Suite struct GitStatusParsingTests {
    static let recorded = [
        "# branch.oid 2c7869ae5254b4433e636dea4519c5c497f986a2",
        "# branch.head master",
        "# branch.upstream origin/master",
        "# branch.ab +2 -1",
        "1 .M N... 100644 100644 100644 78981922613b2afb6025042ff6bd878ac1994e85 78981922613b2afb6025042ff6bd878ac1994e85 a.txt",
        "1 D. N... 100644 000000 000000 61780798228d17af2d34fce4cfbdf35556832472 0000000000000000000000000000000000000000 d/e/b.txt",
        "2 R. N... 100644 100644 100644 ce013625030ba8dba906f756967f9e9ca394464a ce013625030ba8dba906f756967f9e9ca394464a R100 new name.txt",
        "old name.txt",
        "u UU N... 100644 100644 100644 100644 1111111111111111111111111111111111111111 2222222222222222222222222222222222222222 3333333333333333333333333333333333333333 merge.txt",
        "? d/e/b.txt",
        "? u/v/q.txt",
        "! build/",
        "! d/z.log",
    ].joined(separator: "\0") + "\0"

    @Test func branchHeadersAndEveryRecordKind() throws {
        let s = try GitStatus.parse(bytes(Self.recorded))
        #expect(s.branch == BranchInfo(oid: "2c7869ae5254b4433e636dea4519c5c497f986a2", head: "master", upstream: "origin/master", ahead: 2, behind: 1))
        #expect(s.branch.hasUpstream)
        #expect(s.entries == [
            StatusEntry(path: bytes("a.txt"), kind: .changed(index: UInt8(ascii: "."), worktree: UInt8(ascii: "M"))),
            StatusEntry(path: bytes("d/e/b.txt"), kind: .changed(index: UInt8(ascii: "D"), worktree: UInt8(ascii: "."))),
            StatusEntry(path: bytes("new name.txt"), kind: .renamed(index: UInt8(ascii: "R"), worktree: UInt8(ascii: "."), from: bytes("old name.txt"))),
            StatusEntry(path: bytes("merge.txt"), kind: .unmerged("UU")),
            StatusEntry(path: bytes("d/e/b.txt"), kind: .untracked),
            StatusEntry(path: bytes("u/v/q.txt"), kind: .untracked),
            StatusEntry(path: bytes("build"), kind: .ignored, isDirectory: true),
            StatusEntry(path: bytes("d/z.log"), kind: .ignored),
        ])
    }

    @Test func initialDetachedAndGoneUpstream() throws {
        let initial = try GitStatus.parse(bytes("# branch.oid (initial)\0# branch.head main\0"))
        #expect(initial.branch == BranchInfo(oid: nil, head: "main"))
        #expect(!initial.branch.hasUpstream)
        let detached = try GitStatus.parse(bytes("# branch.oid abcdef0123\0# branch.head (detached)\0"))
        #expect(detached.branch.head == nil)
        // An upstream configured whose ref is gone: no `branch.ab` line.
        let gone = try GitStatus.parse(bytes("# branch.oid abc\0# branch.head main\0# branch.upstream origin/main\0"))
        #expect(gone.branch.upstream == "origin/main" && !gone.branch.hasUpstream)
    }

    /// Any byte but NUL in a name: newlines, spaces, invalid UTF-8.
    @Test func namesAreBytes() throws {
        var out = bytes("1 .M N... 100644 100644 100644 a a line\nbreak  two spaces") + [0]
        out += bytes("? latin1-") + [0xE9] + bytes(".txt") + [0]
        let s = try GitStatus.parse(out)
        #expect(s.entries.map(\.path) == [bytes("line\nbreak  two spaces"), bytes("latin1-") + [0xE9] + bytes(".txt")])
    }

    @Test func malformedRecordsAreRefused() {
        #expect(throws: GitStatus.ParseError.self) { try GitStatus.parse(bytes("1 .M N... 100644\0")) }
        #expect(throws: GitStatus.ParseError.self) { try GitStatus.parse(bytes("2 R. N... 1 1 1 a b R100 new\0")) }
        #expect(throws: GitStatus.ParseError.self) { try GitStatus.parse(bytes("X what\0")) }
    }

    /// `git log -c --format=%x01 --name-only -z --no-renames @{upstream}..HEAD`, recorded.
    @Test func unpushedCommitsPerPath() {
        let out: [UInt8] = [1, 0] + bytes("\na.txt") + [0] + [1, 0] + bytes("\na.txt") + [0] + bytes("new.txt") + [0] + bytes("u/v/q.txt") + [0]
        #expect(UnpushedLog.parse(out) == [bytes("a.txt"): 2, bytes("new.txt"): 1, bytes("u/v/q.txt"): 1])
        // A merge commit that changed nothing from every parent lists no names: its marker alone.
        #expect(UnpushedLog.parse([1, 0, 1, 0] + bytes("\nx") + [0]) == [bytes("x"): 1])
        // `-c`: a merge with a resolved conflict in f (recorded), then the commit it merged.
        #expect(UnpushedLog.parse([1, 0, 0] + bytes("f") + [0, 1, 0] + bytes("\nf") + [0]) == [bytes("f"): 2])
        #expect(UnpushedLog.parse([]) == [:])
    }
}

@Suite struct VerdictTests {
    let view = GitView(status: try! GitStatus.parse(bytes(GitStatusParsingTests.recorded)),
                       unpushed: [bytes("pushed-not.txt"): 2, bytes("a.txt"): 1, bytes("one.txt"): 1])

    func v(_ rel: String, dir: Bool = false, gone: Bool = false, above: Bool = false) -> Verdict {
        view.verdict(bytes(rel), isDirectory: dir, gone: gone, ancestorIgnored: above)
    }

    @Test func eachGitStateHasItsBadgeAndMessage() {
        #expect(v("a.txt") == Verdict(.pending, "modified"))
        // Deleted in the index, and back as an untracked file: the staged change comes first.
        #expect(v("d/e/b.txt") == Verdict(.pending, "staged"))
        #expect(v("new name.txt") == Verdict(.pending, "staged"))
        // The old name of a staged rename: a tombstone, pending until the rename is pushed.
        #expect(v("old name.txt", gone: true) == Verdict(.pending, "staged"))
        #expect(v("merge.txt") == Verdict(.conflict, "both modified"))
        #expect(v("u/v/q.txt") == Verdict(.pending, "untracked"))
        #expect(v("d/z.log") == .ignored)
        #expect(v("build", dir: true) == .ignored)
        #expect(v("build/o", above: true) == .ignored)
        #expect(v("pushed-not.txt") == Verdict(.pending, "not pushed: 2 commits"))
        #expect(v("one.txt") == Verdict(.pending, "not pushed: 1 commit"))
        #expect(v("clean.txt") == .synced)
        #expect(v("d", dir: true) == .synced)
        // A deletion git no longer mentions is done with: the tombstone goes.
        #expect(v("deleted-and-pushed.txt", gone: true) == .synced)
    }

    /// A directory moved away is one tombstone; git names the files it held.
    @Test func goneDirectoryTakesItsFilesState() throws {
        let moved = GitView(status: try GitStatus.parse(bytes("# branch.oid a\0# branch.head main\0# branch.upstream o/main\0# branch.ab +1 -0\0"
            + "1 .D N... 100644 100644 000000 a a docs/guide.md\0? manual/guide.md\0")), unpushed: [bytes("old/x.c"): 1])
        #expect(moved.verdict(bytes("docs"), isDirectory: false, gone: true, ancestorIgnored: false) == Verdict(.pending, "deleted"))
        #expect(moved.verdict(bytes("old"), isDirectory: false, gone: true, ancestorIgnored: false) == Verdict(.pending, "not pushed: 1 commit"))
        #expect(moved.verdict(bytes("doc"), isDirectory: false, gone: true, ancestorIgnored: false) == .synced)
    }

    @Test func gitItselfIsIgnored() {
        #expect(v(".git", dir: true) == .ignored)
        #expect(v(".git/index") == .ignored)
        #expect(v(".github", dir: true) == .synced)
        #expect(v(".gitignore") == .synced)
    }

    @Test func withoutUpstreamCleanFilesArePending() throws {
        let noUpstream = GitView(status: try GitStatus.parse(bytes("# branch.oid abc\0# branch.head topic\0? n.txt\0")))
        #expect(noUpstream.verdict(bytes("clean.txt"), isDirectory: false, gone: false, ancestorIgnored: false) == Verdict(.pending, "no upstream"))
        #expect(noUpstream.verdict(bytes("n.txt"), isDirectory: false, gone: false, ancestorIgnored: false) == Verdict(.pending, "untracked"))
        #expect(noUpstream.verdict(bytes("gone.txt"), isDirectory: false, gone: true, ancestorIgnored: false) == .synced)
    }

    /// Another repository inside the tree: git shows it as one untracked directory.
    @Test func nestedRepositoryIsUntrackedThroughout() throws {
        let nested = GitView(status: try GitStatus.parse(bytes("# branch.oid a\0# branch.head main\0# branch.upstream o/main\0# branch.ab +0 -0\0? vendor/lib/\0")))
        #expect(nested.verdict(bytes("vendor/lib"), isDirectory: true, gone: false, ancestorIgnored: false) == Verdict(.pending, "untracked"))
        #expect(nested.verdict(bytes("vendor/lib/src/x.c"), isDirectory: false, gone: false, ancestorIgnored: false) == Verdict(.pending, "untracked"))
        #expect(nested.verdict(bytes("vendor/other.c"), isDirectory: false, gone: false, ancestorIgnored: false) == .synced)
    }

    @Test func conflictKindsInGitsWords() {
        #expect(GitView.describeConflict("AA") == "both added")
        #expect(GitView.describeConflict("DU") == "deleted by us")
        #expect(GitView.describeConflict("UD") == "deleted by them")
    }

    @Test func toolbarText() {
        #expect(ToolbarText.branch(BranchInfo(oid: "a", head: "main", upstream: "origin/main", ahead: 2, behind: 1)) == "main ↑2 ↓1")
        #expect(ToolbarText.branch(BranchInfo(oid: "a", head: "main", upstream: "origin/main", ahead: 0, behind: 0)) == "main")
        #expect(ToolbarText.branch(BranchInfo(oid: "a", head: "main", upstream: "origin/main", ahead: 0, behind: 3)) == "main ↓3")
        #expect(ToolbarText.branch(BranchInfo(oid: "a", head: "topic")) == "topic (no upstream)")
        #expect(ToolbarText.branch(BranchInfo(oid: "a", head: "main", upstream: "origin/main")) == "main (upstream gone)")
        #expect(ToolbarText.branch(BranchInfo(oid: "0123456789abcdef", head: nil)) == "detached at 0123456 (no upstream)")
        #expect(ToolbarText.name([]) == "git")
        let two = ToolbarText.name([("api", BranchInfo(oid: "a", head: "main", upstream: "o/main", ahead: 1, behind: 0)),
                                    ("web", BranchInfo(oid: "b", head: "dev", upstream: "o/dev", ahead: 0, behind: 0))])
        #expect(two == "api: main ↑1  web: dev")
    }
}

@Suite struct ProgressTests {
    /// git push's stderr with `--progress`, recorded, fed in pieces cut anywhere.
    static let push = "Enumerating objects: 12, done.\nCounting objects:   8% (1/12)\rCounting objects: 100% (12/12), done.\n"
        + "Delta compression using up to 2 threads\nCompressing objects: 100% (4/4), done.\n"
        + "Writing objects:  45% (5/11)\rWriting objects: 100% (11/11), 890 bytes | 890.00 KiB/s, done.\n"
        + "Total 11 (delta 0), reused 0 (delta 0), pack-reused 0\nTo /tmp/remote.git\n   2c78699..6ec7868  master -> master\n"

    @Test(arguments: [1, 7, 1000])
    func phaseAndPercentFromPieces(size: Int) {
        var r = ProgressReader()
        let all = bytes(Self.push)
        var seen: [Int] = []
        var i = 0
        while i < all.count {
            r.feed(Array(all[i..<min(all.count, i + size)]))
            if let p = r.percent, seen.last != p { seen.append(p) }
            i += size
        }
        r.finish()
        #expect(r.phase == "Writing objects")
        #expect(r.percent == 100)
        if size == 1 { #expect(seen == [8, 100, 45, 100]) }
        #expect(!r.messages.contains { $0.contains("%") })
    }

    @Test func rejectionIsTheFailureMessage() {
        var r = ProgressReader()
        r.feed(bytes("To /tmp/remote.git\n ! [rejected]        master -> master (fetch first)\nerror: failed to push some refs to '/tmp/remote.git'\n"
            + "hint: Updates were rejected because the remote contains work that you do\nhint: not have locally.\n"))
        r.finish()
        #expect(r.failureMessage == "! [rejected]        master -> master (fetch first)\nerror: failed to push some refs to '/tmp/remote.git'")
        var other = ProgressReader()
        other.feed(bytes("fatal: could not read Username for 'https://example.com': terminal prompts disabled\n"))
        #expect(other.failureMessage == "fatal: could not read Username for 'https://example.com': terminal prompts disabled")
    }

    @Test func remoteProgressIsNotOurs() {
        var r = ProgressReader()
        r.feed(bytes("remote: Counting objects:  50% (1/2)\rReceiving objects:  30% (3/10)\r"))
        #expect(r.phase == "Receiving objects" && r.percent == 30)
    }
}

@Suite struct ReposFileTests {
    @Test func pathFollowsXDG() {
        #expect(ReposFile.path(environment: ["XDG_CONFIG_HOME": "/c", "HOME": "/h"]) == "/c/syncbadge/git-repos")
        #expect(ReposFile.path(environment: ["XDG_CONFIG_HOME": "relative", "HOME": "/h"]) == "/h/.config/syncbadge/git-repos")
        #expect(ReposFile.path(environment: ["HOME": "/h"]) == "/h/.config/syncbadge/git-repos")
    }

    @Test func parseAddRemove() {
        let text = "# my trees\n/a/one\n\n  ~/src/two  \n~\n"
        #expect(ReposFile.parse(text, home: "/h") == ["/a/one", "/h/src/two", "/h"])
        #expect(ReposFile.adding("/a/one", to: text, home: "/h") == nil)
        #expect(ReposFile.adding("/b", to: "/a", home: "/h") == "/a\n/b\n")
        #expect(ReposFile.adding("/b", to: "", home: "/h") == "/b\n")
        #expect(ReposFile.removing("/h/src/two", from: text, home: "/h") == "# my trees\n/a/one\n\n~\n")
        #expect(ReposFile.removing("/nowhere", from: text, home: "/h") == nil)
    }
}

import Testing
@testable import SyncBadgeCore

/// PROTOCOL.md, "States and badges" and "The state rules", on the state tree alone.
@Suite struct StateTreeTests {
    static let spec = ["a/", "a/x", "a/y", "a/sub/", "a/sub/z", "f", "e/"]

    func make(_ spec: [String] = StateTreeTests.spec, rules: IgnoreRules = .none, lastGen: UInt64 = 0) -> StateTree {
        var t = StateTree(lastGen: lastGen)
        t.addRoot(path: b("/r"), scan: scan(spec), rules: rules)
        return t
    }

    func names(_ t: StateTree, _ ids: [StateTree.NodeID]) -> [String] {
        ids.map { String(decoding: t.name($0), as: UTF8.self) }
    }

    // MARK: Storage

    /// Memory per entry is a target of its own (docs/PERFORMANCE.md): a field added in line
    /// to every node should be a decision, not an accident.
    @Test func nodesStayCompact() {
        #expect(MemoryLayout<EntryRecord>.size <= 56)
        #expect(MemoryLayout<StateTree.Node>.stride <= 80)
    }

    @Test func onlyNodesWithChildrenTakeADirectorySlotAndFreedSlotsAreReused() throws {
        var t = make()
        // /r, /r/a and /r/a/sub have children; the files and the empty /r/e do not.
        #expect(t.dirs.count == 3)
        #expect(t.nodes[Int(try #require(t.id("/r/f")))].dir == -1)
        #expect(t.nodes[Int(try #require(t.id("/r/e")))].dir == -1)
        t.removeRoot(path: b("/r"))
        #expect(t.freeDirs.count == 3)
        t.addRoot(path: b("/r"), scan: scan(Self.spec), rules: .none)
        #expect(t.dirs.count == 3)
        #expect(t.freeDirs.isEmpty)
        #expect(t.counts(try #require(t.id("/r/a"))) == counts([(.unknown, 4)]))
        // A first child gives an empty directory its slot.
        t.localChange(b("/r/e/new"), kind: .file)
        #expect(t.nodes[Int(try #require(t.id("/r/e")))].dir >= 0)
        #expect(t.counts(try #require(t.id("/r/e"))) == counts([(.pending, 1)]))
    }

    /// Names live in one arena and children in one table: churn must neither grow the arena
    /// without bound nor leave the table full of deleted slots.
    @Test func churnReusesNamesAndChildSlots() throws {
        var t = make([])
        for round in 0..<200 {
            for i in 0..<50 { t.localChange(b("/r/dir\(round)/file-with-a-long-name-\(i)"), kind: .file) }
            t.removeRoot(path: b("/r"))
            t.addRoot(path: b("/r"), scan: scan([]), rules: .none)
        }
        #expect(t.liveCount == 1)
        #expect(t.childTable.used == 0)
        // One round's names are under 2 KB; 200 rounds wrote over 300 KB.
        #expect(t.names.count - t.namesFree < 100)
        #expect(t.names.count < 200_000)
        #expect(t.childTable.slots.count <= 256)
        t.localChange(b("/r/x/y"), kind: .file)
        #expect(t.path(try #require(t.id("/r/x/y"))) == b("/r/x/y"))
    }

    /// readdir on a directory changed while it is read can list a name twice (tmpfs, after a
    /// rename): the tree keeps one entry for it, at any depth, as read last, counted once.
    @Test func aNameListedTwiceByAScanIsOneEntry() throws {
        var s = ScanTree()
        let a = s.append(parent: -1, name: b("a"), kind: .dir)
        s.append(parent: a, name: b("x"), kind: .file)
        s.append(parent: a, name: b("x"), kind: .dir)
        s.append(parent: -1, name: b("f"), kind: .file)
        let twin = s.append(parent: -1, name: b("a"), kind: .dir)   // read twice: its entries twice
        s.append(parent: twin, name: b("x"), kind: .dir)
        s.append(parent: twin, name: b("y"), kind: .file)
        var t = StateTree()
        t.addRoot(path: b("/r"), scan: s, rules: .none)
        #expect(t.liveCount == 5)
        #expect(t.record(try #require(t.id("/r/a/x"))).kind == .dir)
        #expect(names(t, t.children(try #require(t.id("/r/a")))) == ["x", "y"])
        #expect(t.counts(try #require(t.id("/r"))) == counts([(.unknown, 4)]))
        #expect(t.counts(try #require(t.id("/r/a"))) == counts([(.unknown, 2)]))
        #expect(t.childTable.used == 4)
    }

    // MARK: Adding a root

    @Test func everyEntryStartsUnknownWithTheRootsGeneration() throws {
        let t = make(lastGen: 100)
        let root = try #require(t.id("/r"))
        #expect(t.record(root).gen == 101)
        #expect(t.lastGen == 101)
        for p in Self.spec {
            let path = "/r/" + (p.hasSuffix("/") ? String(p.dropLast()) : p)
            let id = try #require(t.id(path), "\(path)")
            #expect(t.record(id).state == .unknown, "\(path)")
            #expect(t.record(id).gen == 101, "\(path)")
            #expect(t.record(id).kind == (p.hasSuffix("/") ? .dir : .file), "\(path)")
        }
        #expect(t.counts(root) == counts([(.unknown, 7)]))
        #expect(t.counts(try #require(t.id("/r/a"))) == counts([(.unknown, 4)]))
        #expect(t.counts(try #require(t.id("/r/e"))).isEmpty)
        #expect(t.reportedState(root) == .unknown)
        #expect(t.liveCount == 8)
        #expect(names(t, t.children(root)) == ["a", "e", "f"])
        #expect(t.path(try #require(t.id("/r/a/sub/z"))) == b("/r/a/sub/z"))
    }

    @Test func lookupAcrossRoots() throws {
        var t = make()
        t.addRoot(path: b("/s/t"), scan: scan(["q"]), rules: .none)
        #expect(t.root(containing: b("/s/t/q"))?.path == b("/s/t"))
        #expect(t.root(containing: b("/r/a/x"))?.path == b("/r"))
        #expect(t.root(containing: b("/s")) == nil)
        #expect(t.root(containing: b("/rr")) == nil)
        #expect(t.id("/s/t/q") != nil)
        #expect(t.id("/r/q") == nil)
        #expect(t.id("/s/t/nothing") == nil)
        #expect(t.liveCount == 10)
        t.removeRoot(path: b("/s/t"))
        #expect(t.id("/s/t/q") == nil)
        #expect(t.liveCount == 8)
        #expect(t.roots.map(\.path) == [b("/r")])
    }

    // MARK: Local changes

    @Test func localChangeMakesAFilePendingAndRollsUp() throws {
        var t = make()
        let before = t.lastGen
        t.localChange(b("/r/a/sub/z"), kind: .file)
        let z = try #require(t.id("/r/a/sub/z"))
        #expect(t.record(z).state == .pending)
        #expect(t.record(z).gen == before + 1)
        #expect(t.lastGen == before + 1)
        // A change inside a directory reaches it only through the roll-up.
        #expect(t.state("/r/a/sub") == .unknown)
        #expect(t.state("/r/a") == .unknown)
        #expect(t.reported("/r/a/sub") == .pending)
        #expect(t.reported("/r/a") == .pending)
        #expect(t.reported("/r") == .pending)
        #expect(t.reported("/r/e") == .unknown)
        #expect(t.reported("/r/f") == .unknown)
        #expect(t.counts(try #require(t.id("/r/a"))) == counts([(.unknown, 3), (.pending, 1)]))
        #expect(t.counts(try #require(t.id("/r"))) == counts([(.unknown, 6), (.pending, 1)]))
        let view = t.view(try #require(t.id("/r/a")))
        #expect(view.state == .pending)
        #expect(view.counts == counts([(.unknown, 3), (.pending, 1)]))
        #expect(t.view(z).counts == nil)

        // Another change of the same file: a newer gen, counts unchanged.
        t.localChange(b("/r/a/sub/z"), kind: .file)
        #expect(t.record(z).gen == before + 2)
        #expect(t.counts(try #require(t.id("/r"))) == counts([(.unknown, 6), (.pending, 1)]))
    }

    @Test func newPathsArePendingAndMissingParentsAreCreated() throws {
        var t = make()
        let before = t.lastGen
        t.localChange(b("/r/n1/n2/new"), kind: .file)
        let n1 = try #require(t.id("/r/n1")), n2 = try #require(t.id("/r/n1/n2")), f = try #require(t.id("/r/n1/n2/new"))
        #expect(t.record(n1).kind == .dir && t.record(n1).state == .pending)
        #expect(t.record(n2).kind == .dir && t.record(n2).state == .pending)
        #expect(t.record(f).kind == .file && t.record(f).state == .pending)
        #expect(before < t.record(n1).gen && t.record(n1).gen < t.record(n2).gen && t.record(n2).gen < t.record(f).gen)
        #expect(t.counts(try #require(t.id("/r"))) == counts([(.unknown, 7), (.pending, 3)]))
        #expect(t.liveCount == 11)
    }

    @Test func aNewDirectoryAndItsScannedContentsArePending() throws {
        var t = make()
        t.localChange(b("/r/e/d"), kind: .dir, subtree: scan(["k", "m/", "m/n"]))
        let d = try #require(t.id("/r/e/d"))
        #expect(t.record(d).state == .pending)
        for p in ["/r/e/d/k", "/r/e/d/m", "/r/e/d/m/n"] {
            #expect(t.state(p) == .pending, "\(p)")
        }
        #expect(t.counts(d) == counts([(.pending, 3)]))
        #expect(t.counts(try #require(t.id("/r/e"))) == counts([(.pending, 4)]))
        #expect(t.counts(try #require(t.id("/r"))) == counts([(.unknown, 7), (.pending, 4)]))
    }

    @Test func theRootsOwnChangeMakesItPending() throws {
        var t = make()
        t.localChange(b("/r"), kind: .dir)
        #expect(t.state("/r") == .pending)
        #expect(t.liveCount == 8)
    }

    @Test func changesOutsideEveryRootAreIgnored() {
        var t = make()
        let before = t.lastGen
        t.localChange(b("/elsewhere/x"), kind: .file)
        t.localChange(b("/rr/x"), kind: .file)
        t.deleted(b("/elsewhere/x"))
        #expect(t.lastGen == before)
        #expect(t.liveCount == 8)
    }

    // MARK: Roll-up

    @Test func rollUpOrderInTheTree() throws {
        var t = make(["f1", "f2", "f3", "f4", "f5", "f6", "i"])
        for p in ["/r", "/r/f1", "/r/f2", "/r/f3", "/r/f4", "/r/f5", "/r/f6"] { t.force(p, .synced) }
        t.force("/r/i", .ignored)
        #expect(t.reported("/r") == .synced)
        let steps: [(String, SyncState)] = [("/r/f2", .unknown), ("/r/f3", .pending), ("/r/f4", .syncing),
                                            ("/r/f5", .conflict), ("/r/f6", .error)]
        for (p, s) in steps {
            t.force(p, s)
            #expect(t.reported("/r") == s, "after \(p) → \(s)")
        }
        // And back down, worst first.
        for (p, _) in steps.reversed() {
            t.force(p, .synced)
        }
        #expect(t.reported("/r") == .synced)
        #expect(t.counts(try #require(t.id("/r"))) == counts([(.synced, 6), (.ignored, 1)]))
    }

    @Test func rolledUpStateFollowsTheOrder() {
        let order = SyncState.worstFirst
        #expect(order == [.error, .conflict, .syncing, .pending, .unknown, .synced])
        for i in order.indices {
            for j in order.indices {
                // Two descendants in states i and j: the worse one wins, whatever the own state below both.
                let c = counts([(order[i], 1), (order[j], 1)])
                #expect(rolledUpState(own: .synced, counts: c) == order[min(i, j)], "\(order[i]) + \(order[j])")
                // The own state counts too.
                #expect(rolledUpState(own: order[i], counts: counts([(order[j], 1)])) == order[min(i, j)])
            }
        }
    }

    @Test func ignoredNeverRaisesARollUp() {
        for s in SyncState.worstFirst {
            #expect(rolledUpState(own: s, counts: counts([(.ignored, 5)])) == s)
            #expect(rolledUpState(own: s, counts: StateCounts()) == s)
        }
        #expect(rolledUpState(own: .ignored, counts: counts([(.error, 1)])) == .ignored)
        #expect(counts([(.ignored, 3)]).worst == nil)
    }

    @Test func countsWireValue() {
        let c = counts([(.pending, 2), (.synced, 1), (.ignored, 4)])
        #expect(c.wireValue == "pending:2,synced:1,ignored:4")
        #expect(StateCounts(wireValue: c.wireValue) == c)
        #expect(StateCounts(wireValue: "")?.isEmpty == true)
        #expect(StateCounts(wireValue: "bogus:1") == nil)
        #expect(StateCounts(wireValue: "pending") == nil)
        #expect(c.total == 7)
    }

    // MARK: Deletions and moves

    @Test func aDeletedFileLeavesATombstone() throws {
        var t = make()
        let before = t.lastGen
        t.deleted(b("/r/a/x"))
        let x = try #require(t.id("/r/a/x"))
        #expect(t.record(x).kind == .gone)
        #expect(t.record(x).state == .pending)
        #expect(t.record(x).gen == before + 1)
        #expect(t.view(x).kind == .gone)
        let a = try #require(t.id("/r/a"))
        #expect(names(t, t.children(a)) == ["sub", "y"])
        #expect(t.counts(a) == counts([(.unknown, 3), (.pending, 1)]))
        #expect(t.reported("/r/a") == .pending)
        #expect(t.liveCount == 8)
        // Deleting it again changes nothing.
        t.deleted(b("/r/a/x"))
        #expect(t.record(x).gen == before + 1)
        #expect(t.lastGen == before + 1)
    }

    @Test func aDeletedDirectoryLeavesOneTombstone() throws {
        var t = make()
        t.deleted(b("/r/a"))
        let a = try #require(t.id("/r/a"))
        #expect(t.record(a).kind == .gone)
        #expect(t.record(a).state == .pending)
        for p in ["/r/a/x", "/r/a/y", "/r/a/sub", "/r/a/sub/z"] {
            #expect(t.id(p) == nil, "\(p)")
        }
        #expect(t.counts(a).isEmpty)
        let root = try #require(t.id("/r"))
        #expect(t.counts(root) == counts([(.unknown, 2), (.pending, 1)]))
        #expect(names(t, t.children(root)) == ["e", "f"])
        #expect(t.liveCount == 4)
    }

    @Test func theRootIsNeverTombstoned() {
        var t = make()
        t.deleted(b("/r"))
        #expect(t.state("/r") == .unknown)
        #expect(t.liveCount == 8)
    }

    @Test func aRenamedFileIsATombstonePlusAPendingEntry() throws {
        var t = make()
        t.moved(from: b("/r/a/x"), to: b("/r/e/x2"), kind: .file)
        let old = try #require(t.id("/r/a/x")), new = try #require(t.id("/r/e/x2"))
        #expect(t.record(old).kind == .gone && t.record(old).state == .pending)
        #expect(t.record(new).kind == .file && t.record(new).state == .pending)
        #expect(t.record(new).gen > t.record(old).gen)
        #expect(t.counts(try #require(t.id("/r/e"))) == counts([(.pending, 1)]))
        #expect(t.counts(try #require(t.id("/r"))) == counts([(.unknown, 6), (.pending, 2)]))
    }

    @Test func aMovedDirectoryIsPendingThroughout() throws {
        var t = make()
        t.moved(from: b("/r/a"), to: b("/r/e/b"), kind: .dir)
        let old = try #require(t.id("/r/a"))
        #expect(t.record(old).kind == .gone)
        #expect(t.id("/r/a/x") == nil)
        for p in ["/r/e/b", "/r/e/b/x", "/r/e/b/y", "/r/e/b/sub", "/r/e/b/sub/z"] {
            #expect(t.state(p) == .pending, "\(p)")
        }
        #expect(t.record(try #require(t.id("/r/e/b/sub"))).kind == .dir)
        #expect(t.counts(try #require(t.id("/r/e/b"))) == counts([(.pending, 4)]))
        #expect(t.counts(try #require(t.id("/r"))) == counts([(.unknown, 2), (.pending, 6)]))
        #expect(t.liveCount == 9)
    }

    @Test func aMoveBetweenRootsWorksToo() throws {
        var t = make()
        t.addRoot(path: b("/s"), scan: ScanTree(), rules: .none)
        t.moved(from: b("/r/a"), to: b("/s/a"), kind: .dir)
        #expect(t.record(try #require(t.id("/r/a"))).kind == .gone)
        #expect(t.counts(try #require(t.id("/s"))) == counts([(.pending, 5)]))
        #expect(t.state("/s/a/sub/z") == .pending)
    }

    @Test func recreatingATombstonedPathRevivesItPending() throws {
        var t = make()
        t.deleted(b("/r/f"))
        let f = try #require(t.id("/r/f"))
        let tombGen = t.record(f).gen
        t.localChange(b("/r/f"), kind: .file)
        #expect(t.id("/r/f") == f)
        #expect(t.record(f).kind == .file)
        #expect(t.record(f).state == .pending)
        #expect(t.record(f).gen > tombGen)
        #expect(names(t, t.children(try #require(t.id("/r")))) == ["a", "e", "f"])

        // A re-created directory does not bring back what was below it.
        t.deleted(b("/r/a"))
        t.localChange(b("/r/a"), kind: .dir)
        #expect(t.record(try #require(t.id("/r/a"))).kind == .dir)
        #expect(t.id("/r/a/x") == nil)
        #expect(t.counts(try #require(t.id("/r/a"))).isEmpty)
    }

    @Test func aDirectoryReplacedByAFileLosesItsContents() throws {
        var t = make()
        t.localChange(b("/r/a"), kind: .file)
        #expect(t.record(try #require(t.id("/r/a"))).kind == .file)
        #expect(t.id("/r/a/x") == nil)
        #expect(t.liveCount == 4)
        #expect(t.counts(try #require(t.id("/r"))) == counts([(.unknown, 2), (.pending, 1)]))
    }

    // MARK: Ignore rules

    static let ignoreSpec = ["app.log", "build/", "build/out.o", "build/sub/", "build/sub/deep.txt",
                             "src/", "src/main.swift", "src/x.swp", "build.txt"]
    static let ignoreRules = IgnoreRules(fileContents: b("*.log\nbuild/\n"), defaults: true)

    @Test func entriesMatchingTheRulesAreIgnored() throws {
        let t = make(Self.ignoreSpec, rules: Self.ignoreRules)
        for p in ["app.log", "build", "build/out.o", "build/sub", "build/sub/deep.txt", "src/x.swp"] {
            #expect(t.state("/r/" + p) == .ignored, "\(p)")
        }
        for p in ["src", "src/main.swift", "build.txt"] {
            #expect(t.state("/r/" + p) == .unknown, "\(p)")
        }
        #expect(t.record(try #require(t.id("/r/app.log"))).ruleIgnored)
        #expect(t.reported("/r/build") == .ignored)
        #expect(t.counts(try #require(t.id("/r"))) == counts([(.ignored, 6), (.unknown, 3)]))
        #expect(t.counts(try #require(t.id("/r/src"))) == counts([(.ignored, 1), (.unknown, 1)]))
    }

    @Test func ignoredEntriesNeverRaiseTheRollUp() {
        var t = make(Self.ignoreSpec, rules: Self.ignoreRules)
        for p in ["/r", "/r/src", "/r/src/main.swift", "/r/build.txt"] { t.force(p, .synced) }
        #expect(t.reported("/r") == .synced)
        #expect(t.reported("/r/src") == .synced)
    }

    @Test func changesToIgnoredEntriesChangeNothing() throws {
        var t = make(Self.ignoreSpec, rules: Self.ignoreRules)
        let log = try #require(t.id("/r/app.log"))
        let gen = t.record(log).gen
        t.localChange(b("/r/app.log"), kind: .file)
        #expect(t.record(log).state == .ignored)
        #expect(t.record(log).gen == gen)

        t.localChange(b("/r/new.log"), kind: .file)
        t.localChange(b("/r/build/new.c"), kind: .file)
        t.localChange(b("/r/build/sub/n/deep"), kind: .file)
        t.localChange(b("/r/build/d2"), kind: .dir, subtree: scan(["k"]))
        for p in ["/r/new.log", "/r/build/new.c", "/r/build/sub/n", "/r/build/sub/n/deep", "/r/build/d2", "/r/build/d2/k"] {
            #expect(t.state(p) == .ignored, "\(p)")
        }
        #expect(t.counts(try #require(t.id("/r"))) == counts([(.ignored, 12), (.unknown, 3)]))
        #expect(t.reported("/r") == .unknown)
    }

    @Test func aDeletedIgnoredEntryLeavesNoTombstone() throws {
        var t = make(Self.ignoreSpec, rules: Self.ignoreRules)
        _ = t.drainChanges()
        t.deleted(b("/r/app.log"))
        t.deleted(b("/r/build"))
        #expect(t.id("/r/app.log") == nil)
        #expect(t.id("/r/build") == nil)
        #expect(t.counts(try #require(t.id("/r"))) == counts([(.ignored, 1), (.unknown, 3)]))
        #expect(t.liveCount == 5)
        let removed = t.drainChanges().removals.map { text($0.path) }
        #expect(Set(removed) == ["/r/app.log", "/r/build", "/r/build/sub"])
    }

    @Test func directoryOnlyRulesSkipFiles() {
        let t = make(["build", "x/", "x/build/"], rules: IgnoreRules(fileContents: b("build/"), defaults: false))
        #expect(t.state("/r/build") == .unknown)
        #expect(t.state("/r/x/build") == .ignored)
    }

    @Test func rulesThatStopIgnoringMakeEntriesPending() throws {
        var t = make(Self.ignoreSpec, rules: Self.ignoreRules)
        let before = t.lastGen
        t.setRules(root: b("/r"), rules: .none)
        var gens: Set<UInt64> = []
        for p in ["app.log", "build", "build/out.o", "build/sub", "build/sub/deep.txt", "src/x.swp"] {
            let id = try #require(t.id("/r/" + p))
            #expect(t.record(id).state == .pending, "\(p)")
            #expect(!t.record(id).ruleIgnored, "\(p)")
            #expect(t.record(id).gen > before, "\(p)")
            gens.insert(t.record(id).gen)
        }
        #expect(gens.count == 6)
        #expect(t.state("/r/src/main.swift") == .unknown)
        #expect(t.counts(try #require(t.id("/r"))) == counts([(.pending, 6), (.unknown, 3)]))
        #expect(t.reported("/r") == .pending)
    }

    @Test func rulesThatStartIgnoringDropTombstones() throws {
        var t = make(Self.ignoreSpec)
        t.deleted(b("/r/app.log"))
        t.localChange(b("/r/src/main.swift"), kind: .file)
        t.setRules(root: b("/r"), rules: IgnoreRules(fileContents: b("*.log\nsrc/\n"), defaults: false))
        #expect(t.id("/r/app.log") == nil)
        #expect(t.state("/r/src") == .ignored)
        #expect(t.state("/r/src/main.swift") == .ignored)
        #expect(t.state("/r/src/x.swp") == .ignored)
        #expect(t.state("/r/build/out.o") == .unknown)
        #expect(t.counts(try #require(t.id("/r"))) == counts([(.ignored, 3), (.unknown, 5)]))
        #expect(t.reported("/r") == .unknown)
    }

    // MARK: Change recording

    @Test func drainChangesReportsTouchedNodesAndRemovals() throws {
        var t = make()
        let first = t.drainChanges()
        #expect(first.changes.contains { $0.node == t.id("/r") })
        #expect(t.drainChanges().changes.isEmpty)

        t.localChange(b("/r/a/x"), kind: .file)
        let (changes, removals) = t.drainChanges()
        #expect(removals.isEmpty)
        let byNode = Dictionary(changes.map { ($0.node, $0) }, uniquingKeysWith: { a, _ in a })
        for p in ["/r/a/x", "/r/a", "/r"] {
            let id = try #require(t.id(p))
            let c = try #require(byNode[id], "\(p) not reported")
            #expect(c.before?.state == .unknown, "\(p)")
            #expect(c.parent == t.parent(id))
        }
        #expect(byNode[try #require(t.id("/r/f"))] == nil)

        t.deleted(b("/r/a"))
        t.localChange(b("/r/e/new"), kind: .file)
        let second = t.drainChanges()
        let removed = Dictionary(second.removals.map { (text($0.path), $0.wasDirectory) }, uniquingKeysWith: { a, _ in a })
        #expect(removed == ["/r/a": true, "/r/a/sub": true])
        let new = try #require(second.changes.first { $0.node == t.id("/r/e/new") })
        #expect(new.before == nil)
        let a = try #require(second.changes.first { $0.node == t.id("/r/a") })
        #expect(a.before?.kind == .dir)
        #expect(a.before?.state == .pending)

        t.removeRoot(path: b("/r"))
        #expect(t.drainChanges().removals.map { text($0.path) }.contains("/r"))
        #expect(t.liveCount == 0)
    }

    @Test func aNodeFreedAndReusedInOneBatchIsReportedAsNew() throws {
        var t = make(Self.ignoreSpec, rules: Self.ignoreRules)
        _ = t.drainChanges()
        let oldID = try #require(t.id("/r/app.log"))
        t.deleted(b("/r/app.log"))          // ignored: freed at once, no tombstone
        t.localChange(b("/r/fresh"), kind: .file)
        let fresh = try #require(t.id("/r/fresh"))
        #expect(fresh == oldID, "the freed node is reused (the case under test)")
        let (changes, removals) = t.drainChanges()
        #expect(removals.map { text($0.path) } == ["/r/app.log"])
        let c = try #require(changes.first { $0.node == fresh })
        #expect(c.before == nil)
    }

    // MARK: Rescans

    @Test func reconcileMakesTheTreeMatchAScan() throws {
        var t = make()
        t.reconcile(root: b("/r"), scan: scan(["a/", "a/x", "a/new", "e/", "g"]))
        #expect(t.state("/r/a/x") == .unknown)
        #expect(t.state("/r/a/new") == .pending)
        #expect(t.state("/r/g") == .pending)
        #expect(t.record(try #require(t.id("/r/f"))).kind == .gone)
        #expect(t.record(try #require(t.id("/r/a/y"))).kind == .gone)
        #expect(t.record(try #require(t.id("/r/a/sub"))).kind == .gone)
        #expect(t.id("/r/a/sub/z") == nil)
    }
}

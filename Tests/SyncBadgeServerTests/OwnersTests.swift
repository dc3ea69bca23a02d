import NIOCore
import Testing
import SyncBadgeCore
import SyncBadgeStore
import SyncBadgeWatchEvents
@testable import SyncBadgeServer

/// The hub's owners (Roots, Providers, Menus, Ingest) driven by hand, with no loop, no hub and
/// no I/O: each verb or event's effects, in order, as the hub would carry them out.
@Suite struct OwnersTests {
    static let r = Array("/r".utf8)

    static func request(_ line: String) -> WireRequest {
        guard case .request(let req) = WireParser.parse(Array(line.utf8)) else { preconditionFailure("not a request: \(line)") }
        return req
    }

    /// A tree with the root `/r` holding `a` and `d/b`, scanned.
    static func scannedRoot() -> (Roots, StateTree) {
        var roots = Roots(privatePaths: [])
        var tree = StateTree()
        let fx = roots.add(request("1 ADD-ROOT /r"), 7, tree: &tree)
        guard case .watcher(.addRoot(_, let token, _)) = fx.list.last else { preconditionFailure("no scan asked for") }
        var scan = ScanTree()
        _ = scan.append(parent: -1, name: Array("a".utf8), kind: .file)
        let d = scan.append(parent: -1, name: Array("d".utf8), kind: .dir)
        _ = scan.append(parent: d, name: Array("b".utf8), kind: .file)
        _ = roots.scanned(r, token: token, result: .success(RootScan(scan: scan, ignoreFile: nil, watches: 2, degraded: nil)), tree: &tree)
        return (roots, tree)
    }

    // MARK: Roots

    @Test func addingARootAnnouncesItAsksForAScanAndAnswersOnceItsRowIsStored() {
        var roots = Roots(privatePaths: [Array("/r/.state".utf8)])
        var tree = StateTree()
        let added = roots.add(Self.request("1 ADD-ROOT /r"), 7, tree: &tree)
        #expect(added.waits)
        #expect(added.list.map(\.text) == ["pushRoot /r", "watcher addRoot /r token=1 identities=false"])
        #expect(roots.registry[Self.r]?.scanning == true && tree.root(at: Self.r) != nil)
        // Asked again while it is scanned: busy, at once.
        #expect(roots.add(Self.request("2 ADD-ROOT /r"), 8, tree: &tree).list.map(\.text) == ["write 8: 2 ERR busy message=/r%20is%20being%20scanned"])
        var scan = ScanTree()
        _ = scan.append(parent: -1, name: Array("a".utf8), kind: .file)
        let scanned = roots.scanned(Self.r, token: 1, result: .success(RootScan(scan: scan, ignoreFile: nil, watches: 1, degraded: nil)), tree: &tree)
        #expect(scanned.list.map(\.text) == ["log info watching root", "storeRoot /r"])
        #expect(tree.find(Array("/r/a".utf8)) != nil)
        // The state directory inside the root is ignored there.
        #expect(roots.rules(for: Self.r, file: nil, defaults: false).matches([Array(".state".utf8)[...]], isDir: true))
        guard case .storeRoot(_, let pending) = scanned.list.last else { Issue.record("no root row to store"); return }
        #expect(Roots.stored(Self.r, pending, result: .success(()), active: true).list.map(\.text) ==
                ["pushRoot /r", "write 7: 1 OK", "deliver", "resume 7"])
        #expect(Roots.stored(Self.r, pending, result: .success(()), active: false).list.map(\.text) == ["pushRoot /r"])
        // Scanned now: a second ADD-ROOT is answered OK and changes nothing.
        #expect(roots.add(Self.request("3 ADD-ROOT /r"), 8, tree: &tree).list.map(\.text) == ["write 8: 3 OK"])
    }

    @Test func aNewRootWhoseScanFailsIsDroppedAndItsClientTold() {
        var roots = Roots(privatePaths: [])
        var tree = StateTree()
        _ = roots.add(Self.request("1 ADD-ROOT /r"), 7, tree: &tree)
        let failed = roots.scanned(Self.r, token: 1, result: .failure(.notFound), tree: &tree)
        #expect(failed.list.map(\.text) == ["providers forgetSets /r", "publish", "unstoreRoot /r", "pushRootRemoved /r",
                                            "write 7: 1 ERR not-found message=/r:%20no%20such%20directory", "resume 7"])
        #expect(roots.registry[Self.r] == nil && tree.root(at: Self.r) == nil)
        // A scan answer nobody waits for changes nothing.
        #expect(roots.scanned(Self.r, token: 1, result: .failure(.notFound), tree: &tree).list.isEmpty)
    }

    @Test func removingAClaimedRootStopsTheWatcherReleasesItsStatesAndAnswersAfterTheStore() {
        var (roots, tree) = Self.scannedRoot()
        #expect(roots.claim(Self.request("c CLAIM /r"), 3, tree: &tree) { _ in "sync" }.list.map(\.text) ==
                ["write 3: c OK", "pushRoot /r", "toolbarClaimed 3"])
        // Claimed again by its claimant: no new claim; by another: busy, naming the claimant.
        #expect(roots.claim(Self.request("d CLAIM /r"), 3, tree: &tree) { _ in "sync" }.list.map(\.text) == ["write 3: d OK", "pushRoot /r"])
        #expect(roots.claim(Self.request("e CLAIM /r"), 4, tree: &tree) { $0 == 3 ? "sync" : nil }.list.map(\.text) ==
                ["write 4: e ERR busy message=claimed%20by%20sync"])
        let removed = roots.remove(Self.request("9 REMOVE-ROOT /r"), 5, tree: &tree)
        #expect(removed.waits)
        #expect(removed.list.map(\.text) == ["watcher removeRoot /r", "providers rootRemoved /r", "toolbarUnclaimed 3", "publish",
                                             "pushRootRemoved /r", "unstoreRoot /r answering 5 9"])
        #expect(roots.registry[Self.r] == nil && tree.root(at: Self.r) == nil)
        #expect(Roots.unstored("9", 5, result: .success(())).list.map(\.text) == ["write 5: 9 OK"])
        #expect(roots.remove(Self.request("10 REMOVE-ROOT /r"), 5, tree: &tree).list.map(\.text) == ["write 5: 10 ERR not-found message=/r%20is%20not%20a%20root"])
    }

    @Test func unclaimingReleasesWhatTheProviderHoldsThereAndOnlyItsOwnClaim() {
        var (roots, tree) = Self.scannedRoot()
        #expect(roots.unclaim(Self.request("u UNCLAIM /r"), 3, tree: &tree).list.map(\.text) ==
                ["write 3: u ERR not-found message=/r%20is%20not%20claimed%20by%20this%20connection"])
        _ = roots.claim(Self.request("c CLAIM /r"), 3, tree: &tree) { _ in nil }
        let node = tree.root(at: Self.r)!.node
        #expect(roots.unclaim(Self.request("u UNCLAIM /r"), 3, tree: &tree).list.map(\.text) ==
                ["write 3: u OK", "pushRoot /r", "toolbarUnclaimed 3", "providers unclaimed 3 root=\(node)"])
        #expect(roots.registry.claimant(of: Self.r) == nil)
    }

    @Test func aVanishedRootTurnsErrorAndARescanResetsItsObserversAfterThePushes() {
        var (roots, tree) = Self.scannedRoot()
        #expect(roots.vanished(Self.r, reason: "deleted", tree: &tree).list.map(\.text) == ["pushRoot /r"])
        #expect(tree.reportedState(tree.root(at: Self.r)!.node) == .error)
        var scan = ScanTree()
        _ = scan.append(parent: -1, name: Array("a".utf8), kind: .file)
        let rescanned = roots.watcherReported(.rootRescanned(root: Self.r, scan: RootScan(scan: scan, ignoreFile: nil, watches: 1, degraded: nil)), tree: &tree)
        #expect(rescanned.list.map(\.text) == ["publish", "resetObservers /r", "resetChanges /r"])
        var observers = ObserverIndex()
        observers.observe(tree.root(at: Self.r)!.node, by: 4)
        #expect(Roots.resets(under: Self.r, observers: observers, tree: &tree).list.map(\.text) == ["write 4: * RESET /r"])
        #expect(Roots.resets(under: Array("/other".utf8), observers: observers, tree: &tree).list.isEmpty)
    }

    @Test func anIgnoreFileThatStopsIgnoringRecreatesTheEntriesForTheFeed() {
        var (roots, tree) = Self.scannedRoot()
        _ = roots.ignoreFileChanged(Self.r, Array("d/\n".utf8), tree: &tree)
        #expect(tree.record(tree.find(Array("/r/d/b".utf8))!).state == .ignored)
        let unignored = roots.ignoreFileChanged(Self.r, nil, tree: &tree)
        #expect(unignored.list.map(\.text).contains("changed /r/d/b create"))
        #expect(roots.ignoreFileWritten(Self.r, Array("x\n".utf8), failure: "No space left on device", client: 2, tag: "t", active: true).list.map(\.text) ==
                ["write 2: t ERR internal message=cannot%20write%20/r/.syncbadgeignore:%20No%20space%20left%20on%20device", "resume 2"])
        #expect(roots.registry[Self.r]?.ignoreFile == nil)
        #expect(roots.ignoreFileWritten(Self.r, Array("x\n".utf8), failure: nil, client: 2, tag: "t", active: false).list.isEmpty)
        #expect(roots.registry[Self.r]?.ignoreFile == Array("x\n".utf8))
    }

    // MARK: Providers

    @Test func setsWaitForTheirBarrierThenApplyCommitAndAnswerOnceStored() {
        var (_, tree) = Self.scannedRoot()
        var providers = Providers(holdMs: 30_000)
        let arrived = providers.arrived([Self.request("s1 SET syncing /r/a"), Self.request("s2 SET synced /r/nope")], from: 3, name: "sync")
        #expect(arrived.waits)
        #expect(arrived.list.map(\.text) == ["watcher barrier 1"])
        #expect(tree.record(tree.find(Array("/r/a".utf8))!).state == .unknown)
        // Another barrier changes nothing; the SETs' does.
        #expect(providers.barrierReached(99, tree: &tree, identities: [:], nowMs: 0) { _ in false }.list.isEmpty)
        let reached = providers.barrierReached(1, tree: &tree, identities: [:], nowMs: 0) { _ in false }
        #expect(tree.record(tree.find(Array("/r/a".utf8))!).state == .syncing)
        #expect(reached.list.map(\.text) == ["armReleaseTimer", "commit answering 3: s1 OK gen=\(tree.record(tree.find(Array("/r/a".utf8))!).gen), s2 ERR not-found message=/r/nope"])
        guard case .commit(let answers?) = reached.list.last else { Issue.record("no commit"); return }
        // Stored: the answers as they are; not stored: an OK becomes an error, an error stays.
        let gen = tree.record(tree.find(Array("/r/a".utf8))!).gen
        #expect(Providers.committed(answers, result: .success(()), isActive: { _ in true }).list.map(\.text) ==
                ["write 3: s1 OK gen=\(gen)", "write 3: s2 ERR not-found message=/r/nope", "resume 3"])
        struct DiskFull: Error {}
        #expect(Providers.committed(answers, result: .failure(DiskFull()), isActive: { _ in true }).list.map(\.text) ==
                ["write 3: s1 ERR internal message=cannot%20store%20the%20state:%20DiskFull()", "write 3: s2 ERR not-found message=/r/nope", "resume 3"])
        #expect(Providers.committed(answers, result: .success(()), isActive: { _ in false }).list.isEmpty)
    }

    @Test func aProviderThatLeftBeforeItsBarrierHasItsSyncingReleasedBeforeTheCommit() {
        var (_, tree) = Self.scannedRoot()
        var providers = Providers(holdMs: 30_000)
        _ = providers.arrived([Self.request("s1 SET syncing /r/a")], from: 3, name: "sync")
        let reached = providers.barrierReached(1, tree: &tree, identities: [:], nowMs: 0) { $0 == 3 }
        #expect(reached.list.map(\.text) == ["armReleaseTimer", "providers closed 3 sync provider=true", "commit answering 3: s1 OK gen=\(tree.record(tree.find(Array("/r/a".utf8))!).gen)"])
        let released = providers.receive(.closed(3, name: "sync", provider: true), stopping: false, tree: &tree) { _ in nil }
        #expect(released.list.map(\.text) == ["log info released syncing paths", "publish", "commit"])
        #expect(tree.record(tree.find(Array("/r/a".utf8))!).state == .pending)
        // A viewer's close, or any close while stopping, releases nothing.
        _ = providers.arrived([Self.request("s2 SET syncing /r/a")], from: 4, name: "other")
        _ = providers.barrierReached(2, tree: &tree, identities: [:], nowMs: 0) { _ in false }
        #expect(providers.receive(.closed(4, name: "other", provider: true), stopping: true, tree: &tree) { _ in nil }.list.isEmpty)
        #expect(tree.record(tree.find(Array("/r/a".utf8))!).state == .syncing)
    }

    @Test func aFailedCommitIsRetriedAndItsWaitersToldAndACallWaiterCalled() {
        var (_, tree) = Self.scannedRoot()
        var providers = Providers(holdMs: 30_000)
        guard let (batches, waiters) = providers.beginCommit(.call({ _ in }), tree: &tree) else { Issue.record("nothing to commit"); return }
        #expect(!batches.isEmpty)
        // One at a time: another waits for the next.
        #expect(providers.beginCommit(nil, tree: &tree) == nil)
        struct DiskFull: Error {}
        let failed = providers.commitEnded(batches, waiters: waiters, result: .failure(DiskFull()), isActive: { _ in true })
        #expect(failed.list.map(\.text) == ["log error cannot store states; retrying with backoff", "call", "deliver", "retryCommit 250ms"])
    }

    @Test func theChangeFeedReachesOnlyTheRootsSubscribersAndSkipsIgnoredEntries() {
        var (roots, tree) = Self.scannedRoot()
        var providers = Providers(holdMs: 30_000)
        let unfollowed = providers.changed(Array("/r/a".utf8), .modify, tree: &tree)
        #expect(unfollowed == nil)
        #expect(providers.subscribe(Self.request("f SUBSCRIBE-CHANGES /r/a"), 5, roots: roots.registry, tree: &tree).list.map(\.text) ==
                ["write 5: f ERR not-found message=/r/a"])
        #expect(providers.subscribe(Self.request("f SUBSCRIBE-CHANGES /r"), 5, roots: roots.registry, tree: &tree).list.map(\.text) == ["write 5: f OK"])
        let gen = tree.record(tree.find(Array("/r/a".utf8))!).gen
        let change = providers.changed(Array("/r/a".utf8), .move, from: Array("/r/z".utf8), tree: &tree)
        #expect(change.map { String(decoding: $0.line.bytes, as: UTF8.self) } == "* CHANGED /r/a gen=\(gen) what=move from=/r/z")
        #expect(change?.to == [5] && change?.root == Self.r)
        _ = roots.ignoreFileChanged(Self.r, Array("a\n".utf8), tree: &tree)
        let ignored = providers.changed(Array("/r/a".utf8), .modify, tree: &tree)
        #expect(ignored == nil)
        _ = providers.receive(.rootRemoved(Self.r), stopping: false, tree: &tree) { _ in nil }
        #expect(providers.feed.isEmpty)
    }

    // MARK: Menus

    @Test func aBadgeDefinedIsPushedAndAToolbarItemShowsOnceItsProviderClaims() {
        var menus = Menus(answerTimeout: .seconds(10))
        #expect(menus.defineBadge(Self.request("b DEFINE-BADGE cloud icon=/x.png"), 3).list.map(\.text).first?.hasPrefix("write 3: b ERR") == true)
        let defined = menus.defineBadge(Self.request("b DEFINE-BADGE cloud label=Cloud glyph=C ascii=c color=%23336699"), 3)
        #expect(defined.list.map(\.text) == ["write 3: b OK", "pushBadge cloud"])
        #expect(menus.badgeLine("cloud") != nil)
        #expect(menus.defineToolbar(Self.request("t DEFINE-TOOLBAR name=Sync tooltip=Sync%20now"), 3, name: "sync").list.map(\.text) == ["write 3: t OK"])
        #expect(menus.toolbars.claimed(3) != nil)
        #expect(menus.toolbar(Self.request("q TOOLBAR"), 4).list.map(\.text) == ["write 4: q TOOLBAR name=Sync tooltip=Sync%20now provider=sync", "write 4: q OK"])
    }

    @Test func anActionGoesToTheClaimantAndWithReplyWaitsForItsAnswer() {
        var (roots, tree) = Self.scannedRoot()
        var clients = Clients()
        let provider = clients.opened(peerPID: 1), viewer = clients.opened(peerPID: 2)
        clients[viewer]?.name = "viewer"
        var menus = Menus(answerTimeout: .seconds(10))
        let now = NIODeadline.uptimeNanoseconds(1_000)
        #expect(menus.action(Self.request("a ACTION sync.now /r/a"), viewer, roots: roots.registry, clients: &clients, tree: &tree, now: now).list.map(\.text) ==
                ["write \(viewer): a ERR no-provider message=no%20sync%20engine%20has%20claimed%20/r"])
        _ = roots.claim(Self.request("c CLAIM /r"), provider, tree: &tree) { _ in nil }
        let told = menus.action(Self.request("a ACTION sync.now /r/a"), viewer, roots: roots.registry, clients: &clients, tree: &tree, now: now)
        #expect(!told.waits)
        #expect(told.list.map(\.text) == ["write \(provider): * ACTION sync.now /r/a from=viewer", "deliver", "write \(viewer): a OK"])
        let asked = menus.action(Self.request("b ACTION sync.now /r/a reply=1"), viewer, roots: roots.registry, clients: &clients, tree: &tree, now: now)
        #expect(asked.waits)
        #expect(asked.list.map(\.text).first == "armReplyTimer")
        guard case .write(provider, let call) = asked.list[1], let token = String(decoding: call.bytes, as: UTF8.self).split(separator: "=").last else {
            Issue.record("no ACTION for the provider"); return
        }
        #expect(menus.answer(Self.request("n ANSWER \(token)"), viewer).list.map(\.text) ==
                ["write \(viewer): n ERR not-found message=no%20answer%20is%20awaited%20for%20\(token)%20from%20this%20connection"])
        let answered = menus.answer(Self.request("n ANSWER \(token) message=done"), provider)
        #expect(answered.list.map(\.text) == ["write \(provider): n OK", "replies 1", "armReplyTimer"])
        guard case .replies(let replies) = answered.list[1] else { return }
        #expect(Menus.replies(replies) { _ in true }.list.map(\.text) == ["write \(viewer): b OK message=done", "resume \(viewer)"])
        #expect(Menus.replies(replies) { _ in false }.list.isEmpty)
    }

    @Test func theBuiltInIgnoreAsksForTheIgnoreFileToBeWrittenAndWaits() {
        var (roots, tree) = Self.scannedRoot()
        var clients = Clients()
        let viewer = clients.opened(peerPID: 2)
        var menus = Menus(answerTimeout: .seconds(10))
        let fx = menus.action(Self.request("i ACTION syncbadge.ignore /r/d"), viewer, roots: roots.registry, clients: &clients, tree: &tree, now: .now())
        #expect(fx.waits)
        #expect(fx.list.map(\.text) == ["writeIgnoreFile /r /d\n \(viewer) i"])
        #expect(menus.action(Self.request("i ACTION syncbadge.ignore /elsewhere"), viewer, roots: roots.registry, clients: &clients, tree: &tree, now: .now()).list.map(\.text) ==
                ["write \(viewer): i ERR outside message=/elsewhere"])
    }

    // MARK: Ingest

    @Test func aChangeToASyncedFileWaitsForItsIdentityThenCountsOnlyIfItDiffers() {
        var (_, tree) = Self.scannedRoot()
        let a = Array("/r/a".utf8)
        let identity = FileIdentity(inode: 2, size: 3, mtimeNs: 4, ctimeNs: 5)
        _ = tree.set(a, SetRequest(state: .synced), identify: { _ in identity })
        var ingest = Ingest()
        var sets = SetPipeline<SetGroup, CommitWaiter>()
        ingest.queue.append([.changed(path: a, kind: .file, what: .modify)])
        guard case .lookUp(let paths, let covering, _) = ingest.next(sets: &sets, tree: &tree) else { Issue.record("no look-up"); return }
        #expect(paths == [a] && covering == 1)
        // Nothing is applied while the read is out.
        guard case .wait = ingest.next(sets: &sets, tree: &tree) else { Issue.record("applied while reading"); return }
        #expect(ingest.reading == .lookingUp)
        ingest.read([a: identity], covering: covering)
        guard case .apply(let e) = ingest.next(sets: &sets, tree: &tree) else { Issue.record("nothing to apply"); return }
        // The same identity: the provider's own write, no change.
        let unchanged = ingest.applyFileEvent(e, sets: &sets, tree: &tree)
        #expect(unchanged == nil)
        ingest.queue.applied()
        #expect(tree.record(tree.find(a)!).state == .synced)
        let deleted = ingest.applyFileEvent(.deleted(path: a, wasDirectory: false), sets: &sets, tree: &tree)
        #expect(deleted?.path == a && deleted?.what == .delete)
        let created = ingest.applyFileEvent(.changed(path: Array("/r/new".utf8), kind: .file, what: .create), sets: &sets, tree: &tree)
        #expect(created?.what == .create)
        guard case .wait = ingest.next(sets: &sets, tree: &tree) else { Issue.record("the queue is not empty"); return }
    }

    // MARK: States with transitions

    @Test func aDeliveryAndAStopEachHappenOnceAtATime() {
        var delivery = Delivery()
        let first = delivery.begin(), nested = delivery.begin()
        delivery.end()
        let next = delivery.begin()
        #expect(first && !nested && next)
        var run = RunState.serving
        let stopped = run.stop(), again = run.stop()
        #expect(stopped && !again && run == .stopping)
    }
}

extension HubEffect {
    /// The effect as a line, for comparing lists of them.
    var text: String {
        func s(_ b: [UInt8]) -> String { String(decoding: b, as: UTF8.self) }
        switch self {
        case .write(let c, let line): return "write \(c): \(s(line.bytes))"
        case .resume(let c): return "resume \(c)"
        case .deliver: return "deliver"
        case .pushRoot(let p): return "pushRoot \(s(p))"
        case .pushRootRemoved(let p): return "pushRootRemoved \(s(p))"
        case .pushToolbar(let t): return "pushToolbar \(t.toolbar.provider)"
        case .toolbarClaimed(let c): return "toolbarClaimed \(c)"
        case .toolbarUnclaimed(let c): return "toolbarUnclaimed \(c)"
        case .pushBadge(let b): return "pushBadge \(b.id)"
        case .changed(let p, let what): return "changed \(s(p)) \(what)"
        case .resetChanges(let p): return "resetChanges \(s(p))"
        case .resetObservers(let p): return "resetObservers \(s(p))"
        case .publish: return "publish"
        case .commit(nil): return "commit"
        case .commit(let answers?):
            return "commit answering " + answers.map { a in "\(a.client): " + a.lines.map { s($0.line.bytes) }.joined(separator: ", ") }.joined(separator: "; ")
        case .watcher(.addRoot(let p, let token, let identities)): return "watcher addRoot \(s(p)) token=\(token) identities=\(identities)"
        case .watcher(.removeRoot(let p)): return "watcher removeRoot \(s(p))"
        case .watcher(.compareIdentities(let p)): return "watcher compareIdentities \(s(p))"
        case .watcher(.barrier(let token)): return "watcher barrier \(token)"
        case .storeRoot(let stored, _): return "storeRoot \(s(stored.path))"
        case .unstoreRoot(let p, nil): return "unstoreRoot \(s(p))"
        case .unstoreRoot(let p, let a?): return "unstoreRoot \(s(p)) answering \(a.client) \(a.tag)"
        case .writeIgnoreFile(let root, let contents, let c, let tag): return "writeIgnoreFile \(s(root)) \(s(contents)) \(c) \(tag)"
        case .providers(.release(let nodes, _)): return "providers release \(nodes)"
        case .providers(.unclaimed(let c, let root)): return "providers unclaimed \(c) root=\(root)"
        case .providers(.closed(let c, let name, let provider)): return "providers closed \(c) \(name) provider=\(provider)"
        case .providers(.rootRemoved(let p)): return "providers rootRemoved \(s(p))"
        case .providers(.forgetSets(let p)): return "providers forgetSets \(s(p))"
        case .armReleaseTimer: return "armReleaseTimer"
        case .armReplyTimer: return "armReplyTimer"
        case .replies(let list): return "replies \(list.count)"
        case .log(let level, let message, _): return "log \(level) \(message)"
        case .call: return "call"
        case .retryCommit(let delay): return "retryCommit \(delay.nanoseconds / 1_000_000)ms"
        }
    }
}

extension Ingest.FeedChange: Equatable {
    public static func == (a: Self, b: Self) -> Bool { a.path == b.path && a.what == b.what && a.from == b.from }
}

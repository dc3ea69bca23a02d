import Testing
@testable import SyncBadgeCore

/// PROTOCOL.md, "The state rules": single-path transitions.
@Suite struct StateMachineTests {
    let identity = FileIdentity(inode: 7, size: 100, mtimeNs: 1_000, ctimeNs: 2_000)

    func synced(_ identity: FileIdentity?) -> EntryRecord {
        var r = EntryRecord(kind: .file, state: .synced, gen: 5)
        r.syncedIdentity = identity?.digest
        r.message = "done"
        r.badge = "custom"
        r.progress = 100
        return r
    }

    @Test func messageAndBadgeKeepValueSemantics() {
        let a = synced(identity)
        var b = a
        b.message = "other"
        #expect(a.message == "done")
        #expect(b.message == "other" && b.badge == "custom")
        #expect(a != b)
        b.message = "done"
        #expect(a == b)
        b.message = nil
        b.badge = nil
        #expect(b.message == nil && b.badge == nil)
        var c = EntryRecord(kind: .file, state: .synced, gen: 5)
        c.syncedIdentity = identity.digest
        c.progress = 100
        #expect(b == c)
    }

    @Test func aLocalChangeMakesAnEntryPendingWithANewGen() throws {
        var gens: UInt64 = 10
        let r = try #require(StateMachine.localChange(EntryRecord(kind: .file, state: .unknown, gen: 3), kind: .file, identity: nil, gens: &gens))
        #expect(r.state == .pending)
        #expect(r.gen == 11)
        #expect(gens == 11)
    }

    @Test func aSyncedFileWithItsRecordedIdentityDoesNotChange() {
        var gens: UInt64 = 10
        #expect(StateMachine.localChange(synced(identity), kind: .file, identity: identity, gens: &gens) == nil)
        #expect(gens == 10)
    }

    @Test(arguments: [
        FileIdentity(inode: 8, size: 100, mtimeNs: 1_000, ctimeNs: 2_000),
        FileIdentity(inode: 7, size: 101, mtimeNs: 1_000, ctimeNs: 2_000),
        FileIdentity(inode: 7, size: 100, mtimeNs: 1_001, ctimeNs: 2_000),
        FileIdentity(inode: 7, size: 100, mtimeNs: 1_000, ctimeNs: 2_001),
    ])
    func anyIdentityDifferenceMakesItPending(_ other: FileIdentity) throws {
        var gens: UInt64 = 10
        let r = try #require(StateMachine.localChange(synced(identity), kind: .file, identity: other, gens: &gens))
        #expect(r.state == .pending)
        #expect(r.gen == 11)
        // What the provider said about the old content is gone.
        #expect(r.syncedIdentity == nil && r.message == nil && r.badge == nil && r.progress == nil)
    }

    @Test func noRecordedOrNoSeenIdentityMeansAChange() {
        var gens: UInt64 = 0
        #expect(StateMachine.localChange(synced(nil), kind: .file, identity: identity, gens: &gens) != nil)
        #expect(StateMachine.localChange(synced(identity), kind: .file, identity: nil, gens: &gens) != nil)
        // A different kind at the same path is a change even with the same identity.
        #expect(StateMachine.localChange(synced(identity), kind: .link, identity: identity, gens: &gens)?.kind == .link)
    }

    @Test func ignoredEntriesDoNotChange() {
        var gens: UInt64 = 3
        let r = EntryRecord(kind: .file, state: .ignored, gen: 1)
        #expect(StateMachine.localChange(r, kind: .file, identity: nil, gens: &gens) == nil)
        #expect(StateMachine.deleted(r, gens: &gens) == nil)
        #expect(gens == 3)
    }

    @Test func deletionLeavesAPendingTombstoneOnce() throws {
        var gens: UInt64 = 3
        let t = try #require(StateMachine.deleted(synced(identity), gens: &gens))
        #expect(t.kind == .gone && t.isTombstone)
        #expect(t.state == .pending)
        #expect(t.gen == 4)
        #expect(StateMachine.deleted(t, gens: &gens) == nil)
        #expect(gens == 4)
    }

    @Test func stoppingToIgnoreBumpsTheGen() {
        var gens: UInt64 = 20
        let ignored = StateMachine.becameIgnored(EntryRecord(kind: .dir, state: .pending, gen: 2))
        #expect(ignored.state == .ignored && ignored.ruleIgnored)
        let back = StateMachine.stoppedIgnoring(ignored, gens: &gens)
        #expect(back.state == .pending && !back.ruleIgnored && back.gen == 21)
    }

    @Test func identityUnchanged() {
        #expect(StateMachine.identityUnchanged(synced(identity), identity: identity))
        #expect(!StateMachine.identityUnchanged(synced(identity), identity: FileIdentity(inode: 1, size: 1, mtimeNs: 1, ctimeNs: 1)))
        // Only a synced entry with a recorded identity can tell; the rest keep what they had.
        #expect(StateMachine.identityUnchanged(EntryRecord(kind: .file, state: .pending, gen: 1), identity: identity))
    }

    /// The store keeps digests across restarts and upgrades: a new function would make every
    /// synced file look changed. The value is the function worked by hand (Python, outside Swift).
    @Test func anIdentitysDigestNeverChanges() {
        #expect(identity.digest.bits == 0xB172_D2F2_E616_07E9)
    }

    /// Each field goes through a bijection chained on the ones before it, so a change in any one
    /// field, down to one bit anywhere in it, always gives another digest.
    @Test func aChangeInOneFieldAlwaysChangesTheDigest() {
        var seen: Set<UInt64> = [identity.digest.bits]
        for bit in 0..<64 {
            let flip = UInt64(1) << bit
            let variants = [
                FileIdentity(inode: identity.inode ^ flip, size: identity.size, mtimeNs: identity.mtimeNs, ctimeNs: identity.ctimeNs),
                FileIdentity(inode: identity.inode, size: identity.size ^ Int64(bitPattern: flip), mtimeNs: identity.mtimeNs, ctimeNs: identity.ctimeNs),
                FileIdentity(inode: identity.inode, size: identity.size, mtimeNs: identity.mtimeNs ^ Int64(bitPattern: flip), ctimeNs: identity.ctimeNs),
                FileIdentity(inode: identity.inode, size: identity.size, mtimeNs: identity.mtimeNs, ctimeNs: identity.ctimeNs ^ Int64(bitPattern: flip)),
            ]
            for v in variants {
                #expect(seen.insert(v.digest.bits).inserted, "\(v) shares a digest")
            }
        }
        #expect(seen.count == 1 + 64 * 4)
    }

    /// Why the tree keeps a digest: a record, and so a node, is 24 bytes smaller than with the
    /// whole identity (PERFORMANCE.md, "Memory per entry").
    @Test func aRecordFitsInThirtyTwoBytes() {
        #expect(MemoryLayout<EntryRecord>.stride == 32)
        #expect(MemoryLayout<StateTree.Node>.stride == 56)
    }

    @Test func stateNamesRoundTrip() {
        for s in SyncState.allCases {
            #expect(SyncState(name: s.name) == s)
        }
        #expect(SyncState(name: "outside") == nil)
        #expect(SyncState.allCases.map(\.name) == ["unknown", "pending", "syncing", "synced", "error", "conflict", "ignored"])
    }
}

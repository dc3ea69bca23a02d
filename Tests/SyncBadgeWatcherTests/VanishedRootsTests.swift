import Testing
@testable import SyncBadgeWatcher

@Suite struct VanishedRootsTests {
    static func b(_ s: String) -> [UInt8] { Array(s.utf8) }

    @Test func rootsShareASentinelUntilTheLastLeavesIt() {
        var v = VanishedRoots()
        #expect(!v.hasSentinels)
        #expect(v.sentinelPlaced(20, for: Self.b("/m/a")) == nil)
        #expect(v.sentinelPlaced(20, for: Self.b("/m/b")) == nil)
        #expect(v.sentinelPlaced(20, for: Self.b("/m/a")) == nil, "the same place again changes nothing")
        #expect(v.sentinelEvent(20, ignored: false) == [Self.b("/m/a"), Self.b("/m/b")])
        #expect(v.sentinelEvent(21, ignored: false) == [])
        #expect(v.dropSentinel(Self.b("/m/a")) == nil, "/m/b still needs it")
        #expect(v.dropSentinel(Self.b("/m/b")) == 20)
        #expect(!v.hasSentinels)
    }

    @Test func aSentinelPlacedHigherReleasesTheOldOne() {
        var v = VanishedRoots()
        _ = v.sentinelPlaced(20, for: Self.b("/m/x/r"))
        // /m/x went away too: the next check watches /m.
        #expect(v.sentinelPlaced(30, for: Self.b("/m/x/r")) == 20)
        #expect(v.sentinelOf == [Self.b("/m/x/r"): 30])
    }

    @Test func aSentinelTheKernelDroppedIsForgotten() {
        var v = VanishedRoots()
        _ = v.sentinelPlaced(20, for: Self.b("/m/a"))
        #expect(v.sentinelEvent(20, ignored: true) == [Self.b("/m/a")])
        #expect(!v.hasSentinels)
        #expect(v.dropSentinel(Self.b("/m/a")) == nil)
    }

    @Test func whatARootWasIsKeptUntilItIsRemoved() {
        var v = VanishedRoots()
        let id = DirectoryIdentity(device: 1, inode: 2)
        v.rootWatched(Self.b("/mnt/usb"), identity: id, isMountPoint: true)
        // Back after a return: still a mount point, whatever is asked then.
        v.rootWatched(Self.b("/mnt/usb"), identity: DirectoryIdentity(device: 3, inode: 2))
        #expect(v.wasMountPoint(Self.b("/mnt/usb")))
        #expect(v.identity(of: Self.b("/mnt/usb")) == DirectoryIdentity(device: 3, inode: 2))
        _ = v.sentinelPlaced(5, for: Self.b("/mnt/usb"))
        #expect(v.rootRemoved(Self.b("/mnt/usb")) == 5)
        #expect(!v.wasMountPoint(Self.b("/mnt/usb")))
        #expect(v.identity(of: Self.b("/mnt/usb")) == nil)
    }
}

/// What tells that a root vanished and that it came back: what each root's directory was when
/// watched (another one at its path after a mount change means the watched one is gone), which
/// roots were mount points (they come back only as mount points), and the sentinel watches on
/// the nearest existing ancestor of each vanished root.
///
/// No I/O: `WatcherLoop` adds and removes the sentinels' kernel watches as this returns them.
struct VanishedRoots {
    /// Vanished roots → their sentinel's wd.
    private(set) var sentinelOf: [[UInt8]: Int32] = [:]
    /// Sentinel wds → the vanished roots below them.
    private(set) var rootsBelow: [Int32: Set<[UInt8]>] = [:]
    private(set) var mountPointRoots: Set<[UInt8]> = []
    private(set) var identities: [[UInt8]: DirectoryIdentity] = [:]

    var hasSentinels: Bool { !rootsBelow.isEmpty }

    /// A root is watched: what its directory is now, and whether it is a mount point (asked only
    /// when first added: one that comes back keeps what it was).
    mutating func rootWatched(_ path: [UInt8], identity: DirectoryIdentity?, isMountPoint: Bool? = nil) {
        identities[path] = identity
        if isMountPoint == true { mountPointRoots.insert(path) }
    }

    /// A root was removed: nothing is kept about it. Returns a sentinel wd no root needs any more.
    mutating func rootRemoved(_ path: [UInt8]) -> Int32? {
        mountPointRoots.remove(path)
        identities.removeValue(forKey: path)
        return dropSentinel(path)
    }

    func wasMountPoint(_ path: [UInt8]) -> Bool { mountPointRoots.contains(path) }

    func identity(of path: [UInt8]) -> DirectoryIdentity? { identities[path] }

    /// The kernel watches `wd`, an ancestor of the vanished `root`. Returns a previous sentinel
    /// wd that no root needs any more.
    mutating func sentinelPlaced(_ wd: Int32, for root: [UInt8]) -> Int32? {
        if sentinelOf[root] == wd { return nil }
        let stale = dropSentinel(root)
        sentinelOf[root] = wd
        rootsBelow[wd, default: []].insert(root)
        return stale
    }

    /// The root needs its sentinel no more (it is back, or removed). Returns its wd when no
    /// other root needs it either: the caller removes that watch unless the tree holds it.
    mutating func dropSentinel(_ root: [UInt8]) -> Int32? {
        guard let wd = sentinelOf.removeValue(forKey: root) else { return nil }
        rootsBelow[wd]?.remove(root)
        guard rootsBelow[wd]?.isEmpty ?? true else { return nil }
        rootsBelow.removeValue(forKey: wd)
        return wd
    }

    /// An event on `wd`: if it is a sentinel, the roots below it to check now. A sentinel whose
    /// watch the kernel dropped (`ignored`) is forgotten; its roots get a new one when checked.
    mutating func sentinelEvent(_ wd: Int32, ignored: Bool) -> Set<[UInt8]> {
        guard let roots = rootsBelow[wd] else { return [] }
        if ignored {
            rootsBelow.removeValue(forKey: wd)
            for r in roots where sentinelOf[r] == wd { sentinelOf.removeValue(forKey: r) }
        }
        return roots
    }
}

/// A directory's device and inode.
struct DirectoryIdentity: Equatable {
    var device: UInt64
    var inode: UInt64
}

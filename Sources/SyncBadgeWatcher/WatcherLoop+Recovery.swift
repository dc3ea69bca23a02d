#if canImport(Glibc)
import Glibc
#endif
import CInotifyTools
import Logging
import SyncBadgeCore
import SyncBadgeWatchEvents

/// Timed recovery and vanished roots: what `RecoveryTimers` and `VanishedRoots` decide, done
/// with the syscalls they need.
extension WatcherLoop {
    func runDueTimers() {
        guard !timers.isEmpty else { return }
        let due = timers.takeDue(now: .now)
        for (path, reason) in due.rescans {
            guard let scan = rescan(path) else { continue }
            switch reason {
            case .overflow: emit(.rootRescanned(root: path, scan: scan))
            case .degraded: emit(.rootRefreshed(root: path, scan: scan))
            }
        }
        if !due.rescans.isEmpty { scheduleDegradedRescans() }
        for (path, delay) in due.returnChecks {
            checkReturn(path, delay: delay)
        }
        for root in due.ignoreFileReads where tree.rootWds[root] != nil {
            emit(.ignoreFileChanged(root: root, contents: DirectoryScanner.readFile(PathBytes.join(root, IgnoreRules.fileName))))
        }
    }

    /// Every root over the watch limit gets its next rescan; a root no longer over it is said
    /// to have recovered.
    func scheduleDegradedRescans() {
        let now = ContinuousClock.now
        for (path, wd) in tree.rootWds where timers.rootChecked(path, degraded: tree.isDegraded(wd), now: now) {
            tree.recovered(path)
            logger.notice("every directory of the root is watched again", metadata: ["root": "\(PathBytes.display(path))"])
        }
    }

    // MARK: Vanished roots

    func awaitReturn(_ path: [UInt8], delay: Duration = RecoveryTimers.firstReturnDelay) {
        timers.awaitReturn(path, delay: delay, now: .now)
        placeSentinel(path)
    }

    func stopAwaitingReturn(_ path: [UInt8]) {
        timers.stopAwaitingReturn(path)
        releaseSentinel(vanished.dropSentinel(path))
    }

    /// Watches the nearest existing ancestor of a vanished root for entries appearing in it.
    /// `IN_MASK_ADD` leaves a watch the tree already holds on that directory as it was.
    func placeSentinel(_ path: [UInt8]) {
        var dir = path
        while dir.count > 1 {
            dir = PathBytes.parent(dir)
            let mask = UInt32(IN_CREATE) | UInt32(IN_MOVED_TO) | UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF)
                | sb_IN_ONLYDIR | sb_IN_DONT_FOLLOW | sb_IN_MASK_ADD
            let wd = dir.withCString { inotify_add_watch(fd, $0, mask) }
            guard wd >= 0 else { continue }
            releaseSentinel(vanished.sentinelPlaced(wd, for: path))
            return
        }
    }

    /// Removes a sentinel's watch no vanished root needs any more; a directory the tree
    /// watches keeps its watch.
    func releaseSentinel(_ wd: Int32?) {
        guard let wd, !tree.isWatched(wd) else { return }
        inotify_rm_watch(fd, wd)
    }

    /// Something appeared in (or happened to) an ancestor of a vanished root: check it now.
    func sentinelEvent(_ e: RawEvent) {
        let now = ContinuousClock.now
        for r in vanished.sentinelEvent(e.wd, ignored: e.mask & sb_IN_IGNORED != 0) {
            timers.checkReturnSoon(r, now: now)
        }
    }

    func checkReturn(_ path: [UInt8], delay: Duration) {
        let isDir = FileStat.lstat(path)?.0 == .dir
        // A root that was a mount point is back when something is mounted there again, not
        // when its empty mount point shows.
        let back = isDir && (!vanished.wasMountPoint(path) || Self.isMountPoint(path))
        let next = RecoveryTimers.nextReturnDelay(after: delay)
        guard back else {
            awaitReturn(path, delay: next)
            return
        }
        stopAwaitingReturn(path)
        lastWatchError = 0
        let (wd, scan) = watchAndScan(path, parent: -1, name: path, root: nil, identities: true)
        guard let wd else {
            logger.warning("root is back but cannot be watched", metadata: ["root": "\(PathBytes.display(path))", "error": "\(Self.watchFailure(lastWatchError))"])
            awaitReturn(path, delay: next)
            return
        }
        tree.rootWatched(path, wd: wd)
        vanished.rootWatched(path, identity: Self.directoryIdentity(path))
        updateCounts()
        logger.notice("root is back: watching it again", metadata: ["root": "\(PathBytes.display(path))", "entries": "\(scan.count)"])
        emit(.rootRefreshed(root: path, scan: rootScan(path, scan: scan, wd: wd)))
        scheduleDegradedRescans()
    }

    /// A mount or unmount changed what some paths are: a root whose directory is no longer the
    /// one watched vanished (and may be back at once, as whatever is there now); a vanished root
    /// may have been mounted again.
    func mountsChanged() {
        for (path, wd) in tree.rootWds.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) })
        where Self.directoryIdentity(path) != vanished.identity(of: path) {
            rootVanished(wd, path: path, reason: "unmounted")
        }
        timers.checkEveryReturnNow(now: .now)
    }

    /// Device and inode of a directory, nil when it is not one.
    static func directoryIdentity(_ path: [UInt8]) -> DirectoryIdentity? {
        var st = stat()
        guard path.withCString({ lstat($0, &st) }) == 0, st.st_mode & S_IFMT == S_IFDIR else { return nil }
        return DirectoryIdentity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    }

    /// Whether something is mounted at `path` (bind mounts included, which `st_dev` cannot
    /// tell): the mount points of /proc/self/mountinfo, fifth field, octal escapes decoded.
    static func isMountPoint(_ path: [UInt8]) -> Bool {
        guard let table = DirectoryScanner.readFile(Array("/proc/self/mountinfo".utf8)) else { return false }
        for line in table.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 5)
            guard fields.count > 4 else { continue }
            if unescapeMountField(fields[4]) == path { return true }
        }
        return false
    }

    /// mountinfo writes space, tab, newline and backslash as `\ooo`.
    static func unescapeMountField(_ f: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        var i = f.startIndex
        while i < f.endIndex {
            if f[i] == UInt8(ascii: "\\") {
                let digits = f[(i + 1)...].prefix(3)
                if digits.count == 3, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "7") }) {
                    out.append(digits.reduce(0) { $0 &* 8 &+ ($1 - UInt8(ascii: "0")) })
                    i += 4
                    continue
                }
            }
            out.append(f[i])
            i += 1
        }
        return out
    }
}

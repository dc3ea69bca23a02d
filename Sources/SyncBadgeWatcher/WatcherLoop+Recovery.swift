#if canImport(Glibc)
import Glibc
#endif
import CInotifyTools
import Logging
import SyncBadgeCore
import SyncBadgeWatchEvents

/// When the watcher must look again by itself, because inotify cannot tell it: after queue
/// overflows (rescans, backed off when they repeat), for roots over the watch limit (periodic
/// rescans with backoff until every directory is watched again), and for vanished roots (a
/// check with backoff, besides a watch on the nearest ancestor that sees most returns at once).
/// Empty while all is well: then the watcher thread blocks with no timeout at all.
struct DirectoryIdentity: Equatable {
    var device: UInt64
    var inode: UInt64
}

struct RecoveryTimers {
    enum Reason { case overflow, degraded }

    struct Due {
        var at: ContinuousClock.Instant
        var delay: Duration
    }

    var rescans: [[UInt8]: (due: ContinuousClock.Instant, reason: Reason)] = [:]
    var returnChecks: [[UInt8]: Due] = [:]
    /// The wait before a degraded root's next rescan, doubling up to `maxDegradedDelay`.
    var degradedDelay: [[UInt8]: Duration] = [:]
    /// Roots whose ignore file was created and whose writer's close has not come yet: read
    /// then anyway, for a file that no writer will close under that name (see
    /// `ignoreFileIsFinal`).
    var ignoreFileReads: [[UInt8]: ContinuousClock.Instant] = [:]
    var lastOverflow: ContinuousClock.Instant?
    var overflowDelay: Duration = .zero

    static let firstDegradedDelay = Duration.seconds(2)
    static let maxDegradedDelay = Duration.seconds(30)
    static let firstReturnDelay = Duration.seconds(1)
    static let maxReturnDelay = Duration.seconds(30)
    /// Overflows closer together than this count as a storm and back off.
    static let overflowStormWindow = Duration.seconds(10)
    static let maxOverflowDelay = Duration.seconds(16)
    static let ignoreFileReadDelay = Duration.seconds(1)

    var isEmpty: Bool { rescans.isEmpty && returnChecks.isEmpty && ignoreFileReads.isEmpty }

    /// Records an overflow; returns how long to wait before rescanning.
    mutating func overflowed(now: ContinuousClock.Instant = .now) -> Duration {
        if let last = lastOverflow, now - last < Self.overflowStormWindow {
            overflowDelay = min(max(overflowDelay * 2, .seconds(1)), Self.maxOverflowDelay)
        } else {
            overflowDelay = .zero
        }
        lastOverflow = now
        return overflowDelay
    }

    /// An overflow rescan also serves a degraded one, so it wins; the earlier time wins.
    mutating func schedule(rescanOf path: [UInt8], in delay: Duration, reason: Reason, now: ContinuousClock.Instant = .now) {
        let due = now + delay
        if let old = rescans[path] {
            rescans[path] = (min(old.due, due), old.reason == .overflow || reason == .overflow ? .overflow : .degraded)
        } else {
            rescans[path] = (due, reason)
        }
    }

    /// Whole seconds until the next due work (libinotifytools' timeout unit), rounded up;
    /// -1 (block) when there is none.
    func secondsUntilDue(now: ContinuousClock.Instant = .now) -> Int {
        let dues = rescans.values.map(\.due) + returnChecks.values.map(\.at) + Array(ignoreFileReads.values)
        guard let next = dues.min() else { return -1 }
        let left = next - now
        if left <= .zero { return 0 }
        let (seconds, attoseconds) = left.components
        return Int(seconds) + (attoseconds > 0 ? 1 : 0)
    }
}

extension WatcherLoop {
    func runDueTimers() {
        guard !timers.isEmpty else { return }
        let now = ContinuousClock.now
        let due = timers.rescans.filter { $0.value.due <= now }.sorted { $0.key.lexicographicallyPrecedes($1.key) }
        for (path, r) in due {
            timers.rescans.removeValue(forKey: path)
            guard let scan = rescan(path) else { continue }
            switch r.reason {
            case .overflow: emit(.rootRescanned(root: path, scan: scan))
            case .degraded: emit(.rootRefreshed(root: path, scan: scan))
            }
        }
        if !due.isEmpty { scheduleDegradedRescans() }
        for (path, check) in timers.returnChecks where check.at <= now {
            checkReturn(path, delay: check.delay)
        }
        for (root, at) in timers.ignoreFileReads where at <= now {
            timers.ignoreFileReads.removeValue(forKey: root)
            guard rootWds[root] != nil else { continue }
            emit(.ignoreFileChanged(root: root, contents: DirectoryScanner.readFile(PathBytes.join(root, IgnoreRules.fileName))))
        }
    }

    /// Every root over the watch limit gets its next rescan; a root no longer over it is said
    /// to have recovered.
    func scheduleDegradedRescans() {
        for (path, wd) in rootWds {
            if degraded.contains(wd) {
                guard timers.rescans[path] == nil else { continue }
                let delay = timers.degradedDelay[path] ?? RecoveryTimers.firstDegradedDelay
                timers.degradedDelay[path] = min(delay * 2, RecoveryTimers.maxDegradedDelay)
                timers.schedule(rescanOf: path, in: delay, reason: .degraded)
            } else if timers.degradedDelay.removeValue(forKey: path) != nil {
                limitLogged.remove(wd)
                logger.notice("every directory of the root is watched again", metadata: ["root": "\(PathBytes.display(path))"])
            }
        }
    }

    // MARK: Vanished roots

    func awaitReturn(_ path: [UInt8], delay: Duration = RecoveryTimers.firstReturnDelay) {
        timers.returnChecks[path] = .init(at: .now + delay, delay: delay)
        placeSentinel(path)
    }

    func stopAwaitingReturn(_ path: [UInt8]) {
        timers.returnChecks.removeValue(forKey: path)
        dropSentinel(path)
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
            if vanished[path] == wd { return }
            dropSentinel(path)
            vanished[path] = wd
            sentinels[wd, default: []].insert(path)
            return
        }
    }

    func dropSentinel(_ path: [UInt8]) {
        guard let wd = vanished.removeValue(forKey: path) else { return }
        sentinels[wd]?.remove(path)
        guard sentinels[wd]?.isEmpty ?? true else { return }
        sentinels.removeValue(forKey: wd)
        // A directory the tree watches keeps its watch.
        if dirs[wd] == nil { inotify_rm_watch(fd, wd) }
    }

    /// Something appeared in (or happened to) an ancestor of a vanished root: check it now.
    func sentinelEvent(_ e: RawEvent) {
        guard let roots = sentinels[e.wd] else { return }
        if e.mask & sb_IN_IGNORED != 0 {
            sentinels.removeValue(forKey: e.wd)
            for r in roots where vanished[r] == e.wd { vanished.removeValue(forKey: r) }
        }
        for r in roots {
            timers.returnChecks[r] = .init(at: .now, delay: RecoveryTimers.firstReturnDelay)
        }
    }

    func checkReturn(_ path: [UInt8], delay: Duration) {
        let isDir = FileStat.lstat(path)?.0 == .dir
        // A root that was a mount point is back when something is mounted there again, not
        // when its empty mount point shows.
        let back = isDir && (!mountPointRoots.contains(path) || Self.isMountPoint(path))
        let next = min(delay * 2, RecoveryTimers.maxReturnDelay)
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
        rootWds[path] = wd
        rootIdentity[path] = Self.directoryIdentity(path)
        updateCounts()
        logger.notice("root is back: watching it again", metadata: ["root": "\(PathBytes.display(path))", "entries": "\(scan.count)"])
        emit(.rootRefreshed(root: path, scan: rootScan(path, scan: scan, wd: wd)))
        scheduleDegradedRescans()
    }

    /// A mount or unmount changed what some paths are: a root whose directory is no longer the
    /// one watched vanished (and may be back at once, as whatever is there now); a vanished root
    /// may have been mounted again.
    func mountsChanged() {
        for (path, wd) in rootWds.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) })
        where Self.directoryIdentity(path) != rootIdentity[path] {
            rootVanished(wd, path: path, reason: "unmounted")
        }
        for path in timers.returnChecks.keys { timers.returnChecks[path]?.at = .now }
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

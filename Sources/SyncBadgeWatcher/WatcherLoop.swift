#if canImport(Glibc)
import Glibc
#endif
import CInotifyTools
import Logging
import SyncBadgeCore
import SyncBadgeWatchEvents

/// The watcher thread's state. Only that thread touches it.
///
/// libinotifytools owns the inotify instance and reads and buffers its events. Watches are added
/// and removed with `inotify_add_watch`/`inotify_rm_watch` on the library's descriptor, and paths
/// are tracked here as a tree of watched directories (wd → parent wd + name): the library's own
/// by-filename bookkeeping never forgets a directory the kernel dropped (`remove_watch_by_wd`
/// fails once the watch is gone, so its record leaks and a directory re-created at the same path
/// is looked up as the dead wd), and it does not follow moves.
final class WatcherLoop {
    struct Dir {
        var parent: Int32
        /// A root's is its absolute path.
        var name: [UInt8]
        var children: [[UInt8]: Int32] = [:]
        var root: Int32
    }

    struct RawEvent {
        var wd: Int32
        var mask: UInt32
        var cookie: UInt32
        var name: [UInt8]
    }

    let owner: Watcher
    let controlFile: [UInt8]
    let logger: Logger
    let sink: @Sendable ([WatcherMessage]) -> Void

    var fd: Int32 = -1
    var controlWd: Int32 = -1
    var dirs: [Int32: Dir] = [:]
    var rootWds: [[UInt8]: Int32] = [:]
    var batch: [WatcherMessage] = []
    var pendingMove: (cookie: UInt32, path: [UInt8], isDir: Bool, wd: Int32?)?
    var running = true
    var degraded: Set<Int32> = []
    /// errno of the last failed `inotify_add_watch`.
    var lastWatchError: Int32 = 0
    var watchesByRoot: [Int32: Int] = [:]
    /// Directories (re)watched by the scan under way, to prune the ones that vanished.
    var scanSeen: Set<Int32>? = nil
    /// The second control file: only this thread touches it, so its events release barriers.
    var barrierFile: [UInt8] = []
    var barrierWd: Int32 = -1
    /// Barriers waiting for their touch of `barrierFile` to come back, oldest group first.
    var heldBarriers: [[UInt64]] = []
    /// Timed work (see WatcherLoop+Recovery): only while something is wrong, so an idle,
    /// healthy daemon never wakes.
    var timers = RecoveryTimers()
    /// Roots whose directory is gone, waiting to come back → their sentinel watch.
    var vanished: [[UInt8]: Int32] = [:]
    /// Watches on the nearest existing ancestor of vanished roots → those roots.
    var sentinels: [Int32: Set<[UInt8]>] = [:]
    /// Roots that were mount points when watched: they come back only as mount points.
    var mountPointRoots: Set<[UInt8]> = []
    /// What each root's directory was when watched: after a mount change, another one there
    /// means the watched one is gone from that path.
    var rootIdentity: [[UInt8]: DirectoryIdentity] = [:]
    /// Roots already told about in the log as over the watch limit.
    var limitLogged: Set<Int32> = []

    static let dirMask: UInt32 = UInt32(IN_CREATE) | UInt32(IN_MODIFY) | UInt32(IN_ATTRIB) | UInt32(IN_DELETE)
        | UInt32(IN_DELETE_SELF) | UInt32(IN_MOVED_FROM) | UInt32(IN_MOVED_TO) | UInt32(IN_MOVE_SELF)
        | sb_IN_DONT_FOLLOW | sb_IN_EXCL_UNLINK | sb_IN_ONLYDIR

    init(owner: Watcher, controlFile: [UInt8], logger: Logger, sink: @escaping @Sendable ([WatcherMessage]) -> Void) {
        self.owner = owner
        self.controlFile = controlFile
        self.logger = logger
        self.sink = sink
    }

    func start() -> Result<Void, WatcherError> {
        guard inotifytools_initialize() != 0 else {
            return .failure(.initialise(String(cString: strerror(inotifytools_error()))))
        }
        guard let found = Self.findInotifyDescriptor() else {
            return .failure(.initialise("no inotify descriptor found after initialising libinotifytools"))
        }
        fd = found
        controlWd = controlFile.withCString { inotify_add_watch(fd, $0, UInt32(IN_ATTRIB)) }
        guard controlWd >= 0 else { return .failure(.initialise("cannot watch the control file: \(String(cString: strerror(errno)))")) }
        barrierFile = controlFile + Array("-barrier".utf8)
        let bfd = barrierFile.withCString { open($0, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600) }
        if bfd >= 0 { close(bfd) }
        barrierWd = barrierFile.withCString { inotify_add_watch(fd, $0, UInt32(IN_ATTRIB)) }
        guard barrierWd >= 0 else { return .failure(.initialise("cannot watch the barrier file: \(String(cString: strerror(errno)))")) }
        return .success(())
    }

    /// libinotifytools does not expose its descriptor: it is the process's only inotify instance.
    static func findInotifyDescriptor() -> Int32? {
        guard let dir = opendir("/proc/self/fd") else { return nil }
        defer { closedir(dir) }
        var buf = [CChar](repeating: 0, count: 64)
        while let ent = readdir(dir) {
            let name = withUnsafeBytes(of: &ent.pointee.d_name) { String(cString: $0.baseAddress!.assumingMemoryBound(to: CChar.self)) }
            guard let n = Int32(name) else { continue }
            let len = readlink("/proc/self/fd/\(n)", &buf, buf.count - 1)
            guard len > 0 else { continue }
            if String(decoding: buf[0..<len].map { UInt8(bitPattern: $0) }, as: UTF8.self) == "anon_inode:inotify" { return n }
        }
        return nil
    }

    // MARK: Loop

    func run() {
        while running {
            runDueTimers()
            // Block only when nothing is waiting to be delivered: then the thread sleeps in the
            // kernel until an event arrives, or until timed recovery work is due.
            let mayBlock = batch.isEmpty && pendingMove == nil
            guard let ptr = inotifytools_next_events(mayBlock ? timers.secondsUntilDue() : 0, 1) else {
                let err = inotifytools_error()
                if err != 0 && err != EINTR {
                    logger.error("inotify read failed", metadata: ["error": "\(String(cString: strerror(err)))"])
                }
                // Nothing more is queued: an unpaired move-from was a move out.
                resolvePendingMove()
                flush()
                continue
            }
            // Copy the event out: the library's buffer is reused by the next call.
            let cname = sb_event_name(ptr)!
            let raw = RawEvent(
                wd: sb_event_wd(ptr), mask: sb_event_mask(ptr), cookie: sb_event_cookie(ptr),
                name: Array(UnsafeRawBufferPointer(start: cname, count: strlen(cname))))
            owner.eventCount.add(1, ordering: .relaxed)
            if let pm = pendingMove, !(raw.mask & UInt32(IN_MOVED_TO) != 0 && raw.cookie == pm.cookie) {
                resolvePendingMove()
            }
            handle(raw)
            if batch.count >= 1024 { flush() }
        }
        for wd in dirs.keys { inotify_rm_watch(fd, wd) }
        inotifytools_cleanup()
    }

    func flush() {
        guard !batch.isEmpty else { return }
        let out = batch
        batch.removeAll(keepingCapacity: true)
        sink(out)
    }

    func emit(_ e: WatcherMessage) {
        batch.append(e)
    }

    // MARK: Paths

    func path(of wd: Int32) -> [UInt8]? {
        var parts: [[UInt8]] = []
        var cur = wd
        while let d = dirs[cur] {
            parts.append(d.name)
            if d.parent < 0 { break }
            cur = d.parent
        }
        guard var out = parts.popLast() else { return nil }
        for p in parts.reversed() {
            out.append(PathBytes.slash)
            out.append(contentsOf: p)
        }
        return out
    }

    /// Adds a watch on a directory found below `parent` (or a root when `parent` is -1).
    func addWatch(_ path: [UInt8], parent: Int32, name: [UInt8], root: Int32?) -> Int32? {
        // A root also reports closes after writing: its ignore file is read when its writer is
        // done with it, not at the truncation that starts a rewrite in place.
        let mask = parent < 0 ? Self.dirMask | UInt32(IN_CLOSE_WRITE) : Self.dirMask
        let wd = path.withCString { inotify_add_watch(fd, $0, mask) }
        guard wd >= 0 else {
            let err = errno
            lastWatchError = err
            if err == ENOSPC {
                // inotify says ENOSPC when the per-user watch limit is reached, not the disk.
                let r = root ?? -1
                degraded.insert(r)
                if limitLogged.insert(r).inserted {
                    logger.warning("inotify watch limit reached: directories beyond it are rescanned periodically instead of watched; raise the limit with `sysctl fs.inotify.max_user_watches=<n>` (or a file in /etc/sysctl.d) and the root recovers by itself",
                                   metadata: ["path": "\(PathBytes.display(path))"])
                }
            }
            return nil
        }
        if let old = dirs[wd], old.parent >= 0, var p = dirs[old.parent] {
            // The same directory seen again under a new name: forget the old link.
            p.children.removeValue(forKey: old.name)
            dirs[old.parent] = p
        }
        let rootWd = root ?? wd
        if let old = dirs[wd] {
            if old.root != rootWd {
                watchesByRoot[old.root, default: 1] -= 1
                watchesByRoot[rootWd, default: 0] += 1
            }
        } else {
            watchesByRoot[rootWd, default: 0] += 1
        }
        scanSeen?.insert(wd)
        dirs[wd] = Dir(parent: parent, name: parent < 0 ? path : name, children: dirs[wd]?.children ?? [:], root: rootWd)
        if parent >= 0 { dirs[parent]?.children[name] = wd }
        return wd
    }

    /// Forgets a watched directory and everything below it, removing the kernel watches
    /// when `rmWatch` (they are already gone when the directory was deleted).
    func forget(_ wd: Int32, rmWatch: Bool) {
        guard let d = dirs[wd] else { return }
        if d.parent >= 0 { dirs[d.parent]?.children.removeValue(forKey: d.name) }
        var stack = [wd]
        while let w = stack.popLast() {
            guard let dd = dirs.removeValue(forKey: w) else { continue }
            watchesByRoot[dd.root, default: 1] -= 1
            stack.append(contentsOf: dd.children.values)
            if rmWatch { inotify_rm_watch(fd, w) }
        }
        updateCounts()
    }

    /// Watches `top` and every directory below it, then reads them: anything created before
    /// its directory's watch existed is found by the read.
    func watchAndScan(_ top: [UInt8], parent: Int32, name: [UInt8], root: Int32?, identities: Bool) -> (wd: Int32?, scan: ScanTree) {
        var wds: [Int32] = []  // scan index → wd (-1: none), filled as far as the directories go
        var topWd: Int32? = nil
        let scan = DirectoryScanner.scan(top, identities: identities, progress: { n in
            self.logger.info("scanning", metadata: ["path": "\(PathBytes.display(top))", "entries": "\(n)"])
        }) { path, index, parentIndex in
            if index < 0 {
                topWd = addWatch(path, parent: parent, name: name, root: root)
                return
            }
            guard let parentWd = parentIndex < 0 ? topWd : (Int(parentIndex) < wds.count && wds[Int(parentIndex)] >= 0 ? wds[Int(parentIndex)] : nil) else { return }
            if let wd = addWatch(path, parent: parentWd, name: Array(PathBytes.lastComponent(path)), root: root ?? topWd) {
                if wds.count <= Int(index) { wds.append(contentsOf: repeatElement(-1, count: Int(index) + 1 - wds.count)) }
                wds[Int(index)] = wd
            }
        }
        updateCounts()
        return (topWd, scan)
    }

    /// Publishes per-root watch counts (read by `ROOTS` and `STATS` from other threads).
    func updateCounts() {
        var counts: [[UInt8]: Int] = [:]
        for (path, wd) in rootWds { counts[path] = watchesByRoot[wd] ?? 0 }
        owner.watchCounts.withLock { $0 = counts }
    }
}

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
/// and removed with `inotify_add_watch`/`inotify_rm_watch` on the library's descriptor. This
/// class makes those syscalls and does what the pure parts decide: the paths of the watched
/// directories (`WatchTree`), the pairing of a rename's halves (`MovePairing`), timed recovery
/// (`RecoveryTimers`), vanished roots (`VanishedRoots`) and barriers (`BarrierQueue`).
final class WatcherLoop {
    /// The two files the watcher thread watches for itself: one that other threads touch to
    /// wake it for commands, and one that it touches itself for barriers.
    struct ControlFiles {
        var command: [UInt8]
        var commandWd: Int32 = -1
        var barrier: [UInt8]
        var barrierWd: Int32 = -1
    }

    struct RawEvent {
        var wd: Int32
        var mask: UInt32
        var cookie: UInt32
        var name: [UInt8]
    }

    let owner: Watcher
    let logger: Logger
    let sink: @Sendable ([WatcherMessage]) -> Void

    var fd: Int32 = -1
    var control: ControlFiles
    var tree = WatchTree()
    var moves = MovePairing()
    var barriers = BarrierQueue()
    /// Timed work: only while something is wrong, so an idle, healthy daemon never wakes.
    var timers = RecoveryTimers()
    var vanished = VanishedRoots()
    var batch: [WatcherMessage] = []
    var running = true
    /// errno of the last failed `inotify_add_watch`.
    var lastWatchError: Int32 = 0

    static let dirMask: UInt32 = UInt32(IN_CREATE) | UInt32(IN_MODIFY) | UInt32(IN_ATTRIB) | UInt32(IN_DELETE)
        | UInt32(IN_DELETE_SELF) | UInt32(IN_MOVED_FROM) | UInt32(IN_MOVED_TO) | UInt32(IN_MOVE_SELF)
        | sb_IN_DONT_FOLLOW | sb_IN_EXCL_UNLINK | sb_IN_ONLYDIR

    init(owner: Watcher, controlFile: [UInt8], logger: Logger, sink: @escaping @Sendable ([WatcherMessage]) -> Void) {
        self.owner = owner
        self.control = ControlFiles(command: controlFile, barrier: controlFile + Array("-barrier".utf8))
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
        control.commandWd = control.command.withCString { inotify_add_watch(fd, $0, UInt32(IN_ATTRIB)) }
        guard control.commandWd >= 0 else { return .failure(.initialise("cannot watch the control file: \(String(cString: strerror(errno)))")) }
        let bfd = control.barrier.withCString { open($0, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600) }
        if bfd >= 0 { close(bfd) }
        control.barrierWd = control.barrier.withCString { inotify_add_watch(fd, $0, UInt32(IN_ATTRIB)) }
        guard control.barrierWd >= 0 else { return .failure(.initialise("cannot watch the barrier file: \(String(cString: strerror(errno)))")) }
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
            let mayBlock = batch.isEmpty && !moves.isWaiting
            guard let ptr = inotifytools_next_events(mayBlock ? timers.secondsUntilDue(now: .now) : 0, 1) else {
                let err = inotifytools_error()
                if err != 0 && err != EINTR {
                    logger.error("inotify read failed", metadata: ["error": "\(String(cString: strerror(err)))"])
                }
                // Nothing more is queued: an unpaired move-from waits a little for its move-to
                // (the kernel may not have queued it yet), then it was a move out.
                switch moves.queueDrained(now: .now) {
                case .nothing:
                    break
                case .movedOut(let gone):
                    movedOut(gone)
                case .waitUntil(let end):
                    flush()
                    waitForEvents(until: end)
                    continue
                }
                flush()
                continue
            }
            // Copy the event out: the library's buffer is reused by the next call.
            let cname = sb_event_name(ptr)!
            let raw = RawEvent(
                wd: sb_event_wd(ptr), mask: sb_event_mask(ptr), cookie: sb_event_cookie(ptr),
                name: Array(UnsafeRawBufferPointer(start: cname, count: strlen(cname))))
            owner.eventCount.add(1, ordering: .relaxed)
            if let gone = moves.eventArrived(isMovedTo: raw.mask & UInt32(IN_MOVED_TO) != 0, cookie: raw.cookie) {
                movedOut(gone)
            }
            handle(raw)
            if batch.count >= 1024 { flush() }
        }
        for wd in tree.dirs.keys { inotify_rm_watch(fd, wd) }
        inotifytools_cleanup()
    }

    /// Sleeps until the inotify descriptor has events to read, or until `end`. The library's
    /// buffer is empty here (it just returned no event), so the descriptor says it all.
    func waitForEvents(until end: ContinuousClock.Instant) {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        _ = poll(&p, 1, PollTimeout.milliseconds(until: end, now: .now))   // EINTR: the loop asks again
    }

    func flush() {
        guard !batch.isEmpty else { return }
        var out: [WatcherMessage] = [.identities(Self.identities(of: batch, under: owner.compared.withLock { $0 }))]
        out.append(contentsOf: batch)
        batch.removeAll(keepingCapacity: true)
        sink(out)
    }

    /// The identity of every path the batch's writes, attribute changes and renames name,
    /// read now that the batch's events are read: what the files are when the hub applies
    /// them, but for writes still to come, which are events of a later batch. Not for a
    /// creation alone: its path was no synced file, so the hub compares no identity (and, if
    /// it does, reads it itself), and a burst of creations costs no `lstat` each. Only below
    /// the `compared` roots, where a provider reported files synced (`compareIdentities`).
    static func identities(of batch: [WatcherMessage], under compared: [[UInt8]]) -> [[UInt8]: FileIdentity?] {
        var found: [[UInt8]: FileIdentity?] = [:]
        guard !compared.isEmpty else { return found }
        for e in batch {
            let path: [UInt8]
            switch e {
            case .changed(let p, _, .modify), .changed(let p, _, .attrib), .moved(_, let p, _): path = p
            default: continue
            }
            guard compared.contains(where: { PathBytes.isAtOrBelow(path, $0) }) else { continue }
            if found.index(forKey: path) == nil { found[path] = .some(FileStat.lstat(path)?.identity) }
        }
        return found
    }

    func emit(_ e: WatcherMessage) {
        batch.append(e)
    }

    // MARK: Watches

    /// Adds a watch on a directory found below `parent` (or a root when `parent` is -1).
    func addWatch(_ path: [UInt8], parent: Int32, name: [UInt8], root: Int32?) -> Int32? {
        // A root also reports closes after writing: its ignore file is read when its writer is
        // done with it, not at the truncation that starts a rewrite in place.
        let mask = parent < 0 ? Self.dirMask | UInt32(IN_CLOSE_WRITE) : Self.dirMask
        let wd = path.withCString { inotify_add_watch(fd, $0, mask) }
        guard wd >= 0 else {
            let err = errno
            lastWatchError = err
            // inotify says ENOSPC when the per-user watch limit is reached, not the disk.
            if err == ENOSPC && tree.watchLimitReached(root: root) {
                logger.warning("inotify watch limit reached: directories beyond it are rescanned periodically instead of watched; raise the limit with `sysctl fs.inotify.max_user_watches=<n>` (or a file in /etc/sysctl.d) and the root recovers by itself",
                               metadata: ["path": "\(PathBytes.display(path))"])
            }
            return nil
        }
        tree.watched(wd, path: path, parent: parent, name: name, root: root)
        return wd
    }

    /// Removes the kernel watches of directories the tree forgot.
    func removeWatches(_ wds: [Int32]) {
        for wd in wds { inotify_rm_watch(fd, wd) }
    }

    /// Forgets a watched directory and everything below it, removing the kernel watches
    /// when `rmWatch` (they are already gone when the directory was deleted).
    func forget(_ wd: Int32, rmWatch: Bool) {
        let gone = tree.forget(wd)
        if rmWatch { removeWatches(gone) }
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
        let counts = tree.watchCounts
        owner.watchCounts.withLock { $0 = counts }
    }
}

#if canImport(Glibc)
import Glibc
#endif
import CInotifyTools
import Dispatch
import Logging
import Synchronization
import SyncBadgeCore
import SyncBadgeWatchEvents

/// Recursive watching of every root through libinotifytools.
///
/// libinotifytools keeps one global, thread-unsafe instance per process, so one thread owns it.
/// That thread blocks in the kernel until something happens: no timers, no polling. Others talk
/// to it through a command queue and wake it by touching a private control file it watches;
/// because one inotify instance reports events in order, the control file's event also proves
/// that every event queued before it has been read (used by `barrier`).
public final class Watcher: StoppableWatcher {
    enum Command: Sendable {
        case addRoot(path: [UInt8], token: UInt64, identities: Bool)
        case removeRoot(path: [UInt8])
        case barrier(token: UInt64)
        /// The mount table changed: roots may have been unmounted or mounted again.
        case mountsChanged
        case shutdown
    }

    let commands = Mutex<[Command]>([])
    let controlFile: [UInt8]
    let watchCounts = Mutex<[[UInt8]: Int]>([:])
    let finished = DispatchSemaphore(value: 0)
    let stopped = Mutex<Bool>(false)
    let eventCount = Atomic<Int>(0)
    /// The roots below which changes have their identities read (`compareIdentities(under:)`).
    /// The watcher thread reads it once per batch; it is not a command, since a batch that
    /// misses it is still right (the hub reads what it needs), and so it wakes nobody.
    let compared = Mutex<[[UInt8]]>([])
    /// Writing end of the pipe that stops the mount-table thread.
    let mountStop = Mutex<Int32?>(nil)

    /// Creates the watcher and starts its thread. The thread initialises libinotifytools
    /// before this returns, so call it before opening sockets: the library uses `select`,
    /// which needs its descriptor below 1024.
    ///
    /// - Parameters:
    ///   - controlDirectory: a private directory for the control file.
    ///   - sink: receives events in order, in batches, on the watcher thread; it must not block.
    public init(controlDirectory: [UInt8], logger: Logger, sink: @escaping @Sendable ([WatcherMessage]) -> Void) throws {
        controlFile = PathBytes.join(controlDirectory, Array(".syncbadge-wake".utf8))
        let fd = controlFile.withCString { open($0, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600) }
        guard fd >= 0 else { throw WatcherError.controlFile(String(cString: strerror(errno))) }
        close(fd)
        let ready = Mutex<Result<Void, WatcherError>?>(nil)
        let readySignal = DispatchSemaphore(value: 0)
        let t = Thread { [controlFile, self] in
            let loop = WatcherLoop(owner: self, controlFile: controlFile, logger: logger, sink: sink)
            let started = loop.start()
            ready.withLock { $0 = started }
            readySignal.signal()
            guard case .success = started else { return }
            loop.run()
            self.finished.signal()
        }
        t.name = "syncbadge-watcher"
        t.start()
        readySignal.wait()
        if case .failure(let e) = ready.withLock({ $0! }) { throw e }
        startMountWatch()
    }

    /// Mounts and unmounts make no inotify event on the paths they cover, but the kernel flags
    /// `/proc/self/mountinfo` (POLLPRI) when the mount table changes: a thread blocked in
    /// `poll` on it costs nothing until then.
    func startMountWatch() {
        let fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        var pipeFds: [Int32] = [0, 0]
        guard pipe(&pipeFds) == 0 else {
            close(fd)
            return
        }
        for p in pipeFds { _ = fcntl(p, F_SETFD, FD_CLOEXEC) }
        mountStop.withLock { $0 = pipeFds[1] }
        let stopRead = pipeFds[0]
        let t = Thread { [self] in
            var fds = [pollfd(fd: fd, events: Int16(POLLPRI), revents: 0), pollfd(fd: stopRead, events: Int16(POLLIN), revents: 0)]
            while true {
                guard poll(&fds, 2, -1) >= 0 || errno == EINTR else { break }
                if fds[1].revents != 0 { break }
                if fds[0].revents & Int16(POLLPRI | POLLERR) != 0 {
                    // Re-arm: the flag clears once the file is read from the start again.
                    var buf = [UInt8](repeating: 0, count: 4096)
                    lseek(fd, 0, SEEK_SET)
                    while read(fd, &buf, buf.count) > 0 {}
                    send(.mountsChanged)
                }
            }
            close(fd)
            close(stopRead)
        }
        t.name = "syncbadge-mounts"
        t.start()
    }

    /// Starts watching a root; the answer comes as `.rootAdded(token:)`.
    public func addRoot(_ path: [UInt8], token: UInt64, identities: Bool = false) {
        send(.addRoot(path: path, token: token, identities: identities))
    }

    public func removeRoot(_ path: [UInt8]) {
        compared.withLock { $0.removeAll { $0 == path } }
        send(.removeRoot(path: path))
    }

    public func compareIdentities(under root: [UInt8]) {
        compared.withLock { roots in
            if !roots.contains(root) { roots.append(root) }
        }
    }

    /// Asks for `.barrier(token:)` once every event already queued in the kernel is delivered.
    public func barrier(token: UInt64) { send(.barrier(token: token)) }

    /// Stops the thread; no events are delivered after this returns.
    public func shutdown() {
        let already = stopped.withLock { s in
            defer { s = true }
            return s
        }
        if already { return }
        send(.shutdown)
        if let w = mountStop.withLock({ $0 }) {
            var one: UInt8 = 1
            _ = write(w, &one, 1)
            close(w)
        }
        // Bounded: if the control file was deleted under us the wake-up may be lost, and a
        // daemon asked to stop must stop all the same.
        _ = finished.wait(timeout: .now() + 2)
    }

    /// Inotify watches held for a root.
    public func watches(of root: [UInt8]) -> Int { watchCounts.withLock { $0[root] ?? 0 } }

    public var totalWatches: Int { watchCounts.withLock { $0.values.reduce(0, +) } }

    /// Events read from the kernel since start.
    public var events: Int { eventCount.load(ordering: .relaxed) }

    func send(_ c: Command) {
        commands.withLock { $0.append(c) }
        wake()
    }

    /// Touches the control file: its IN_ATTRIB wakes the watcher thread.
    func wake() {
        _ = controlFile.withCString { utimensat(AT_FDCWD, $0, nil, 0) }
    }

    func takeCommands() -> [Command] {
        commands.withLock { c in
            defer { c.removeAll() }
            return c
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
import CInotifyTools
import Foundation
import Logging
import Synchronization
import SyncBadgeCore

/// Recursive watching of every root through libinotifytools.
///
/// libinotifytools keeps one global, thread-unsafe instance per process, so one thread owns it.
/// That thread blocks in the kernel until something happens: no timers, no polling. Others talk
/// to it through a command queue and wake it by touching a private control file it watches;
/// because one inotify instance reports events in order, the control file's event also proves
/// that every event queued before it has been read (used by `barrier`).
public final class Watcher: Sendable {
    enum Command: Sendable {
        case addRoot(path: [UInt8], token: UInt64, identities: Bool)
        case removeRoot(path: [UInt8])
        case barrier(token: UInt64)
        case shutdown
    }

    let commands = Mutex<[Command]>([])
    let controlFile: [UInt8]
    let watchCounts = Mutex<[[UInt8]: Int]>([:])
    let finished = DispatchSemaphore(value: 0)
    let stopped = Mutex<Bool>(false)
    let eventCount = Atomic<Int>(0)

    /// Creates the watcher and starts its thread. The thread initialises libinotifytools
    /// before this returns, so call it before opening sockets: the library uses `select`,
    /// which needs its descriptor below 1024.
    ///
    /// - Parameters:
    ///   - controlDirectory: a private directory for the control file.
    ///   - sink: receives events in order, in batches, on the watcher thread; it must not block.
    public init(controlDirectory: [UInt8], logger: Logger, sink: @escaping @Sendable ([FileEvent]) -> Void) throws {
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
    }

    /// Starts watching a root; the answer comes as `.rootAdded(token:)`.
    public func addRoot(_ path: [UInt8], token: UInt64, identities: Bool = false) {
        send(.addRoot(path: path, token: token, identities: identities))
    }

    public func removeRoot(_ path: [UInt8]) { send(.removeRoot(path: path)) }

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

public enum WatcherError: Error, CustomStringConvertible {
    case controlFile(String)
    case initialise(String)

    public var description: String {
        switch self {
        case .controlFile(let why): "cannot create the watcher's control file: \(why)"
        case .initialise(let why): "cannot initialise inotify: \(why)"
        }
    }
}

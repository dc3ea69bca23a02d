#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import Testing
import SyncBadgeClient
import SyncBadgeCore

/// Where the built products are: next to this test bundle.
enum Products {
    static var directory: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    }
    static var daemon: URL { directory.appendingPathComponent("syncbadged") }
    static var cli: URL { directory.appendingPathComponent("syncbadge") }
    static var repository: URL {
        // Tests/EndToEndTests/Support/DaemonHarness.swift
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
    }
    static var badges: URL { repository.appendingPathComponent("Badges") }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
}

/// A private temporary directory, removed when done.
final class TempDir {
    let path: String

    init() throws {
        var template = Array((NSTemporaryDirectory() + "syncbadge-test-XXXXXX").utf8CString)
        guard let p = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw HarnessError(description: "mkdtemp failed")
        }
        // Resolve /tmp symlinks so paths match what the daemon reports.
        path = URL(fileURLWithPath: String(cString: p)).resolvingSymlinksInPath().path
    }

    func sub(_ name: String) -> String { path + "/" + name }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// Collects a child's stderr on a thread and lets tests wait for a line to appear.
final class OutputWatcher: Sendable {
    let text = Mutex<String>("")
    let ended = Atomic<Bool>(false)
    let changed = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        let thread = Thread { [self] in
            while true {
                let data = handle.availableData
                if data.isEmpty { break }
                text.withLock { $0 += String(decoding: data, as: UTF8.self) }
                changed.signal()
            }
            ended.store(true, ordering: .sequentiallyConsistent)
            changed.signal()
        }
        thread.start()
    }

    /// Waits until the output contains `needle`; false at the deadline or once it ended.
    func wait(for needle: String, timeout: Double = 20) -> Bool {
        let deadline = DispatchTime.now() + timeout
        while true {
            if text.withLock({ $0.contains(needle) }) { return true }
            if ended.load(ordering: .sequentiallyConsistent) { return false }
            if changed.wait(timeout: deadline) == .timedOut { return false }
        }
    }
}

/// The real daemon on a temporary socket and state directory.
final class DaemonHarness {
    let temp: TempDir
    let socket: String
    let stateDir: String
    /// The running daemon; nil while stopped.
    var child: ChildProcess?

    /// Daemon options besides the socket, state and badges (the contract's times, shortened).
    let extraArguments: [String]

    init(temp: TempDir? = nil, arguments: [String] = []) throws {
        self.temp = try temp ?? TempDir()
        socket = self.temp.sub("run/daemon.sock")
        stateDir = self.temp.sub("state")
        extraArguments = arguments
        try start()
    }

    func start() throws {
        let c = try ChildProcess(Products.daemon, ["--socket", socket, "--state-dir", stateDir, "--badges", Products.badges.path,
                                                   "--log-level", "info"] + extraArguments)
        child = c
        guard c.output.wait(for: "listening") else {
            c.stop(signal: SIGKILL)
            child = nil
            throw HarnessError(description: "daemon did not start: \(c.log)")
        }
    }

    /// Sends `signal` and waits for the exit status.
    @discardableResult
    func stop(signal: Int32 = SIGTERM) -> Int32 {
        guard let c = child else { return -1 }
        child = nil
        return c.stop(signal: signal)
    }

    func restart() throws {
        stop()
        try start()
    }

    func connect(role: Role = .viewer, name: String = "test") throws -> Connection {
        try Connection(socketPath: socket, role: role, name: name)
    }

    /// Makes a directory under the temp dir and registers it as a root.
    func addRoot(_ name: String = "root", files: [String] = []) throws -> String {
        let root = temp.sub(name)
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        for f in files {
            let path = root + "/" + f
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: path, contents: Data("x".utf8))
        }
        let admin = try connect(role: .admin)
        _ = try admin.request(.addRoot(Array(root.utf8)), timeout: 60)
        return root
    }

    /// The daemon's log so far.
    var log: String { child?.log ?? "" }

    deinit {
        // A daemon that died on its own (a crash, a precondition) is a failure of whatever
        // test used it, whether or not the test noticed: say how it ended and what it logged.
        if let p = child?.process, !p.isRunning {
            Issue.record("""
                syncbadged exited on its own (\(p.terminationReason == .uncaughtSignal ? "signal" : "status") \(p.terminationStatus)); its log:
                \(log)
                """)
        }
        // Before `temp` goes: a live daemon re-creates its control files as the directory is
        // removed, which then fails and leaves the whole directory in /tmp.
        stop(signal: SIGKILL)
    }
}

extension Connection {
    /// Waits for a push matching `predicate`, skipping others; throws at the deadline.
    @discardableResult
    func waitForPush(timeout: Double = 15, _ what: String = "push", where predicate: (WireMessage) -> Bool) throws -> WireMessage {
        let deadline = Date().addingTimeInterval(timeout)
        var seen: [String] = []
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0, let m = try nextPush(timeout: left) else {
                throw HarnessError(description: "no \(what) within \(timeout)s; saw: \(seen.suffix(20).joined(separator: " | "))")
            }
            if predicate(m) { return m }
            seen.append("\(m.kind) \(m.fields.first.map { PathBytes.display($0.bytes) } ?? "")")
        }
    }

    func status(_ path: String) throws -> Item {
        try status(bytes: Array(path.utf8))
    }

    func status(bytes: [UInt8]) throws -> Item {
        let r = try request(.status(bytes), timeout: 15)
        guard let i = r.data.compactMap(Item.init).first else { throw HarnessError(description: "no ITEM") }
        return i
    }

    func list(_ path: String) throws -> [Item] {
        try request(.list(Array(path.utf8)), timeout: 15).data.compactMap(Item.init)
    }
}

extension WireMessage {
    var path: String? { fields.first.map { String(decoding: $0.bytes, as: UTF8.self) } }
}

/// Creates a file with exactly these bytes as its name.
func createFile(dir: String, name: [UInt8], contents: String = "x") throws {
    let path = Array(dir.utf8) + [UInt8(ascii: "/")] + name + [0]
    let fd = path.withUnsafeBufferPointer { buf in
        buf.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buf.count) { open($0, O_CREAT | O_WRONLY | O_TRUNC, 0o644) }
    }
    guard fd >= 0 else { throw HarnessError(description: "open failed: \(errno)") }
    _ = contents.withCString { write(fd, $0, strlen($0)) }
    close(fd)
}

/// Creates (or truncates) a file in place: no temporary file and rename, unlike
/// `FileManager.createFile`, whose rename would leave a tombstone at the temporary name.
func touchFile(_ path: String, _ contents: String = "") throws {
    let fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0o644)
    guard fd >= 0 else { throw HarnessError(description: "open \(path) failed: \(errno)") }
    _ = contents.withCString { write(fd, $0, strlen($0)) }
    close(fd)
}

/// Reads a pipe to its end on a thread of its own.
final class PipeReader: Sendable {
    private let data = Mutex(Data())
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread { [self] in
            let all = handle.readDataToEndOfFile()
            data.withLock { $0 = all }
            done.signal()
        }.start()
    }

    /// Everything the pipe carried, once its writers closed it.
    func wait() -> Data {
        done.wait()
        return data.withLock { $0 }
    }
}

/// Runs the CLI (in `directory`, or the test's own); returns exit status and both outputs.
func runCLI(_ args: [String], environment: [String: String]? = nil, in directory: String? = nil) throws -> (status: Int32, out: String, err: String) {
    try runToEnd(Products.cli, args, environment: environment, in: directory, seconds: 120)
}

/// The CLI running in the background, for commands that wait (`syncbadge wait`, an action
/// awaiting its answer) while the test acts.
final class BackgroundCLI: Sendable {
    private let result = Mutex<(status: Int32, out: String, err: String)?>(nil)
    private let done = DispatchSemaphore(value: 0)

    init(_ args: [String]) {
        let thread = Thread { [self] in
            let r = (try? runCLI(args)) ?? (-1, "", "could not start the CLI")
            result.withLock { $0 = r }
            done.signal()
        }
        thread.start()
    }

    /// The exit status and output, once it exited within `timeout` seconds.
    func finish(timeout: Double = 30) -> (status: Int32, out: String, err: String)? {
        guard done.wait(timeout: .now() + timeout) == .success else { return nil }
        done.signal()
        return result.withLock { $0 }
    }

    var hasExited: Bool { result.withLock { $0 != nil } }
}

#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import Logging
import Synchronization
import SyncBadgeClient
import SyncBadgeCore
@_spi(Soak) import SyncBadgeServer
import SyncBadgeWatcher
import SyncBadgeWatchEvents

/// The fast-forward soak: the real daemon (socket, sessions, state tree, store) in this
/// process, fed millions of synthetic file events straight into its hub instead of
/// through inotify, while real clients observe, churn connections and sync over the socket.
/// Nothing may grow: RSS flat after warm-up, fds, observations and tombstones back to what
/// they were.
@main
struct Soak: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncbadge-soak",
        abstract: "Fast-forward soak: millions of synthetic events through syncbadged's state tree and protocol.",
        discussion: """
            Runs the daemon in this process on a temporary socket and directory tree, injects \
            synthetic file events (create, modify, delete, move, directories appearing and \
            vanishing) into its hub in batches, while observers read pushes, other clients \
            connect, OBSERVE and hang up, and a provider keeps syncing everything pending. \
            A line of figures every tenth of the run; exit status 1 when a check fails:
              - RSS grows less than --max-growth percent after warm-up (20 % of the events),
              - open fds, STATS observations, items and tombstones are back at their baseline
                once the churn is deleted and synced.
            """
    )

    @Option(help: "Synthetic events to inject.")
    var events = 10_000_000

    @Option(help: "Directories in the churned namespace.")
    var dirs = 100

    @Option(help: "File names per directory in the churned namespace.")
    var files = 100

    @Option(help: "Clients that observe a directory for the whole run and read every push.")
    var observers = 4

    @Option(help: "Events per injected batch (one event-loop task).")
    var batch = 512

    @Option(help: "Allowed RSS growth after warm-up, in percent.")
    var maxGrowth = 5.0

    @Option(help: "The badge set's directory (badges.tsv).")
    var badges = "Badges"

    @Option(help: "Seed of the event generator.")
    var seed: UInt64 = 1

    @Option(help: "Seconds the end of the run may take to sync the deleted churn and see every hang-up (longer under valgrind).")
    var settle = 30.0

    func validate() throws {
        guard events >= 10_000 else { throw ValidationError("--events must be at least 10000") }
        guard dirs > 0, files > 0, batch > 0, observers >= 0 else {
            throw ValidationError("--dirs, --files and --batch must be positive")
        }
    }

    func run() throws {
        // The daemon's own allocator settings, so the soak's RSS is the daemon's.
        Daemon.tuneAllocator()
        var logger = Logger(label: "syncbadge-soak")
        logger.logLevel = .warning
        let tmp = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: tmp) }
        let plan = Plan(events: events, dirs: dirs, files: files, observers: observers, batch: batch,
                        maxGrowth: maxGrowth, seed: seed, settle: settle, root: tmp + "/root", socket: tmp + "/run/sock")
        for d in 0..<dirs {
            try FileManager.default.createDirectory(atPath: plan.root + "/d\(d)", withIntermediateDirectories: true)
        }
        let config = DaemonConfig(socketPath: plan.socket, stateDirectory: tmp + "/state",
                                  badgesDirectory: URL(fileURLWithPath: badges).path)
        let daemon = try Daemon(config: config, logger: logger, startWatcher: Watcher.init)
        let inject = daemon.injector()
        // The daemon serves on this thread, as in syncbadged; the soak drives it from another.
        let finished = DispatchSemaphore(value: 0)
        let outcome = Mutex<(any Error)?>(nil)
        let worker = Thread {
            do { try plan.run(inject: inject) } catch { outcome.withLock { $0 = error } }
            finished.signal()
        }
        worker.start()
        try daemon.run { finished.wait() }
        if let error = outcome.withLock({ $0 }) { throw error }
    }
}

/// What one soak run does, apart from the daemon it runs against.
struct Plan: Sendable {
    var events: Int
    var dirs: Int
    var files: Int
    var observers: Int
    var batch: Int
    var maxGrowth: Double
    var seed: UInt64
    var settle: Double
    var root: String
    var socket: String

    /// What the client threads count and report.
    final class Shared: Sendable {
        let running = Atomic<Bool>(true)
        let pushes = Atomic<Int>(0)
        let churned = Atomic<Int>(0)
        let synced = Atomic<Int>(0)
        let failures = Mutex<[String]>([])
        func fail(_ what: String) { failures.withLock { $0.append(what) } }
        var isRunning: Bool { running.load(ordering: .relaxed) }
    }

    func run(inject: @escaping @Sendable ([WatcherMessage]) throws -> Void) throws {
        // Plain copies: the client threads' closures take these, not `self`.
        let (root, dirs, seed, socket) = (root, dirs, seed, socket)
        let admin = try connect(socket, .admin, "soak-admin", patience: 30)
        _ = try admin.request(Request(.addRoot, [.path(Array(root.utf8))]), timeout: 60)
        let provider = Mutex(try connect(socket, .provider, "soak-engine"))
        _ = try provider.withLock { try $0.request(Request(.claim, [.path(Array(root.utf8))]), timeout: 60) }
        let shared = Shared()
        var threads: [Thread] = []
        for o in 0..<observers {
            let dir = root + "/d\(o % dirs)"
            threads.append(Thread {
                do {
                    let c = try connect(socket, .viewer, "soak-observer-\(o)")
                    _ = try c.request(Request(.observe, [.path(Array(dir.utf8))]), timeout: 60)
                    while shared.isRunning {
                        if try c.nextPush(timeout: 0.2) != nil { shared.pushes.add(1, ordering: .relaxed) }
                    }
                } catch { shared.fail("observer \(o): \(error)") }
            })
        }
        // Clients that come and go: OBSERVE, read a little, then UNOBSERVE and BYE, or just hang up.
        threads.append(Thread {
            var rng = SplitMix64(seed: seed ^ 0xC0FFEE)
            while shared.isRunning {
                do {
                    let c = try connect(socket, .viewer, "soak-churn")
                    let dir = Array((root + "/d\(rng.next() % UInt64(dirs))").utf8)
                    _ = try c.request(Request(.observe, [.path(dir)]), timeout: 60)
                    for _ in 0..<20 { _ = try c.nextPush(timeout: 0.001) }
                    if rng.next() % 2 == 0 {
                        _ = try c.request(Request(.unobserve, [.path(dir)]), timeout: 60)
                        _ = try c.request(Request(.bye), timeout: 60)
                    }
                    shared.churned.add(1, ordering: .relaxed)
                } catch { shared.fail("churning client: \(error)") }
            }
        })
        threads.append(Thread {
            do {
                while shared.isRunning {
                    let n = try provider.withLock { c in
                        try drainPushes(c)
                        return try syncPending(c, root: root, limit: 500)
                    }
                    shared.synced.add(n, ordering: .relaxed)
                    if n == 0 { usleep(2000) }  // nothing pending: the generator is between batches
                }
            } catch { shared.fail("provider: \(error)") }
        })
        // The baseline: the admin and provider connected (client and daemon ends of each),
        // no other client yet.
        let baseline = try stats(admin)
        let baseFDs = openFDs()
        for t in threads { t.start() }
        print("soak: \(events) events over \(dirs)×\(files) names, \(observers) observers, batches of \(batch)")
        print("baseline: rss \(mib(residentBytes())), fds \(baseFDs), \(describe(baseline))")

        var rng = SplitMix64(seed: seed)
        var generator = EventGenerator(root: Array(root.utf8), dirs: dirs, files: files)
        let start = Date()
        var warm = 0
        var lateMax = 0
        let report = max(events / 10, batch)
        var done = 0
        var nextReport = report
        while done < events && shared.failures.withLock({ $0.isEmpty }) {
            let n = min(batch, events - done)
            try inject((0..<n).map { _ in generator.next(&rng) })
            done += n
            if done >= nextReport || done == events {
                nextReport += report
                let rss = residentBytes()
                if warm == 0 && done >= events / 5 { warm = rss }
                if done >= events * 3 / 5 { lateMax = max(lateMax, rss) }
                try drainPushes(admin)
                let s = try stats(admin)
                let rate = Double(done) / Date().timeIntervalSince(start)
                print("\(done) events (\(Int(rate))/s): rss \(mib(rss)), fds \(openFDs()), pushes read \(shared.pushes.load(ordering: .relaxed)), SETs \(shared.synced.load(ordering: .relaxed)), clients come and gone \(shared.churned.load(ordering: .relaxed)), \(describe(s))")
            }
        }
        let elapsed = Date().timeIntervalSince(start)

        // Back to baseline: the churn is deleted, and the provider reports every tombstone synced.
        shared.running.store(false, ordering: .relaxed)
        for t in threads { while !t.isFinished { usleep(1000) } }
        try inject(generator.deleteAll())
        var problems: [String] = []
        var last = 1
        let syncDeadline = Date().addingTimeInterval(settle)
        while last > 0 {
            last = try provider.withLock { try syncPending($0, root: root, limit: 5000) }
            if last > 0 && Date() > syncDeadline {
                problems.append("\(last) paths still pending \(Int(settle)) s after the churn was deleted")
                break
            }
        }
        // Hang-ups reach the daemon in their own time: wait (with a deadline) until it has seen them.
        var end = try stats(admin)
        var endFDs = openFDs()
        let settleBy = Date().addingTimeInterval(settle)
        while (end["clients"] != baseline["clients"] || endFDs != baseFDs) && Date() < settleBy {
            _ = try admin.nextPush(timeout: 0.05)
            end = try stats(admin)
            endFDs = openFDs()
        }
        print("after the churn is deleted and synced: fds \(endFDs), \(describe(end))")

        problems += shared.failures.withLock { $0 }
        if warm == 0 { problems.append("RSS could not be read (/proc/self/statm)") }
        let growth = warm > 0 ? Double(lateMax) / Double(warm) - 1 : 0
        print(String(format: "%d events in %.1f s (%.0f/s); RSS after warm-up %@, later at most %@ (%+.1f %%)",
                     done, elapsed, Double(done) / elapsed, mib(warm), mib(lateMax), growth * 100))
        if done < events { problems.append("stopped after \(done) of \(events) events") }
        if growth * 100 >= maxGrowth {
            problems.append(String(format: "RSS grew %.1f %% after warm-up (limit %.1f %%)", growth * 100, maxGrowth))
        }
        if endFDs != baseFDs { problems.append("open fds \(baseFDs) -> \(endFDs)") }
        for key in ["clients", "observations", "items", "tombstones", "roots"] where end[key] != baseline[key] {
            problems.append("STATS \(key) \(baseline[key] ?? -1) -> \(end[key] ?? -1)")
        }
        if shared.pushes.load(ordering: .relaxed) == 0 && observers > 0 { problems.append("no observer got a push") }
        if problems.isEmpty {
            print("PASS")
        } else {
            for p in problems { print("FAIL: \(p)") }
            throw ExitCode(1)
        }
    }
}

/// Takes the pushes that arrived while waiting for answers: a client keeps them until read,
/// and this process's RSS is the daemon's and the clients' together.
func drainPushes(_ c: Connection) throws {
    while try c.nextPush(timeout: 0) != nil {}
}

/// Reads everything pending under `root` (at most `limit`) and sets it synced at its gen.
func syncPending(_ c: Connection, root: String, limit: Int) throws -> Int {
    let pending = try c.request(Request(.changes, [.path(Array(root.utf8))]), timeout: 60).data.prefix(limit)
    var tags: [String] = []
    for item in pending {
        guard let item = Item(item), let gen = item.gen else { continue }
        tags.append(try c.send(SetRequest(.synced, item.path, gen: gen).request))
    }
    for t in tags {
        do { _ = try c.reply(to: t, timeout: 60) } catch ClientError.server(code: SetOutcome.notFoundCode, _) {}
    }
    return tags.count
}

/// A connection that says HELLO; with `patience`, waits that long for the daemon to listen.
func connect(_ socket: String, _ role: Role, _ name: String, patience: Double = 0) throws -> Connection {
    let deadline = Date().addingTimeInterval(patience)
    while true {
        do {
            return try Connection(socketPath: socket, role: role, name: name)
        } catch ClientError.noDaemon(let path) {
            if Date() > deadline { throw ClientError.noDaemon(path) }
            usleep(10_000)
        }
    }
}

func stats(_ c: Connection) throws -> [String: Int] {
    var out: [String: Int] = [:]
    for stat in try c.request(Request(.stats), timeout: 60).data.compactMap(Stat.init) {
        out[stat.key] = stat.value
    }
    return out
}

func describe(_ s: [String: Int]) -> String {
    ["items", "tombstones", "observations", "clients", "commits"].map { "\($0) \(s[$0] ?? -1)" }.joined(separator: ", ")
}

func residentBytes() -> Int {
    guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let parts = statm.split(separator: " ")
    return parts.count >= 2 ? (Int(parts[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
}

func openFDs() -> Int {
    ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.count ?? 1) - 1
}

func mib(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }

func makeTemporaryDirectory() throws -> String {
    var base = NSTemporaryDirectory()
    while base.hasSuffix("/") { base.removeLast() }
    var template = Array((base + "/syncbadge-soak.XXXXXX").utf8CString)
    guard let p = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
    return String(cString: p)
}


/// Synthetic events over a bounded namespace, so that a correct daemon's state stays bounded:
/// `root/d<i>/f<j>` files and one `root/d<i>/sub` directory per directory, each of which may
/// exist or not. Every event is one the watcher could report for that namespace.
struct EventGenerator {
    let root: [UInt8]
    let dirs: Int
    let files: Int
    var fileExists: [Bool]
    var subExists: [Bool]

    init(root: [UInt8], dirs: Int, files: Int) {
        self.root = root
        self.dirs = dirs
        self.files = files
        fileExists = Array(repeating: false, count: dirs * files)
        subExists = Array(repeating: false, count: dirs)
    }

    func dir(_ d: Int) -> [UInt8] { root + Array("/d\(d)".utf8) }
    func file(_ i: Int) -> [UInt8] { dir(i / files) + Array("/f\(i % files)".utf8) }
    func sub(_ d: Int) -> [UInt8] { dir(d) + Array("/sub".utf8) }

    mutating func next(_ rng: inout SplitMix64) -> WatcherMessage {
        let roll = rng.next() % 100
        let i = Int(rng.next() % UInt64(dirs * files))
        switch roll {
        case 0..<55:
            defer { fileExists[i] = true }
            return .changed(path: file(i), kind: .file, what: fileExists[i] ? .modify : .create)
        case 55..<70 where fileExists[i]:
            fileExists[i] = false
            return .deleted(path: file(i), wasDirectory: false)
        case 70..<85 where fileExists[i]:
            let j = Int(rng.next() % UInt64(dirs * files))
            if j == i { return .changed(path: file(i), kind: .file, what: .attrib) }
            fileExists[i] = false
            fileExists[j] = true
            return .moved(from: file(i), to: file(j), kind: .file)
        case 85..<95:
            let d = i % dirs
            if subExists[d] {
                subExists[d] = false
                return .deleted(path: sub(d), wasDirectory: true)
            }
            subExists[d] = true
            var scan = ScanTree()
            for k in 0..<3 { scan.append(parent: -1, name: Array("s\(k)".utf8), kind: .file) }
            return .directoryAppeared(path: sub(d), subtree: scan)
        default:
            defer { fileExists[i] = true }
            return .changed(path: file(i), kind: .file, what: fileExists[i] ? .attrib : .create)
        }
    }

    /// Deletes everything that exists, as the watcher would report `rm -r` of the churn.
    mutating func deleteAll() -> [WatcherMessage] {
        var out: [WatcherMessage] = []
        for i in fileExists.indices where fileExists[i] {
            out.append(.deleted(path: file(i), wasDirectory: false))
            fileExists[i] = false
        }
        for d in subExists.indices where subExists[d] {
            out.append(.deleted(path: sub(d), wasDirectory: true))
            subExists[d] = false
        }
        return out
    }
}

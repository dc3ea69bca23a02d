#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import Synchronization
import Testing
import SyncBadgeClient
import SyncBadgeCore
import SyncthingAdapter

/// What a library logged, so that a test can wait for a step the wire does not show (a refused
/// `CLAIM` is answered to the claimer alone).
final class LogRecorder: Sendable {
    let lines = Mutex<[String]>([])
    let changed = DispatchSemaphore(value: 0)

    struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            recorder.lines.withLock { $0.append(event.message.description) }
            recorder.changed.signal()
        }
    }

    var logger: Logger { Logger(label: "test") { _ in Handler(recorder: self) } }

    /// Waits until a line contains `needle`; false at the deadline.
    func wait(for needle: String, timeout: Double = 15) -> Bool {
        let deadline = DispatchTime.now() + timeout
        while true {
            if lines.withLock({ $0.contains { $0.contains(needle) } }) { return true }
            if changed.wait(timeout: deadline) == .timedOut { return lines.withLock { $0.contains { $0.contains(needle) } } }
        }
    }
}

/// The adapters' provider connection against the real daemon.
@Suite struct ProviderChannelTests {
    /// A claim the daemon refuses (`ERR busy`: another provider holds the root) is not held:
    /// when the root is free again (its `* ROOT` push), the channel claims it.
    @Test func aRefusedClaimIsTriedAgainWhenTheRootIsFree() throws {
        let daemon = try DaemonHarness()
        let root = try daemon.addRoot("shared", files: ["a.txt"])
        let other = try daemon.connect(role: .provider, name: "other")
        _ = try other.request(.claim(Array(root.utf8)), timeout: 15)
        let viewer = try daemon.connect()
        let log = LogRecorder()
        let channel = ProviderChannel(socketPath: daemon.socket, name: "probe", menus: [], toolbar: nil, logger: log.logger) { _ in }
        channel.follow(roots: [root])
        channel.start()
        defer { channel.stop() }
        #expect(log.wait(for: "cannot claim \(root): busy"), "\(log.lines.withLock { $0 })")
        _ = try other.request(.unclaim(Array(root.utf8)), timeout: 15)
        let deadline = Date().addingTimeInterval(15)
        while try viewer.request(.roots, timeout: 15).data.first(where: { $0.path == root })?.option("provider") != "probe" {
            guard deadline.timeIntervalSinceNow > 0 else {
                throw HarnessError(description: "the channel never claimed \(root) once it was free\n\(log.lines.withLock { $0 })\n\(daemon.log.suffix(3000))")
            }
            // Woken by the root's pushes; asked again at least every 100 ms.
            _ = try viewer.nextPush(timeout: min(0.1, max(0, deadline.timeIntervalSinceNow)))
        }
    }

    /// A daemon that refuses the adapter's toolbar (`ERR bad-path`: an image path that is not
    /// absolute) is asked again with the backoff, 50 ms doubling, and the warning says it
    /// refused. Each try is a connection; the backoff allows at most 6 in 2 s (50 + 100 + ...
    /// + 1,600 ms), where a reset on every connection made one every 50 ms, about 40.
    @Test func aRefusedDefinitionBacksOff() throws {
        let daemon = try DaemonHarness()
        let root = try daemon.addRoot("r", files: ["a.txt"])
        let log = LogRecorder()
        let toolbar = ToolbarItem(name: "Pause", tooltip: "Pause it", image: Array("relative.svg".utf8))
        let channel = ProviderChannel(socketPath: daemon.socket, name: "probe", menus: [], toolbar: toolbar, logger: log.logger) { _ in }
        channel.follow(roots: [root])
        channel.start()
        defer { channel.stop() }
        #expect(log.wait(for: "refused the adapter's menus or toolbar: bad-path"), "\(log.lines.withLock { $0 })")
        let start = log.lines.withLock { $0.filter { $0.contains("provider connection to syncbadged open") }.count }
        // Waits out the span on the log's own signal: returns at the deadline, or early if the
        // count already shows the loop.
        let deadline = DispatchTime.now() + 2
        var opened = start
        while log.changed.wait(timeout: deadline) == .success {
            opened = log.lines.withLock { $0.filter { $0.contains("provider connection to syncbadged open") }.count }
            if opened - start > 6 { break }
        }
        opened = log.lines.withLock { $0.filter { $0.contains("provider connection to syncbadged open") }.count }
        #expect(opened - start <= 6, "\(opened - start) connections in 2 s")
    }
}

import Foundation
import Testing
@testable import SyncBadgeWatcher

/// docs/ARCHITECTURE.md's numbers about the watcher, held against the code: the recovery
/// timers' delays and the rename pairing's grace it quotes. ArchitectureDocTests
/// (SyncBadgeCoreTests) checks the core's, and that no number beside a name goes unchecked;
/// DocNumbers.swift is shared with it through a link.
/// Pure: no watcher is started.
@Suite struct ArchitectureWatcherNumbersTests {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func milliseconds(_ d: Duration) -> Int {
        Int(d.components.seconds) * 1000 + Int(d.components.attoseconds / 1_000_000_000_000_000)
    }

    static var expected: [DocNumbers.Expected] {
        [
            .init("RecoveryTimers.firstReturnDelay", milliseconds(RecoveryTimers.firstReturnDelay), .milliseconds),
            .init("RecoveryTimers.maxReturnDelay", milliseconds(RecoveryTimers.maxReturnDelay), .milliseconds),
            .init("RecoveryTimers.firstDegradedDelay", milliseconds(RecoveryTimers.firstDegradedDelay), .milliseconds),
            .init("RecoveryTimers.maxDegradedDelay", milliseconds(RecoveryTimers.maxDegradedDelay), .milliseconds),
            .init("RecoveryTimers.overflowStormWindow", milliseconds(RecoveryTimers.overflowStormWindow), .milliseconds),
            .init("RecoveryTimers.maxOverflowDelay", milliseconds(RecoveryTimers.maxOverflowDelay), .milliseconds),
            .init("MovePairing.arrivalGrace", milliseconds(MovePairing.arrivalGrace), .milliseconds),
        ]
    }

    @Test func theWatcherNumbersItQuotesAreTheCodes() throws {
        let doc = try String(contentsOfFile: Self.repository.appendingPathComponent("docs/ARCHITECTURE.md").path, encoding: .utf8)
        #expect(Set(Self.expected.map(\.name)) == DocNumbers.checkedInWatcher)
        for problem in DocNumbers.problems(in: doc, expected: Self.expected) {
            Issue.record(Comment(rawValue: "docs/ARCHITECTURE.md: \(problem)"))
        }
    }

    /// The check can fail: the backoff as an older doc gave it is caught.
    @Test func anOlderDocIsCaught() {
        let older = """
            checks it with backoff, from `RecoveryTimers.firstReturnDelay` (1 s) doubling to
            `RecoveryTimers.maxReturnDelay` (60 s); rescans after `RecoveryTimers.firstDegradedDelay` (500 ms)
            """
        let problems = DocNumbers.problems(in: older, expected: Array(Self.expected.prefix(3)))
        #expect(problems == [
            "`RecoveryTimers.maxReturnDelay` is quoted as 60000 milliseconds; the code says 30000 milliseconds",
            "`RecoveryTimers.firstDegradedDelay` is quoted as 500 milliseconds; the code says 2000 milliseconds",
        ])
    }
}

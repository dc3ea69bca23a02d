import Dispatch
import Foundation
import NIOCore
import Testing
import SyncBadgeCore
@testable import SyncBadgeServer

/// docs/ARCHITECTURE.md's numbers about the server, held against the code: the constants it
/// quotes, and how many stored properties the types it counts have (what `Mirror` lists for an
/// instance). ArchitectureDocTests (SyncBadgeCoreTests) checks the core's, and that no number
/// beside a name goes unchecked; DocNumbers.swift is shared with it through a link.
@Suite struct ArchitectureNumbersTests {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func milliseconds(_ t: TimeAmount) -> Int { Int(t.nanoseconds / 1_000_000) }

    static func milliseconds(_ t: DispatchTimeInterval) -> Int {
        switch t {
        case .seconds(let n): n * 1000
        case .milliseconds(let n): n
        case .microseconds(let n): n / 1000
        case .nanoseconds(let n): n / 1_000_000
        default: -1
        }
    }

    @Test func theServerNumbersItQuotesAreTheCodes() throws {
        let doc = try String(contentsOfFile: Self.repository.appendingPathComponent("docs/ARCHITECTURE.md").path, encoding: .utf8)
        let harness = try HubHarness()
        let session = Session(hub: harness.hub, peerPID: 1)
        let expected: [DocNumbers.Expected] = [
            .init("EventInbox.slice", EventInbox.slice, .count),
            .init("Outbox.highWater", Outbox.highWater, .bytes),
            .init("LineFramer.maxLineLength", LineFramer.maxLineLength, .bytes),
            .init("SetPipeline.firstRetry", Self.milliseconds(SetPipeline<Int, Int>.firstRetry), .milliseconds),
            .init("SetPipeline.longestRetry", Self.milliseconds(SetPipeline<Int, Int>.longestRetry), .milliseconds),
            .init("ActionReplies.defaultTimeout", Self.milliseconds(ActionReplies.defaultTimeout), .milliseconds),
            .init("SyncingReleases.defaultHoldMs", Int(SyncingReleases.defaultHoldMs), .milliseconds),
            .init("Daemon.finalCommitTimeout", Self.milliseconds(Daemon.finalCommitTimeout), .milliseconds),
            .init("Hub", Mirror(reflecting: harness.hub).children.count, .storedProperties),
            .init("Clients", Mirror(reflecting: Clients()).children.count, .storedProperties),
            .init("Clients.Client", Mirror(reflecting: Clients.Client(name: "")).children.count, .storedProperties),
            .init("Outbox", Mirror(reflecting: Outbox()).children.count, .storedProperties),
            .init("Session", Mirror(reflecting: session).children.count, .storedProperties),
        ]
        #expect(Set(expected.map(\.name)) == DocNumbers.checkedInServer)
        for problem in DocNumbers.problems(in: doc, expected: expected) {
            Issue.record(Comment(rawValue: "docs/ARCHITECTURE.md: \(problem)"))
        }
    }

    /// The check can fail: a doc that still says what an older server did is caught.
    @Test func anOlderDocIsCaught() throws {
        let older = """
            `EventInbox.slice` (1,024) messages; `Outbox.highWater` (4 MiB); the deadline,
            `ActionReplies.defaultTimeout` (10 s) away.
            """
        let problems = DocNumbers.problems(in: older, expected: [
            .init("EventInbox.slice", EventInbox.slice, .count),
            .init("Outbox.highWater", Outbox.highWater, .bytes),
            .init("ActionReplies.defaultTimeout", Self.milliseconds(ActionReplies.defaultTimeout), .milliseconds),
            .init("SetPipeline.firstRetry", Self.milliseconds(SetPipeline<Int, Int>.firstRetry), .milliseconds),
        ])
        #expect(problems == [
            "`EventInbox.slice` is quoted as 1024 count; the code says 2048 count",
            "`Outbox.highWater` is quoted as 4194304 bytes; the code says 1048576 bytes",
            "`SetPipeline.firstRetry` is quoted with no number (expected 250 milliseconds)",
        ])
    }
}

import Foundation
import Testing
@testable import GitAdapter

/// A push, pull or fetch run for real: its end is read once, and a reaped operation stays ended.
@Suite struct GitOperationTests {
    @Test func aReapedOperationIsEndedAndReapedOnce() throws {
        let runner = ProcessGitRunner(environment: ProcessInfo.processInfo.environment)
        let op = GitOperation(kind: "fetch", running: try runner.start(["--version"], in: "/"), now: .now)
        var pfd = pollfd(fd: op.stderr, events: Int16(POLLIN), revents: 0)
        let deadline = ContinuousClock.now + .seconds(10)
        while op.read() == .more {
            try #require(ContinuousClock.now < deadline, "git --version never ended")
            _ = poll(&pfd, 1, 100)
        }
        #expect(op.status == nil)
        let status = op.reap()
        #expect(status == 0)
        #expect(op.status == 0)
        // Its descriptor is closed: reading again, or reaping again (a tree dropped from the
        // list in the same wake-up orphans it), touches neither the descriptor nor the pid.
        #expect(op.read() == .ended)
        #expect(op.reap() == 0)
    }
}

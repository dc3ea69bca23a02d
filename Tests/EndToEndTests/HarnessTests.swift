#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// The test harness's own guards, which the other suites rely on to fail rather than hang.
@Suite struct HarnessTests {
    /// A child that outlives its time is killed.
    @Test func theWatchdogKillsAHungChild() throws {
        let hung = Process()
        hung.executableURL = URL(fileURLWithPath: "/bin/sleep")
        hung.arguments = ["600"]
        try hung.run()
        let started = Date()
        let watchdog = Watchdog(hung, seconds: 0.5)
        hung.waitUntilExit()
        watchdog.exited()
        #expect(hung.terminationReason == .uncaughtSignal && hung.terminationStatus == SIGKILL)
        #expect(Date().timeIntervalSince(started) < 60)
    }

    /// A child that ignores SIGTERM fails its test and is killed, rather than hanging the run.
    @Test func aChildThatIgnoresSIGTERMIsKilled() throws {
        // An ignored signal stays ignored across exec: one process, deaf to SIGTERM.
        let deaf = try ChildProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", "trap '' TERM; echo ready >&2; exec sleep 600"])
        #expect(deaf.output.wait(for: "ready"))
        let started = Date()
        withKnownIssue { deaf.terminate(grace: 0.5) }
        deaf.process.waitUntilExit()
        #expect(deaf.process.terminationReason == .uncaughtSignal && deaf.process.terminationStatus == SIGKILL)
        #expect(Date().timeIntervalSince(started) < 60)
    }
}

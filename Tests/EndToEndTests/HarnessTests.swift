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
}

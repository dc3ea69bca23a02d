#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// The test harness's own guards, which the other suites rely on to fail rather than hang.
@Suite struct HarnessTests {
    /// A child that outlives its time is killed, and one that exits in time is left alone.
    @Test func theWatchdogKillsAHungChildOnly() throws {
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

        let quick = Process()
        quick.executableURL = URL(fileURLWithPath: "/bin/true")
        try quick.run()
        let spared = Watchdog(quick, seconds: 0.2)
        quick.waitUntilExit()
        spared.exited()
        #expect(quick.terminationReason == .exit && quick.terminationStatus == 0)
    }
}

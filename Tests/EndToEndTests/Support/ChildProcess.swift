#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// A program started in the background for a test: the daemon, an adapter, a CLI command that
/// runs until stopped. One of its output streams is collected for the test to wait on (the
/// other goes to /dev/null for standard output, or stays the test's for standard error).
/// Killed with SIGKILL when dropped, so that no test leaves a child behind.
final class ChildProcess {
    let process = Process()
    let output: OutputWatcher

    /// Which stream `output` collects.
    enum Stream { case standardError, standardOutput }

    init(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil,
         watching stream: Stream = .standardError, input: Pipe? = nil) throws {
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let input { process.standardInput = input }
        let pipe = Pipe()
        switch stream {
        case .standardError:
            process.standardError = pipe
            process.standardOutput = FileHandle.nullDevice
        case .standardOutput:
            process.standardOutput = pipe
        }
        try process.run()
        // Only the child writes to the pipe, so its exit is our end of file.
        try? pipe.fileHandleForWriting.close()
        output = OutputWatcher(pipe.fileHandleForReading)
    }

    /// An adapter of ours (`syncbadge-syncthing`, `syncbadge-git`) on the test's daemon, logging
    /// everything it does to `output`.
    static func adapter(_ executable: URL, socket: String, arguments: [String],
                        environment: [String: String]? = nil) throws -> ChildProcess {
        try ChildProcess(executable, ["--socket", socket, "--log-level", "debug"] + arguments, environment: environment)
    }

    /// What the watched stream carried so far.
    var log: String { output.text.withLock { $0 } }

    /// Sends `signal` if it still runs, and waits for the exit status.
    @discardableResult
    func stop(signal: Int32 = SIGTERM) -> Int32 {
        if process.isRunning { kill(process.processIdentifier, signal) }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// SIGTERM, and SIGKILL if it has not exited `grace` seconds later, which fails the test:
    /// a child that ignores SIGTERM is a bug, and must not hang the run. Waits on the exit
    /// itself (a pidfd), never longer than twice `grace`.
    func terminate(grace: Double = 10) {
        guard process.isRunning else { return }
        let pid = process.processIdentifier
        kill(pid, SIGTERM)
        guard !waitForExits(of: [pid], untilAtMost: 0, timeout: grace).isEmpty else { return }
        Issue.record("\(process.executableURL?.lastPathComponent ?? "a child") ignored SIGTERM for \(grace) s")
        kill(pid, SIGKILL)
        _ = waitForExits(of: [pid], untilAtMost: 0, timeout: grace)
    }

    deinit { stop(signal: SIGKILL) }
}

/// Runs a program to its end: its exit status, standard output and standard error. A child
/// still running `seconds` after its start is killed, so that it fails its test (its status
/// then says SIGKILL) instead of hanging the run.
func runToEnd(_ executable: URL, _ args: [String], environment: [String: String]? = nil,
              in directory: String? = nil, seconds: Double) throws -> (status: Int32, out: String, err: String) {
    let p = Process()
    p.executableURL = executable
    p.arguments = args
    if let environment { p.environment = environment }
    if let directory { p.currentDirectoryURL = URL(fileURLWithPath: directory) }
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    try p.run()
    let watchdog = Watchdog(p, seconds: seconds)
    // Both pipes at once: a child that fills one while the test reads the other to its end
    // would wait forever.
    let errReader = PipeReader(err.fileHandleForReading)
    let o = out.fileHandleForReading.readDataToEndOfFile()
    let e = errReader.wait()
    p.waitUntilExit()
    watchdog.exited()
    return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
}

#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// Runs a program and waits for it, with posix_spawn and waitpid.
///
/// Not with Foundation's `Process`: it sometimes misses the exit of a child as short-lived as
/// `tmux new-session -d`, and it learns of a child's exit from a descriptor the child inherits,
/// so a child that forks a server (tmux) would keep `waitUntilExit` waiting for the server's
/// whole life. Here the child gets standard input from /dev/null, its standard output written
/// to `output` (or /dev/null), its errors to /dev/null, and no other descriptor: a pipe would
/// be inherited by a server the command starts, and could leak into another test's child
/// meanwhile. It also gets an empty signal mask and default dispositions: test threads block
/// most signals, and a shell or ranger started that way would not even die of a SIGHUP.
/// Returns the exit status (128 + N for a signal) and what it wrote.
@discardableResult
func spawn(_ program: String, _ args: [String], environment: [String: String], output: String? = nil) throws -> (status: Int32, output: String) {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, output ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    guard addCloseFrom(&actions, 3) == 0 else { throw HarnessError(description: "addclosefrom failed") }
    var attr = posix_spawnattr_t()
    posix_spawnattr_init(&attr)
    defer { posix_spawnattr_destroy(&attr) }
    var none = sigset_t(), all = sigset_t()
    sigemptyset(&none)
    sigfillset(&all)
    sigdelset(&all, SIGKILL)
    sigdelset(&all, SIGSTOP)
    posix_spawnattr_setsigmask(&attr, &none)
    posix_spawnattr_setsigdefault(&attr, &all)
    posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    let argv = ([program] + args).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { (argv + envp).forEach { free($0) } }
    var pid: pid_t = 0
    let rc = posix_spawnp(&pid, program, &actions, &attr, argv, envp)
    guard rc == 0 else { throw HarnessError(description: "cannot run \(program): \(String(cString: strerror(rc)))") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 {
        guard errno == EINTR else { throw HarnessError(description: "waitpid failed: \(errno)") }
    }
    // WIFEXITED / WEXITSTATUS, else the signal.
    let exit = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    let text = output.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) } ?? ""
    return (exit, text)
}

/// glibc's posix_spawn_file_actions_addclosefrom_np (2.34), which Swift's Glibc module hides.
let addCloseFrom: @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32 = {
    guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else {
        fatalError("glibc 2.34 or later needed: posix_spawn_file_actions_addclosefrom_np")
    }
    return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
}()

/// glibc's pidfd_open (2.36): a descriptor that polls readable once the process has exited,
/// for any process, not only our children.
let pidfdOpen: @convention(c) (pid_t, UInt32) -> Int32 = {
    guard let symbol = dlsym(nil, "pidfd_open") else { fatalError("glibc 2.36 or later needed: pidfd_open") }
    return unsafeBitCast(symbol, to: (@convention(c) (pid_t, UInt32) -> Int32).self)
}()

/// Waits until at most `alive` of these processes still run, or the deadline passes; returns
/// the ones still running. Woken by their exits, not by polling.
func waitForExits(of pids: [pid_t], untilAtMost alive: Int, timeout: Double) -> [pid_t] {
    var watched = pids.compactMap { pid -> (pid_t, Int32)? in
        let fd = pidfdOpen(pid, 0)
        return fd >= 0 ? (pid, fd) : nil  // already gone
    }
    defer { watched.forEach { close($0.1) } }
    let deadline = Date().addingTimeInterval(timeout)
    while watched.count > alive {
        let left = deadline.timeIntervalSinceNow
        guard left > 0 else { break }
        var fds = watched.map { pollfd(fd: $0.1, events: Int16(POLLIN), revents: 0) }
        let n = poll(&fds, nfds_t(fds.count), Int32(left * 1000) + 1)
        if n < 0 && errno != EINTR { break }
        let exited = Set(fds.filter { $0.revents != 0 }.map(\.fd))
        for (_, fd) in watched where exited.contains(fd) { close(fd) }
        watched.removeAll { exited.contains($0.1) }
    }
    return watched.map(\.0)
}

/// The absolute path of an executable on the PATH, or nil.
func installed(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for dir in path.split(separator: ":") {
        let candidate = "\(dir)/\(name)"
        if access(candidate, X_OK) == 0 { return candidate }
    }
    return nil
}

/// Whether every tool is an executable on the PATH (suites skip themselves otherwise).
func toolsOnPath(_ tools: [String]) -> Bool {
    tools.allSatisfy { installed($0) != nil }
}

/// Kills a child that is still running `seconds` after it started, so that a hung child fails
/// its test (its status then says SIGKILL) instead of hanging the whole run. Call `exited()`
/// once the child has exited. The pid could only be another process's if the child exited and
/// its pid was reused in the moment before `exited()`, at the very end of the allowed time.
final class Watchdog: Sendable {
    private let done = Mutex(false)

    init(_ p: Process, seconds: Double) {
        let pid = p.processIdentifier
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in
            done.withLock { finished in
                if !finished { kill(pid, SIGKILL) }
            }
        }
    }

    func exited() {
        done.withLock { $0 = true }
    }
}

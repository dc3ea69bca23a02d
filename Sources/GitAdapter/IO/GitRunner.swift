#if canImport(Glibc)
import Glibc
#endif

/// What a finished git command left.
public struct GitOutput: Sendable {
    public var status: Int32
    public var stdout: [UInt8]
    public var stderr: [UInt8]

    public init(status: Int32, stdout: [UInt8], stderr: [UInt8] = []) {
        self.status = status; self.stdout = stdout; self.stderr = stderr
    }

    public var ok: Bool { status == 0 }
    /// git's complaint, for an `error` badge: its stderr, trimmed, or the exit status.
    public var message: String {
        let text = String(decoding: stderr, as: UTF8.self).split(separator: "\n").map { $0.trimmingSpaces }.filter { !$0.isEmpty }
        return text.isEmpty ? "git exited with status \(status)" : text.suffix(4).joined(separator: "\n")
    }
}

/// The git command line, at the edge: the adapter's decisions are tested with recorded output.
public protocol GitRunner: Sendable {
    /// Runs `git -C <directory> <arguments> [-- <paths>]` to its end. Paths are bytes: any
    /// file name, valid UTF-8 or not.
    func run(_ arguments: [String], paths: [[UInt8]], in directory: String) -> GitOutput
    /// Starts `git -C <directory> <arguments>` and returns at once: its pid and a descriptor
    /// that carries its stderr (its stdout goes to /dev/null). For push, pull and fetch.
    func start(_ arguments: [String], in directory: String) throws -> RunningGit
}

extension GitRunner {
    public func run(_ arguments: [String], in directory: String) -> GitOutput {
        run(arguments, paths: [], in: directory)
    }
}

public struct RunningGit: Sendable {
    public var pid: pid_t
    /// Non-blocking; the caller reads it until its end and closes it.
    public var stderr: Int32
}

public struct SpawnError: Error, CustomStringConvertible {
    public var description: String
}

/// The real `git`, found on the PATH, with the user's own configuration and credential
/// helpers, never a prompt: no terminal (a session of its own, stdin from /dev/null) and
/// `GIT_TERMINAL_PROMPT=0`. Reads use `GIT_OPTIONAL_LOCKS=0`, so that the adapter's own
/// `git status` never rewrites the index, which it watches.
public struct ProcessGitRunner: GitRunner {
    public let git: String
    let environment: [String]

    public init(git: String = "git", environment: [String: String]) {
        self.git = git
        var env = environment
        env["GIT_TERMINAL_PROMPT"] = "0"
        env["GIT_OPTIONAL_LOCKS"] = "0"
        // A merge or a rebase started by "Pull" must not wait for an editor nobody sees.
        env["GIT_EDITOR"] = "true"
        env["GIT_MERGE_AUTOEDIT"] = "no"
        self.environment = env.map { "\($0.key)=\($0.value)" }
    }

    public func run(_ arguments: [String], paths: [[UInt8]], in directory: String) -> GitOutput {
        var out: [Int32] = [0, 0], err: [Int32] = [0, 0]
        guard Self.pipe(&out) else { return GitOutput(status: -1, stdout: [], stderr: Array("pipe: \(errno)".utf8)) }
        guard Self.pipe(&err) else {
            close(out[0]); close(out[1])
            return GitOutput(status: -1, stdout: [], stderr: Array("pipe: \(errno)".utf8))
        }
        let pid: pid_t
        do {
            let argv = (["-C", directory] + arguments).map { Array($0.utf8) } + (paths.isEmpty ? [] : [Array("--".utf8)] + paths)
            pid = try spawn(argv, stdout: out[1], stderr: err[1])
        } catch {
            for fd in out + err { close(fd) }
            return GitOutput(status: 127, stdout: [], stderr: Array("\(error)".utf8))
        }
        close(out[1])
        close(err[1])
        // Both pipes at once: git may fill one while we wait on the other.
        var stdout: [UInt8] = [], stderr: [UInt8] = []
        var fds = [pollfd(fd: out[0], events: Int16(POLLIN), revents: 0), pollfd(fd: err[0], events: Int16(POLLIN), revents: 0)]
        var open = 2
        var buf = [UInt8](repeating: 0, count: 65536)
        while open > 0 {
            let rc = Glibc.poll(&fds, 2, -1)
            if rc < 0 { if errno == EINTR { continue } else { break } }
            for i in 0..<2 where fds[i].fd >= 0 && fds[i].revents != 0 {
                let n = buf.withUnsafeMutableBytes { read(fds[i].fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 {
                    close(fds[i].fd)
                    fds[i].fd = -1
                    open -= 1
                } else if i == 0 {
                    stdout.append(contentsOf: buf[0..<n])
                } else {
                    stderr.append(contentsOf: buf[0..<n])
                }
            }
        }
        for f in fds where f.fd >= 0 { close(f.fd) }
        return GitOutput(status: Self.wait(pid), stdout: stdout, stderr: stderr)
    }

    public func start(_ arguments: [String], in directory: String) throws -> RunningGit {
        var err: [Int32] = [0, 0]
        guard Self.pipe(&err) else { throw SpawnError(description: "pipe: \(String(cString: strerror(errno)))") }
        let devnull = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { if devnull >= 0 { close(devnull) } }
        let pid: pid_t
        do {
            pid = try spawn((["-C", directory] + arguments).map { Array($0.utf8) }, stdout: devnull, stderr: err[1])
        } catch {
            close(err[0]); close(err[1])
            throw error
        }
        close(err[1])
        _ = fcntl(err[0], F_SETFL, fcntl(err[0], F_GETFL) | O_NONBLOCK)
        return RunningGit(pid: pid, stderr: err[0])
    }

    /// The exit status (128 + N for a signal), waiting for it.
    public static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return -1 }
        }
        return (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }

    /// The exit status if the child has exited, else nil.
    public static func exited(_ pid: pid_t) -> Int32? {
        var status: Int32 = 0
        let rc = waitpid(pid, &status, WNOHANG)
        guard rc == pid else { return rc < 0 ? -1 : nil }
        return (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }

    /// glibc's POSIX_SPAWN_SETSID (2.26), which Swift's Glibc module does not import.
    static let setsid: Int32 = 0x80

    /// A pipe whose ends a child does not inherit (only what `dup2` gives it). The adapter
    /// spawns from one thread, so no other spawn can slip between `pipe` and `fcntl`.
    static func pipe(_ fds: inout [Int32]) -> Bool {
        guard Glibc.pipe(&fds) == 0 else { return false }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return true
    }

    func spawn(_ arguments: [[UInt8]], stdout: Int32, stderr: Int32) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr, 2)
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        // No controlling terminal, so nothing (ssh included) can ask the user anything; and
        // default signal handling, whatever this process blocks.
        var none = sigset_t(), defaults = sigset_t()
        sigemptyset(&none)
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        sigaddset(&defaults, SIGINT)
        sigaddset(&defaults, SIGTERM)
        posix_spawnattr_setsigmask(&attr, &none)
        posix_spawnattr_setsigdefault(&attr, &defaults)
        posix_spawnattr_setflags(&attr, Int16(Self.setsid | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([Array(git.utf8)] + arguments).map { bytes in
            (bytes + [0]).withUnsafeBufferPointer { buf in buf.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buf.count) { strdup($0) } }
        } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, git, &actions, &attr, argv, envp)
        guard rc == 0 else { throw SpawnError(description: "cannot run \(git): \(String(cString: strerror(rc)))") }
        return pid
    }
}

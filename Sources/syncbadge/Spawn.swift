#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import SyncBadgeClient
import SyncBadgeCore
import SyncBadgeProtocol

/// Starting the daemon on demand, as watchman does: when no socket answers, start
/// `syncbadged` detached (its own session, logging to the state directory) and wait for it.
/// Two clients racing end with one daemon: the daemon holds a lock next to its socket, so the
/// second one exits and both clients reach the first.
enum Spawner {
    static func daemonExecutable() -> String {
        let mine = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let sibling = mine.appendingPathComponent("syncbadged").path
        return FileManager.default.isExecutableFile(atPath: sibling) ? sibling : "syncbadged"
    }

    /// Starts the daemon for `socket` and waits up to `timeout` seconds for it to answer.
    static func startAndConnect(socket: String, role: Role, name: String, timeout: Double = 10) throws -> Connection {
        let env = ProcessInfo.processInfo.environment
        let stateDir = SocketPath.stateDirectory(explicit: nil, environment: env)
        try? FileManager.default.createDirectory(atPath: stateDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let log = stateDir + "/syncbadged.log"
        try spawnDetached(daemonExecutable(), ["--socket", socket], log: log)
        let deadline = Date().addingTimeInterval(timeout)
        var delay = 0.005
        while true {
            do {
                return try Connection(socketPath: socket, role: role, name: name)
            } catch ClientError.noDaemon {
                guard Date() < deadline else {
                    CLI.fail("started syncbadged, but it did not answer on \(socket) within \(Int(timeout)) s; see \(log)", code: CLI.noDaemonExit)
                }
                // The daemon is starting: it binds its socket within milliseconds, normally.
                usleep(useconds_t(delay * 1_000_000))
                delay = min(delay * 2, 0.2)
            }
        }
    }

    static func spawnDetached(_ path: String, _ args: [String], log: String) throws {
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        // POSIX_SPAWN_SETSID (glibc, hidden behind _GNU_SOURCE): the daemon leaves our session and terminal.
        posix_spawnattr_setflags(&attr, 0x80)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of ours may stay open in the daemon: a parent waiting for our pipes to
        // close (a shell's `$(…)`, a test) would wait for the daemon's whole life.
        // (posix_spawn_file_actions_addclosefrom_np is hidden from Swift, so close each one.)
        for fd in openDescriptors() where fd > 2 {
            posix_spawn_file_actions_addclose(&actions, fd)
        }
        let argv = ([path] + args).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, path, &actions, &attr, argv, environ)
        guard rc == 0 else { CLI.fail("cannot start \(path): \(String(cString: strerror(rc)))", code: CLI.noDaemonExit) }
    }

    /// This process's open descriptors, from /proc/self/fd.
    static func openDescriptors() -> [Int32] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        // The listing's own descriptor is closed again by the time we spawn: keep what is open.
        return names.compactMap(Int32.init).filter { fcntl($0, F_GETFD) != -1 }
    }
}

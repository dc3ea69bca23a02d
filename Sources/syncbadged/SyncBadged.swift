#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FoundationEssentials
import Logging
import SyncBadgeCore
import SyncBadgeLogging
import SyncBadgeServer
import SyncBadgeWatcher

@main
struct SyncBadged: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncbadged",
        abstract: "The SyncBadge daemon: sync status badges for every file in registered folders.",
        discussion: """
            Runs in the foreground and logs to stderr. Clients (the `syncbadge` CLI, shell prompts, \
            file-browser plugins and sync engines) talk to it over a Unix socket with the line \
            protocol of docs/PROTOCOL.md. SIGTERM or SIGINT says goodbye to every client and exits 0.

            Socket, first that applies: --socket, $SYNCBADGE_SOCKET, \
            $XDG_RUNTIME_DIR/syncbadge/daemon.sock, /tmp/syncbadge-$UID/daemon.sock. \
            Started by systemd with LISTEN_FDS=1, it serves the inherited socket instead.
            """,
        version: SyncBadgeVersion.string)

    @Option(help: "The Unix socket to listen on.")
    var socket: String?

    @Option(name: .customLong("state-dir"), help: "Where roots and states are stored (default: $XDG_STATE_HOME/syncbadge or ~/.local/state/syncbadge).")
    var stateDir: String?

    @Option(help: "A badge set directory holding badges.tsv (default: the installed set).")
    var badges: String?

    @OptionGroup var logging: LoggingOptions

    // The contract's times, for tests that cannot wait for them (PROTOCOL.md 1.2).
    @Option(name: .customLong("answer-timeout"), help: ArgumentHelp("Seconds an ACTION reply=1 waits for its answer.", visibility: .hidden))
    var answerTimeout: Double = 10

    @Option(name: .customLong("restart-hold"), help: ArgumentHelp("Seconds a stored syncing is held after a start.", visibility: .hidden))
    var restartHold: Double = 30

    func validate() throws {
        for (name, value) in [("--answer-timeout", answerTimeout), ("--restart-hold", restartHold)] where !(value > 0 && value <= 86_400) {
            throw ValidationError("\(name) must be a number of seconds from 0 to 86400")
        }
    }

    func run() throws {
        Daemon.tuneAllocator()
        // A parent may have blocked other signals (test runners do). SIGTERM and SIGINT are
        // blocked in every thread, inherited by each one the daemon starts, and taken by
        // `sigwait` on this one: stopping needs no signal handler and no timer.
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGTERM)
        sigaddset(&stopSignals, SIGINT)
        pthread_sigmask(SIG_SETMASK, &stopSignals, nil)
        let logger = logging.bootstrap(label: "syncbadged")
        let env = ProcessInfo.processInfo.environment
        var config = DaemonConfig(
            socketPath: SocketPath.resolve(explicit: socket, environment: env, uid: getuid()),
            stateDirectory: SocketPath.stateDirectory(explicit: stateDir, environment: env),
            badgesDirectory: badges ?? Self.defaultBadges(env),
            inheritedSocket: Self.inheritedSocket(env))
        config.answerTimeoutMs = Int64(answerTimeout * 1000)
        config.restartHoldMs = Int64(restartHold * 1000)
        let daemon: Daemon
        do {
            daemon = try Daemon(config: config, logger: logger, startWatcher: Watcher.init)
        } catch {
            let text = Array("syncbadged: \(error)\n".utf8)
            _ = text.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
            throw ExitCode(1)
        }
        try daemon.run {
            var which: Int32 = 0
            sigwait(&stopSignals, &which)
            logger.info("stop signal", metadata: ["signal": "\(which == SIGTERM ? "TERM" : "INT")"])
        }
    }

    /// systemd socket activation: `LISTEN_FDS=1` (for this process) means fd 3 is our socket.
    static func inheritedSocket(_ env: [String: String]) -> Int32? {
        guard env["LISTEN_FDS"] == "1" else { return nil }
        if let pid = env["LISTEN_PID"], pid != String(getpid()) { return nil }
        return 3
    }

    /// `$SYNCBADGE_BADGES`, the installed set next to the binary, or the source tree's.
    static func defaultBadges(_ env: [String: String]) -> String {
        if let dir = env["SYNCBADGE_BADGES"], !dir.isEmpty { return dir }
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let installed = exe.deletingLastPathComponent().appendingPathComponent("share/syncbadge/badges").path
        if FileManager.default.fileExists(atPath: installed + "/badges.tsv") { return installed }
        // A development build: the repository's Badges/ (this file is Sources/syncbadged/…).
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Badges").path
    }
}

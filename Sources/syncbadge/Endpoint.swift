#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FoundationEssentials
import SyncBadgeClient
import SyncBadgeCore
import SyncBadgeProtocol

/// Options every subcommand takes.
struct ConnectionOptions: ParsableArguments {
    @Option(help: "The daemon's socket (default: $SYNCBADGE_SOCKET, then $XDG_RUNTIME_DIR/syncbadge/daemon.sock, then /tmp/syncbadge-$UID/daemon.sock).")
    var socket: String?

    @Flag(name: .customLong("no-spawn"), help: "Do not start the daemon when none answers.")
    var noSpawn = false

    var endpoint: Endpoint { Endpoint(socket: socket, noSpawn: noSpawn) }

    func connect(role: Role = .viewer, name: String = "syncbadge-cli", hello: Bool = true) throws -> Connection {
        try endpoint.connect(role: role, name: name, hello: hello)
    }

    func reconnect(role: Role = .viewer, name: String = "syncbadge-cli") -> Connection {
        endpoint.reconnect(role: role, name: name)
    }

    func reconnect(role: Role = .viewer, name: String, until deadline: Double?) -> Connection? {
        guard let deadline else { return endpoint.reconnect(role: role, name: name) }
        return endpoint.reconnect(role: role, name: name, until: deadline)
    }
}

/// Where the daemon is and whether to start it: plain values, so that the fast path of
/// `status` (main.swift) can connect without ArgumentParser.
struct Endpoint {
    var socket: String? = nil
    var noSpawn = false

    var socketPath: String {
        SocketPath.resolve(explicit: socket, variable: CLI.environment, uid: getuid())
    }

    /// Connects and says `HELLO`, starting the daemon if none answers (unless --no-spawn);
    /// exits 69 with a hint when there is still none.
    func connect(role: Role = .viewer, name: String = "syncbadge-cli", hello: Bool = true) throws -> Connection {
        do {
            return hello ? try Connection(socketPath: socketPath, role: role, name: name) : try Connection(socketPath: socketPath)
        } catch ClientError.noDaemon(let path) {
            if noSpawn {
                CLI.fail("no daemon answers on \(path); start one with `syncbadged &` (or `syncbadged --socket \(path)`)", code: CLI.noDaemonExit)
            }
            let c = try Spawner.startAndConnect(socket: path, role: role, name: name)
            if hello { return c }
            // The bridge's client says its own HELLO: reconnect without one.
            return try Connection(socketPath: path)
        }
    }

    /// After the daemon went away (a restart, an upgrade): waits until it answers again,
    /// retrying with backoff. It does not start one: a daemon stopped on purpose stays stopped
    /// until its manager (or the user) starts it.
    func reconnect(role: Role = .viewer, name: String = "syncbadge-cli") -> Connection {
        var delay = 0.05
        while true {
            if let c = try? Connection(socketPath: socketPath, role: role, name: name) { return c }
            // Nobody would see what comes next (the reader of a pipe, or the terminal, is gone).
            if CLI.outputClosed() { Glibc.exit(0) }
            usleep(useconds_t(delay * 1_000_000))
            delay = min(delay * 2, 1)
        }
    }

    /// The same, giving up at `deadline` (seconds on `monotonicNow()`'s clock): nil then.
    func reconnect(role: Role = .viewer, name: String, until deadline: Double) -> Connection? {
        var delay = 0.05
        while true {
            if let c = try? Connection(socketPath: socketPath, role: role, name: name) { return c }
            let left = deadline - monotonicNow()
            guard left > 0 else { return nil }
            usleep(useconds_t(min(delay, left) * 1_000_000))
            delay = min(delay * 2, 1)
        }
    }
}

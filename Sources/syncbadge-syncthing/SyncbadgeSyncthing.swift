#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import Logging
import SyncBadgeCore
import SyncBadgeLogging
import Synchronization
import SyncthingAdapter

@main
struct SyncbadgeSyncthing: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncbadge-syncthing",
        abstract: "Shows Syncthing's per-file sync state as SyncBadge badges.",
        discussion: """
            A long-lived sync engine for syncbadged: it follows Syncthing's folders (each one \
            becomes a root it claims), its event streams and its database, and sets every \
            file's state: pending, syncing, synced, error, conflict or ignored.

            With no option it reads the GUI address and API key from Syncthing's config.xml, \
            found in $XDG_STATE_HOME/syncthing, ~/.local/state/syncthing or ~/.config/syncthing \
            (the first that has one). The key is never logged. A wrong key or address exits 78.

            An HTTPS GUI (tls="true", or --url https://...) is trusted through Syncthing's own \
            https-cert.pem in that directory and no other certificate: AsyncHTTPClient speaks \
            to a private Unix socket in a 0700 directory under $XDG_RUNTIME_DIR (or the \
            temporary directory), and the adapter relays that over TLS to Syncthing, accepting \
            only a server whose certificate is the file's (read again for each connection). Any \
            other certificate exits 78 naming the address and the file. Given --url and \
            --api-key but no --syncthing-home, no certificate of Syncthing's is known, and \
            HTTPS trusts the system's roots (and checks the host name) instead.
            """,
        version: SyncBadgeVersion.string)

    @Option(help: "syncbadged's socket (default: as every SyncBadge client finds it).")
    var socket: String?

    @Option(name: .customLong("syncthing-home"), help: "Syncthing's home directory, holding config.xml.")
    var syncthingHome: String?

    @Option(help: "Syncthing's REST address: http://HOST:PORT, https://HOST:PORT (trusting its https-cert.pem), unix:///PATH or https+unix:///PATH (default: from config.xml).")
    var url: String?

    @Option(name: .customLong("api-key"), help: "The API key (default: from config.xml). Prefer the config file: a command line is visible to other users.")
    var apiKey: String?

    @Option(name: .customLong("folder"), help: "Follow only this folder id (repeatable; default: every folder).")
    var folders: [String] = []

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let logger = logging.bootstrap(label: "syncbadge-syncthing")
        let env = ProcessInfo.processInfo.environment
        let socketPath = SocketPath.resolve(explicit: socket, environment: env, uid: getuid())

        // Where the address and the key come from, named in every fatal message.
        var origin = "command line"
        var gui: SyncthingGUI?
        var home = syncthingHome
        if url == nil || apiKey == nil {
            let homes = syncthingHome.map { [$0] } ?? SyncthingConfigFile.candidateHomes(environment: env)
            guard let found = homes.first(where: { FileManager.default.fileExists(atPath: $0 + "/config.xml") }) else {
                Self.fail(ConfigFileError.notFound(tried: homes.map { $0 + "/config.xml" }).description)
            }
            home = found
            let file = found + "/config.xml"
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { Self.fail(ConfigFileError.unreadable(file).description) }
            guard let g = SyncthingConfigFile.parseGUI(text) else { Self.fail(ConfigFileError.noGUI(file).description) }
            gui = g
            origin = file
        }
        let endpoint: SyncthingEndpoint
        if let url {
            guard let e = SyncthingEndpoint(url: url) else { Self.fail("--url \(url): not http://, https:// or unix://") }
            endpoint = e
        } else {
            endpoint = gui!.endpoint
        }
        let key = apiKey ?? gui!.apiKey
        let certificate = endpoint.tls ? home.map { $0 + "/https-cert.pem" } : nil
        let api: HTTPSyncthingAPI
        do {
            api = try HTTPSyncthingAPI(endpoint: endpoint, apiKey: key, certificate: certificate,
                                       runtimeDirectory: HTTPSyncthingAPI.runtimeDirectory(environment: env), logger: logger)
        } catch {
            Self.fail("\(endpoint) (from \(origin)): \(error)")
        }
        if let tunnel = api.tunnel { StopSignals.remove(socket: tunnel.socketPath, directory: tunnel.directory) }
        let provider = SyncthingProvider(api: api, daemon: ThreadedBadgeDaemon(socketPath: socketPath, name: "syncthing"),
                                     socketPath: socketPath, folders: folders, origin: "\(endpoint) (from \(origin))", logger: logger)
        logger.info("following Syncthing at \(endpoint) (from \(origin)) for syncbadged at \(socketPath)")
        do {
            try await provider.run()
        } catch let f as AdapterFailure {
            await api.shutdown()
            Self.fail(f.description)
        } catch {
            // Anything else still removes the tunnel's socket and directory before it goes up.
            await api.shutdown()
            throw error
        }
        await api.shutdown()
    }

    /// One line on stderr and EX_CONFIG: what was tried, never the key.
    static func fail(_ line: String) -> Never {
        FileHandle.standardError.write(Data(("syncbadge-syncthing: " + line + "\n").utf8))
        Glibc.exit(78)
    }
}

/// SIGTERM and SIGINT still end the adapter at once, as their default does, but first remove
/// the TLS tunnel's socket and directory (`shutdown` does it on every other way out).
enum StopSignals {
    /// The addresses of C strings for the handler, which may call only async-signal-safe
    /// functions: stored before it is installed, never freed.
    static let socket = Atomic<Int>(0)
    static let directory = Atomic<Int>(0)

    static func remove(socket path: String, directory dir: String) {
        socket.store(Int(bitPattern: strdup(path)), ordering: .sequentiallyConsistent)
        directory.store(Int(bitPattern: strdup(dir)), ordering: .sequentiallyConsistent)
        for signo in [SIGTERM, SIGINT] {
            signal(signo) { signo in
                if let s = UnsafePointer<CChar>(bitPattern: StopSignals.socket.load(ordering: .sequentiallyConsistent)) { unlink(s) }
                if let d = UnsafePointer<CChar>(bitPattern: StopSignals.directory.load(ordering: .sequentiallyConsistent)) { rmdir(d) }
                signal(signo, SIG_DFL)
                raise(signo)
            }
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import Logging
import RcloneAdapter
import SyncBadgeCore
import SyncBadgeLogging

@main
struct SyncbadgeRclone: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncbadge-rclone",
        abstract: "Shows what an rclone mount has uploaded, per file, as SyncBadge badges.",
        usage: "syncbadge-rclone [--socket S] --rc-addr HOST:PORT [--rc-user U --rc-pass P] MOUNTPOINT",
        discussion: """
            A sync engine for syncbadged, for one folder mounted with `rclone mount` and its VFS \
            cache (--vfs-cache-mode writes or full) and remote control (--rc): the mount point \
            becomes a root it claims, and every file shows pending (written, not uploaded yet), \
            syncing with its progress, synced (uploaded, and the same size and time as what \
            was uploaded) or error with rclone's message. A synced file carries the badge \
            rclone-local when the VFS cache holds all of it, rclone-cloud when reading it \
            would download it.

            It asks rclone's remote control only while uploads are queued or running, and not at \
            all at idle. It finds the VFS cache's directory through rc (vfs/stats). With \
            rclone 1.68 or later it reads the upload queue (vfs/queue), and "Upload now" starts \
            a queued upload at once; with older rclone it reads the cache's metadata instead.

            When the mount goes away (rclone stopped, or unmounted) it gives up its claim, and \
            claims the mount point again when rclone mounts it again. It runs in the foreground, \
            logging to stderr, until SIGTERM or SIGINT; the user unit syncbadge-rclone@.service \
            runs one per mount. Menus: "Upload now", "Free up space", "Show rclone's log line"; \
            the toolbar item shows the remote and what is left to upload (gdrive: ↑ 3 files, 12 MB).
            """,
        version: SyncBadgeVersion.string)

    @Option(help: "syncbadged's socket (default: as every SyncBadge client finds it).")
    var socket: String?

    @Option(name: .customLong("rc-addr"), help: "rclone's remote control address, as given to rclone's --rc-addr (HOST:PORT).")
    var rcAddr: String

    @Option(name: .customLong("rc-user"), help: "The rc's user name (rclone's --rc-user), when it asks for one.")
    var rcUser: String?

    @Option(name: .customLong("rc-pass"), help: "The rc's password (rclone's --rc-pass). A command line is visible to other users of this computer: prefer --rc-no-auth on a loopback address, or a unit whose command line only you can read.")
    var rcPass: String?

    @OptionGroup var logging: LoggingOptions

    @Argument(help: "The folder rclone mounts the remote on.")
    var mountPoint: String

    func validate() throws {
        let parts = rcAddr.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count >= 2, let port = Int(parts.last!), port > 0, port < 65536, !parts.dropLast().joined(separator: ":").isEmpty else {
            throw ValidationError("--rc-addr \(rcAddr): expected HOST:PORT, as given to rclone's --rc-addr (e.g. 127.0.0.1:5572)")
        }
        if rcPass != nil && rcUser == nil { throw ValidationError("--rc-pass needs --rc-user") }
    }

    func run() async throws {
        let logger = logging.bootstrap(label: "syncbadge-rclone")
        let env = ProcessInfo.processInfo.environment
        let socketPath = SocketPath.resolve(explicit: socket, environment: env, uid: getuid())
        let cwd = FileManager.default.currentDirectoryPath
        var path = mountPoint.hasPrefix("/") ? mountPoint : cwd + "/" + mountPoint
        // The path as the kernel lists the mount: no `..`, no trailing slash, no symbolic link.
        if let real = realpath(path, nil) {
            path = String(cString: real)
            free(real)
        } else {
            FileHandle.standardError.write(Data("syncbadge-rclone: \(mountPoint): no such directory\n".utf8))
            throw ExitCode(64)
        }
        let rc = HTTPRcloneRC(address: rcAddr, user: rcUser, password: rcPass)
        let provider = RcloneProvider(rc: rc, socketPath: socketPath, mountPoint: path, logger: logger)
        logger.info("following the rclone mount at \(path) (rc at \(rcAddr)) for syncbadged at \(socketPath)")
        await provider.run()
        await rc.shutdown()
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@_spi(Wire) import SyncBadgeClient
import SyncBadgeCore

/// A real `rclone mount` (Debian's rclone, over FUSE) of a local directory standing for the
/// cloud, with its VFS cache and remote control on loopback, a daemon, and the adapter.
final class RcloneMount {
    let daemon: DaemonHarness
    /// The "cloud": a local directory rclone uploads to.
    let remoteDir: String
    let mountPoint: String
    let cacheDir: String
    let logFile: String
    let rcAddr: String
    let remoteSpec: String
    let bwlimit: String
    var rclone: ChildProcess?
    var adapter: ChildProcess?

    /// `remote`: rclone's remote (default: the local directory `remoteDir`); `bwlimit`: rclone
    /// lets about 4 MB through at once, then keeps to the limit.
    /// `inCloud`: files put in the cloud before rclone mounts it (rclone lists a directory once
    /// and keeps the listing for --dir-cache-time, so one put there later may not show at once).
    init(remote: String? = nil, bwlimit: String = "2M", adapterRC: String? = nil, startAdapter: Bool = true,
         inCloud: [String: Data] = [:]) throws {
        daemon = try DaemonHarness()
        remoteDir = daemon.temp.sub("cloud")
        mountPoint = daemon.temp.sub("mnt")
        cacheDir = daemon.temp.sub("cache")
        logFile = daemon.temp.sub("rclone.log")
        for d in [remoteDir, mountPoint, cacheDir] { try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true) }
        for (name, data) in inCloud { try data.write(to: URL(fileURLWithPath: remoteDir + "/" + name)) }
        rcAddr = "127.0.0.1:\(try freeLoopbackPort())"
        remoteSpec = remote ?? remoteDir
        self.bwlimit = bwlimit
        try mount()
        if startAdapter { try startAdapterProcess(rc: adapterRC ?? rcAddr) }
    }

    /// Mounts, and waits until the kernel lists the mount; a machine where FUSE cannot mount
    /// fails here, saying why.
    func mount() throws {
        guard let rcloneBinary = installed("rclone") else {
            throw HarnessError(description: "rclone is not installed: `make deps` installs Debian's rclone and fuse3")
        }
        guard FileManager.default.fileExists(atPath: "/dev/fuse"), installed("fusermount3") != nil else {
            throw HarnessError(description: "FUSE is not available here (/dev/fuse or fusermount3 missing): the rclone tests need `rclone mount` over FUSE; install fuse3 (`make deps`) or run them where /dev/fuse exists")
        }
        let args = ["mount", remoteSpec, mountPoint, "--vfs-cache-mode", "writes", "--cache-dir", cacheDir,
                    "--rc", "--rc-addr", rcAddr, "--rc-no-auth", "--bwlimit", bwlimit, "--vfs-write-back", "1s",
                    "--dir-cache-time", "1s", "--config", "/dev/null", "-v", "--log-file", logFile]
        let r = try ChildProcess(URL(fileURLWithPath: rcloneBinary), args)
        rclone = r
        let deadline = Date().addingTimeInterval(15)
        while !isMounted {
            guard r.process.isRunning, Date() < deadline else {
                r.stop(signal: SIGKILL)
                rclone = nil
                throw HarnessError(description: "rclone could not mount \(mountPoint) over FUSE (is /dev/fuse usable here?): \(r.log)\n\(rcloneLog)")
            }
            // The kernel tells a new mount through a poll on mountinfo; bounded by the deadline.
            let fd = open("/proc/self/mountinfo", O_RDONLY)
            var buf = [UInt8](repeating: 0, count: 65536)
            while read(fd, &buf, buf.count) > 0 {}
            if !isMounted {
                var p = pollfd(fd: fd, events: Int16(POLLPRI), revents: 0)
                _ = poll(&p, 1, 200)
            }
            close(fd)
        }
    }

    var isMounted: Bool {
        let info = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
        return info.split(separator: "\n").contains { $0.split(separator: " ").count > 4 && $0.split(separator: " ")[4] == Substring(mountPoint) && $0.contains(" - fuse.rclone ") }
    }

    /// Stops rclone (it unmounts as it ends) and waits until the mount is gone.
    func unmount() {
        rclone?.stop(signal: SIGTERM)
        rclone = nil
        if isMounted { _ = try? runToEnd(URL(fileURLWithPath: "/usr/bin/fusermount3"), ["-u", "-z", mountPoint], seconds: 10) }
    }

    func startAdapterProcess(rc: String) throws {
        adapter = try ChildProcess.adapter(Products.directory.appendingPathComponent("syncbadge-rclone"), socket: daemon.socket,
                                           arguments: ["--rc-addr", rc, mountPoint])
    }

    var rcloneLog: String { (try? String(contentsOfFile: logFile, encoding: .utf8)).map { String($0.suffix(4000)) } ?? "" }

    func diagnostics() -> String {
        "--- adapter:\n\(adapter?.log.suffix(4000) ?? "")\n--- rclone:\n\(rcloneLog)\n--- syncbadged:\n\(daemon.log.suffix(6000))"
    }

    /// The root claimed by the adapter, and the root's own state reported.
    func waitUntilFollowed(_ c: Connection) throws {
        try c.waitForState(mountPoint, "the mount claimed and reported", timeout: 20, diagnostics: diagnostics) { $0.state == .synced }
    }

    /// `n` bytes that do not compress.
    static func bytes(_ n: Int, seed: UInt32 = 1) -> Data {
        var out = [UInt8](repeating: 0, count: n)
        var x = seed &* 2654435761 | 1
        for i in out.indices {
            x ^= x << 13; x ^= x >> 17; x ^= x << 5
            out[i] = UInt8(truncatingIfNeeded: x)
        }
        return Data(out)
    }

    deinit {
        adapter?.stop(signal: SIGKILL)
        unmount()
    }
}

extension Connection {
    /// Every state `path` shows, in order, from now until `done` holds (pushes of its directory,
    /// observed here); throws at the deadline with what it saw.
    func states(of path: String, timeout: Double = 30, diagnostics: () -> String = { "" }, until done: (Item) -> Bool) throws -> [Item] {
        let dir = (path as NSString).deletingLastPathComponent
        _ = try request("OBSERVE", [.path(Array(dir.utf8)), .option("list", "0")], timeout: 15)
        defer { _ = try? request("UNOBSERVE", [.path(Array(dir.utf8))], timeout: 15) }
        var seen: [Item] = []
        if let now = try? status(path) {
            seen.append(now)
            if done(now) { return seen }
        }
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0, let m = try nextPush(timeout: left) else {
                let said = seen.map { "\($0.state.map { "\($0)" } ?? "-")(\($0.progress.map(String.init) ?? "")) \($0.message ?? "")" }
                throw HarnessError(description: "\(path): not done within \(timeout) s; saw \(said)\n" + diagnostics())
            }
            guard m.path == path, let item = Item(m) else { continue }
            seen.append(item)
            if done(item) { return seen }
        }
    }
}

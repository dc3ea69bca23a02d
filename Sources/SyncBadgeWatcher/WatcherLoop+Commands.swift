#if canImport(Glibc)
import Glibc
#endif
import CInotifyTools
import Logging
import SyncBadgeCore
import SyncBadgeWatchEvents

/// The hub's commands to the watcher thread (add or remove a root, a barrier, a change of
/// mounts, shutdown), run in order between inotify events; answers go back as messages in
/// their place among the events.
extension WatcherLoop {
    func runCommands() {
        var barriers: [UInt64] = []
        for c in owner.takeCommands() {
            switch c {
            case .addRoot(let path, let token, let identities):
                let result = addRoot(path, identities: identities)
                // A stored root (the daemon asks identities only for those) missing at start is
                // watched for, as a root that vanished is: it comes back as a refreshed root.
                if identities, case .failure(.notFound) = result { awaitReturn(path) }
                emit(.rootAdded(root: path, token: token, result: result))
            case .removeRoot(let path):
                unwatchRoot(path)
                timers.stopAwaitingReturn(path)
                timers.ignoreFileRead(root: path)
                releaseSentinel(vanished.rootRemoved(path))
            case .barrier(let token):
                barriers.append(token)
            case .mountsChanged:
                mountsChanged()
            case .shutdown:
                running = false
            }
        }
        if self.barriers.asked(barriers) {
            // Released when this touch comes back: after every event queued before it.
            _ = control.barrier.withCString { utimensat(AT_FDCWD, $0, nil, 0) }
        }
    }

    func addRoot(_ path: [UInt8], identities: Bool) -> Result<RootScan, RootError> {
        var st = stat()
        guard path.withCString({ lstat($0, &st) }) == 0 else {
            return errno == ENOENT || errno == ENOTDIR ? .failure(.notFound) : .failure(.failed(String(cString: strerror(errno))))
        }
        guard st.st_mode & S_IFMT == S_IFDIR else { return .failure(.notADirectory) }
        if let wd = tree.rootWds[path] {
            return .success(rootScan(path, scan: ScanTree(), wd: wd))
        }
        lastWatchError = 0
        let (wd, scan) = watchAndScan(path, parent: -1, name: path, root: nil, identities: identities)
        guard let wd else { return .failure(.failed(Self.watchFailure(lastWatchError))) }
        tree.rootWatched(path, wd: wd)
        vanished.rootWatched(path, identity: Self.directoryIdentity(path), isMountPoint: Self.isMountPoint(path))
        updateCounts()
        scheduleDegradedRescans()
        return .success(rootScan(path, scan: scan, wd: wd))
    }

    /// Why `inotify_add_watch` failed, in words that do not mislead: its ENOSPC is the watch
    /// limit, never a full disk.
    static func watchFailure(_ err: Int32) -> String {
        switch err {
        case ENOSPC: "cannot watch: the inotify watch limit is reached; raise it with `sysctl fs.inotify.max_user_watches=<n>`"
        case ENOMEM: "cannot watch: the kernel is out of memory for inotify watches"
        default: "cannot watch: \(String(cString: strerror(err)))"
        }
    }
}

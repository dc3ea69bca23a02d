#if canImport(Glibc)
import Glibc
#endif
import CInotifyTools
import Logging
import SyncBadgeCore
import SyncBadgeWatchEvents

/// Turning raw inotify events into `WatcherMessage`s (the hub's commands: WatcherLoop+Commands).
extension WatcherLoop {
    func has(_ mask: UInt32, _ flag: Int32) -> Bool { mask & UInt32(flag) != 0 }

    func handle(_ e: RawEvent) {
        if e.wd == control.commandWd {
            if e.mask & sb_IN_IGNORED != 0 {
                // The control file was deleted (the state directory cleaned up): make a new one.
                control.commandWd = rewatch(control.command)
            }
            runCommands()
            return
        }
        if e.wd == control.barrierWd {
            if e.mask & sb_IN_IGNORED != 0 { control.barrierWd = rewatch(control.barrier) }
            for token in barriers.touchSeen() { emit(.barrier(token: token)) }
            return
        }
        if e.mask & sb_IN_Q_OVERFLOW != 0 {
            overflow()
            return
        }
        if vanished.hasSentinels { sentinelEvent(e) }
        if e.mask & sb_IN_IGNORED != 0 {
            watchRemovedByKernel(e.wd)
            return
        }
        guard let dir = tree[e.wd], let dirPath = tree.path(of: e.wd) else { return }
        let m = e.mask
        let isDir = m & sb_IN_ISDIR != 0
        if e.name.isEmpty {
            // About the watched directory itself; its parent reports the rest.
            if dir.parent < 0 {
                if m & sb_IN_UNMOUNT != 0 {
                    rootVanished(e.wd, path: dirPath, reason: "unmounted")
                } else if has(m, IN_DELETE_SELF) || has(m, IN_MOVE_SELF) {
                    rootVanished(e.wd, path: dirPath, reason: has(m, IN_DELETE_SELF) ? "deleted" : "moved away")
                } else if has(m, IN_ATTRIB) {
                    emit(.changed(path: dirPath, kind: .dir, what: .attrib))
                }
            }
            return
        }
        let path = PathBytes.join(dirPath, e.name)
        if has(m, IN_CREATE) {
            if isDir {
                directoryAppeared(path, parent: e.wd, name: e.name)
            } else {
                emit(.changed(path: path, kind: kindOf(path), what: .create))
            }
        } else if has(m, IN_MOVED_TO) {
            switch moves.movedTo(cookie: e.cookie) {
            case .fileRenamed(let from):
                emit(.moved(from: from, to: path, kind: kindOf(path)))
            case .directoryRenamed(let from, let wd):
                if tree.relink(wd, parent: e.wd, name: e.name) { updateCounts() }
                emit(.moved(from: from, to: path, kind: .dir))
            case .directoryReplaced(let from):
                emit(.deleted(path: from, wasDirectory: true))
                directoryAppeared(path, parent: e.wd, name: e.name)
            case .appeared where isDir:
                directoryAppeared(path, parent: e.wd, name: e.name)
            case .appeared:
                emit(.changed(path: path, kind: kindOf(path), what: .create))
            }
        } else if has(m, IN_MOVED_FROM) {
            moves.movedFrom(.init(cookie: e.cookie, path: path, isDir: isDir, wd: isDir ? dir.children[e.name] : nil))
        } else if has(m, IN_DELETE) {
            if isDir, let wd = dir.children[e.name] { forget(wd, rmWatch: false) }
            emit(.deleted(path: path, wasDirectory: isDir))
        } else if has(m, IN_MODIFY) {
            if case .changed(let p, _, .modify)? = batch.last, p == path { return }
            emit(.changed(path: path, kind: .file, what: .modify))
        } else if has(m, IN_ATTRIB) {
            emit(.changed(path: path, kind: isDir ? .dir : kindOf(path), what: .attrib))
        }
        if dir.parent < 0 && e.name == IgnoreRules.fileName {
            if ignoreFileIsFinal(m, path) {
                timers.ignoreFileRead(root: dirPath)
                emit(.ignoreFileChanged(root: dirPath, contents: DirectoryScanner.readFile(path)))
            } else if has(m, IN_CREATE) {
                // Its writer's close is expected; should none come under this name (a link
                // whose source was removed meanwhile, an O_TMPFILE linked in), read it anyway.
                timers.ignoreFileCreated(root: dirPath, now: .now)
            }
        }
    }

    /// Whether this event of a root's ignore file says its content is final, so that it is read
    /// now: its writer closed it, it was renamed onto the name (how editors save) or away, or
    /// deleted. Not on IN_MODIFY, nor on IN_CREATE of a file that open(2) made: that file is
    /// empty or half written, its IN_CLOSE_WRITE follows, and a read delayed until the event is
    /// handled could meet a later rewrite's truncation and apply an empty rule set in between.
    /// A hard link made to an existing file has no writer to close it, so it is read at creation.
    func ignoreFileIsFinal(_ m: UInt32, _ path: [UInt8]) -> Bool {
        if has(m, IN_CLOSE_WRITE) || has(m, IN_MOVED_TO) || has(m, IN_MOVED_FROM) || has(m, IN_DELETE) { return true }
        guard has(m, IN_CREATE) else { return false }
        var st = stat()
        guard path.withCString({ Glibc.lstat($0, &st) }) == 0 else { return true }
        return st.st_nlink > 1
    }

    /// Re-creates a deleted control file and watches it again; -1 if that is impossible.
    func rewatch(_ file: [UInt8]) -> Int32 {
        let fd = file.withCString { open($0, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600) }
        if fd >= 0 { close(fd) }
        let wd = file.withCString { inotify_add_watch(self.fd, $0, UInt32(IN_ATTRIB)) }
        logger.warning("control file was deleted; re-created", metadata: ["file": "\(PathBytes.display(file))", "watched": "\(wd >= 0)"])
        return wd
    }

    func kindOf(_ path: [UInt8]) -> EntryKind {
        FileStat.lstat(path)?.0 ?? .file
    }

    /// A move-from whose move-to never came: the entry left every watched directory.
    func movedOut(_ departure: MovePairing.Departure) {
        if let wd = departure.wd { forget(wd, rmWatch: true) }
        emit(.deleted(path: departure.path, wasDirectory: departure.isDir))
    }

    func directoryAppeared(_ path: [UInt8], parent: Int32, name: [UInt8]) {
        let (_, scan) = watchAndScan(path, parent: parent, name: name, root: tree[parent]?.root, identities: false)
        scheduleDegradedRescans()
        emit(.directoryAppeared(path: path, subtree: scan))
    }

    func watchRemovedByKernel(_ wd: Int32) {
        guard let d = tree[wd] else { return }
        if d.parent < 0, let path = tree.path(of: wd) {
            rootVanished(wd, path: path, reason: "deleted or unmounted")
        } else {
            forget(wd, rmWatch: false)
        }
    }

    func rootVanished(_ wd: Int32, path: [UInt8], reason: String) {
        guard tree.rootWds[path] == wd else { return }
        unwatchRoot(path)
        logger.warning("root vanished; it is watched again when it comes back", metadata: ["root": "\(PathBytes.display(path))", "reason": "\(reason)"])
        emit(.rootVanished(root: path, reason: reason))
        awaitReturn(path)
    }

    /// Drops a root's watches and everything kept about watching it; what is kept about the
    /// root itself (its identity, whether it was a mount point) is the caller's to drop.
    func unwatchRoot(_ path: [UInt8]) {
        timers.rootUnwatched(path)
        guard let gone = tree.unwatchRoot(path) else { return }
        removeWatches(gone)
        updateCounts()
    }

    /// Events were lost: rescan every root now, or after a backoff when overflows repeat (a
    /// storm that overflows the queue would overflow it again during each rescan).
    func overflow() {
        let delay = timers.overflowed(roots: tree.rootWds.keys, now: .now)
        logger.warning("inotify queue overflowed: rescanning every root", metadata: ["in": "\(delay)"])
        emit(.overflow)
    }

    /// Scans a watched root again, re-watching what is new and forgetting what is gone.
    func rescan(_ path: [UInt8]) -> RootScan? {
        guard let (wd, before) = tree.beginRescan(path) else { return nil }
        let (newWd, scan) = watchAndScan(path, parent: -1, name: path, root: nil, identities: true)
        removeWatches(tree.finishRescan(path, before: before, newWd: newWd))
        updateCounts()
        return rootScan(path, scan: scan, wd: newWd ?? wd)
    }

    func rootScan(_ path: [UInt8], scan: ScanTree, wd: Int32) -> RootScan {
        RootScan(
            scan: scan,
            ignoreFile: DirectoryScanner.readFile(PathBytes.join(path, IgnoreRules.fileName)),
            watches: tree.watches(ofRoot: wd),
            degraded: tree.isDegraded(wd) ? "watch-limit" : nil)
    }
}

import SyncBadgeCore

/// The watched directories as a tree (wd → parent wd + name), the source of every event's path,
/// with each root's watch count and whether it is over the watch limit.
///
/// libinotifytools' own by-filename bookkeeping never forgets a directory the kernel dropped
/// (`remove_watch_by_wd` fails once the watch is gone, so its record leaks and a directory
/// re-created at the same path is looked up as the dead wd), and it does not follow moves.
///
/// No I/O: `WatcherLoop` adds and removes the kernel's watches, tells this tree, and removes
/// the watches of the directories it returns as forgotten.
struct WatchTree {
    struct Dir: Equatable {
        var parent: Int32
        /// A root's is its absolute path.
        var name: [UInt8]
        var children: [[UInt8]: Int32] = [:]
        var root: Int32
    }

    private(set) var dirs: [Int32: Dir] = [:]
    /// Each root's path → its top directory's wd.
    private(set) var rootWds: [[UInt8]: Int32] = [:]
    /// Watches held for each root (by its top wd).
    private(set) var watchesByRoot: [Int32: Int] = [:]
    /// Roots (by top wd) with a directory that could not be watched (the watch limit); -1
    /// when a root's own directory could not be.
    private(set) var degraded: Set<Int32> = []
    /// Roots already told about in the log as over the watch limit.
    private var limitLogged: Set<Int32> = []
    /// Directories (re)watched by the rescan under way, to prune the ones that vanished.
    private var scanSeen: Set<Int32>? = nil

    subscript(wd: Int32) -> Dir? { dirs[wd] }

    func isWatched(_ wd: Int32) -> Bool { dirs[wd] != nil }

    func path(of wd: Int32) -> [UInt8]? {
        var parts: [[UInt8]] = []
        var cur = wd
        while let d = dirs[cur] {
            parts.append(d.name)
            if d.parent < 0 { break }
            cur = d.parent
        }
        guard var out = parts.popLast() else { return nil }
        for p in parts.reversed() {
            out.append(PathBytes.slash)
            out.append(contentsOf: p)
        }
        return out
    }

    /// The directory and every one below it.
    func subtree(_ wd: Int32) -> [Int32] {
        var out: [Int32] = []
        var stack = [wd]
        while let w = stack.popLast() {
            guard let d = dirs[w] else { continue }
            out.append(w)
            stack.append(contentsOf: d.children.values)
        }
        return out
    }

    /// Watches held per root path (what `ROOTS` and `STATS` show).
    var watchCounts: [[UInt8]: Int] {
        var counts: [[UInt8]: Int] = [:]
        for (path, wd) in rootWds { counts[path] = watchesByRoot[wd] ?? 0 }
        return counts
    }

    func watches(ofRoot wd: Int32) -> Int { watchesByRoot[wd] ?? 0 }

    func isDegraded(_ rootWd: Int32) -> Bool { degraded.contains(rootWd) }

    /// The kernel watches `wd`: a directory found below `parent` named `name`, or a root
    /// (`parent` -1) at `path`. `root` is the top wd of the root it belongs to (nil: itself).
    /// The kernel returns the same wd for a directory already watched, seen under a new name.
    mutating func watched(_ wd: Int32, path: [UInt8], parent: Int32, name: [UInt8], root: Int32?) {
        if let old = dirs[wd], old.parent >= 0, var p = dirs[old.parent] {
            // The same directory seen again under a new name: forget the old link.
            p.children.removeValue(forKey: old.name)
            dirs[old.parent] = p
        }
        let rootWd = root ?? wd
        if let old = dirs[wd] {
            if old.root != rootWd {
                watchesByRoot[old.root, default: 1] -= 1
                watchesByRoot[rootWd, default: 0] += 1
            }
        } else {
            watchesByRoot[rootWd, default: 0] += 1
        }
        scanSeen?.insert(wd)
        dirs[wd] = Dir(parent: parent, name: parent < 0 ? path : name, children: dirs[wd]?.children ?? [:], root: rootWd)
        if parent >= 0 { dirs[parent]?.children[name] = wd }
    }

    /// A directory of `root` (nil: a root's own) could not be watched for the watch limit.
    /// Returns true the first time for that root, for one log line per episode.
    mutating func watchLimitReached(root: Int32?) -> Bool {
        let r = root ?? -1
        degraded.insert(r)
        return limitLogged.insert(r).inserted
    }

    /// A root that was degraded is fully watched again: the next episode is logged again.
    mutating func recovered(_ path: [UInt8]) {
        if let wd = rootWds[path] { limitLogged.remove(wd) }
    }

    mutating func rootWatched(_ path: [UInt8], wd: Int32) {
        rootWds[path] = wd
    }

    /// Forgets a watched directory and everything below it; returns the wds forgotten, whose
    /// kernel watches the caller removes unless they are already gone.
    mutating func forget(_ wd: Int32) -> [Int32] {
        guard let d = dirs[wd] else { return [] }
        if d.parent >= 0 { dirs[d.parent]?.children.removeValue(forKey: d.name) }
        var gone: [Int32] = []
        var stack = [wd]
        while let w = stack.popLast() {
            guard let dd = dirs.removeValue(forKey: w) else { continue }
            watchesByRoot[dd.root, default: 1] -= 1
            stack.append(contentsOf: dd.children.values)
            gone.append(w)
        }
        return gone
    }

    /// A watched directory renamed within the watched tree: its watch (and its subtree's) stay.
    /// Returns whether watches moved from one root to another.
    @discardableResult
    mutating func relink(_ wd: Int32, parent: Int32, name: [UInt8]) -> Bool {
        guard var d = dirs[wd], let newRoot = dirs[parent]?.root else { return false }
        if d.parent >= 0 { dirs[d.parent]?.children.removeValue(forKey: d.name) }
        d.parent = parent
        d.name = name
        dirs[wd] = d
        dirs[parent]?.children[name] = wd
        guard d.root != newRoot else { return false }
        var stack = [wd]
        while let w = stack.popLast() {
            guard let dd = dirs[w] else { continue }
            watchesByRoot[dd.root, default: 1] -= 1
            watchesByRoot[newRoot, default: 0] += 1
            dirs[w]?.root = newRoot
            stack.append(contentsOf: dd.children.values)
        }
        return true
    }

    /// Stops tracking a root; returns the wds forgotten (nil when it was not watched), whose
    /// kernel watches the caller removes.
    mutating func unwatchRoot(_ path: [UInt8]) -> [Int32]? {
        guard let wd = rootWds.removeValue(forKey: path) else { return nil }
        let gone = forget(wd)
        watchesByRoot.removeValue(forKey: wd)
        degraded.remove(wd)
        limitLogged.remove(wd)
        return gone
    }

    /// A rescan of a watched root starts: what it re-watches is recorded, so that
    /// `finishRescan` forgets the directories that are gone. Nil when the root is not watched.
    mutating func beginRescan(_ path: [UInt8]) -> (wd: Int32, before: [Int32])? {
        guard let wd = rootWds[path] else { return nil }
        let before = subtree(wd)
        degraded.remove(wd)
        scanSeen = []
        return (wd, before)
    }

    /// The rescan is done; `newWd` is the root's top watch if it could be re-watched. Returns
    /// the wds it did not see again, forgotten here, whose kernel watches the caller removes.
    mutating func finishRescan(_ path: [UInt8], before: [Int32], newWd: Int32?) -> [Int32] {
        let seen = scanSeen ?? []
        scanSeen = nil
        var gone: [Int32] = []
        for w in before where !seen.contains(w) { gone.append(contentsOf: forget(w)) }
        if let newWd { rootWds[path] = newWd }
        return gone
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// inotify on what changes a repository's state without touching its working tree, which the
/// daemon cannot report (`.git` is ignored): the index, HEAD, the refs, the configuration
/// (upstreams), `info/exclude`, and the markers of a merge or rebase. Also the adapter's
/// list of repositories. No timer: the descriptor is polled with the adapter's others.
public final class GitWatcher {
    public let fd: Int32
    /// watch descriptor → (owner key, directory watched, whether every name in it counts).
    var watches: [Int32: (key: String, dir: String, refs: Bool)] = [:]
    var byDir: [String: Int32] = [:]

    static let dirMask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE)
    /// Names directly in the git directory whose change means a full pass.
    static let gitDirNames: Set<String> = ["index", "HEAD", "packed-refs", "config", "MERGE_HEAD", "CHERRY_PICK_HEAD",
                                           "REVERT_HEAD", "rebase-merge", "rebase-apply", "exclude"]

    public init() throws {
        fd = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard fd >= 0 else { throw SpawnError(description: "inotify_init1: \(String(cString: strerror(errno)))") }
    }

    deinit { close(fd) }

    /// Watches a repository's git directory, its common directory (a linked worktree shares
    /// the refs of another) and every directory under `refs/`.
    public func watchRepository(key: String, gitDir: String, commonDir: String) {
        add(gitDir, key: key, refs: false)
        add(gitDir + "/info", key: key, refs: false)
        if commonDir != gitDir {
            add(commonDir, key: key, refs: false)
            add(commonDir + "/info", key: key, refs: false)
        }
        addTree(commonDir + "/refs", key: key)
    }

    /// Watches a directory for one file's sake (the list of repositories).
    public func watchDirectory(_ dir: String, key: String) {
        add(dir, key: key, refs: true)
    }

    public func unwatch(key: String) {
        for (wd, w) in watches where w.key == key {
            inotify_rm_watch(fd, wd)
            watches[wd] = nil
            byDir[w.dir] = nil
        }
    }

    func add(_ dir: String, key: String, refs: Bool) {
        let wd = inotify_add_watch(fd, dir, Self.dirMask | UInt32(IN_ONLYDIR))
        guard wd >= 0 else { return }
        watches[wd] = (key, dir, refs)
        byDir[dir] = wd
    }

    func addTree(_ dir: String, key: String) {
        add(dir, key: key, refs: true)
        guard let d = opendir(dir) else { return }
        defer { closedir(d) }
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name == "." || name == ".." { continue }
            if e.pointee.d_type == UInt8(DT_DIR) { addTree(dir + "/" + name, key: key) }
        }
    }

    /// Reads every queued event; returns the keys of the repositories (or directories) that
    /// changed in a way that counts, with the names that changed (under `refs/`, full paths).
    public func drain() -> [String: Set<String>] {
        var changed: [String: Set<String>] = [:]
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            var off = 0
            while off + 16 <= n {
                let wd = buf.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: off, as: Int32.self) }
                let mask = buf.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: off + 4, as: UInt32.self) }
                let len = Int(buf.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: off + 12, as: UInt32.self) })
                let nameBytes = buf[(off + 16)..<min(n, off + 16 + len)].prefix { $0 != 0 }
                let name = String(decoding: nameBytes, as: UTF8.self)
                off += 16 + len
                if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    // Lost events: everything may have changed.
                    for w in watches.values { changed[w.key, default: []].insert("") }
                    continue
                }
                guard let w = watches[wd] else { continue }
                if mask & UInt32(IN_IGNORED) != 0 {
                    watches[wd] = nil
                    byDir[w.dir] = nil
                    continue
                }
                if name.hasSuffix(".lock") { continue }
                let isDir = mask & UInt32(IN_ISDIR) != 0
                if w.refs {
                    if isDir && mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 && w.dir.contains("/refs") {
                        addTree(w.dir + "/" + name, key: w.key)
                    }
                    // Under refs/, the whole path: a remote-tracking ref tells a push or fetch.
                    changed[w.key, default: []].insert(w.dir.contains("/refs") ? w.dir + "/" + name : name)
                } else if Self.gitDirNames.contains(name) {
                    changed[w.key, default: []].insert(name)
                }
            }
        }
        return changed
    }
}

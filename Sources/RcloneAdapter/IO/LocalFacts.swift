#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// What the mount and the VFS cache say of one path: `lstat` through the mount (served by rclone
/// from its own state) and the cache's metadata file.
public struct LocalFacts: Sendable {
    public let mountPoint: String
    /// `vfs/stats`' `diskCache.path` and `pathMeta`.
    public let dataRoot: String
    public let metaRoot: String

    public init(mountPoint: String, dataRoot: String, metaRoot: String) {
        self.mountPoint = mountPoint; self.dataRoot = dataRoot; self.metaRoot = metaRoot
    }

    public func facts(_ name: String) -> FileFacts {
        var st = stat()
        guard lstat(mountPoint + "/" + name, &st) == 0 else { return FileFacts(name: name, kind: .gone) }
        switch st.st_mode & S_IFMT {
        case S_IFDIR: return FileFacts(name: name, kind: .directory)
        case S_IFREG: break
        default: return FileFacts(name: name, kind: .other)
        }
        let mtime = Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec)
        let meta = (try? Data(contentsOf: URL(fileURLWithPath: metaRoot + "/" + name))).flatMap { try? JSONDecoder().decode(CacheMeta.self, from: $0) }
        var data = stat()
        let cached = lstat(dataRoot + "/" + name, &data) == 0
        return FileFacts(name: name, kind: .file, size: Int64(st.st_size), mtime: mtime, meta: meta, dataCached: cached)
    }

    /// Every file and directory below the mount point, relative to it (for the badges of files
    /// nobody changed).
    public func walk(limit: Int = 1_000_000) -> [String] {
        var out: [String] = []
        var dirs = [""]
        while let dir = dirs.popLast(), out.count < limit {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir.isEmpty ? mountPoint : mountPoint + "/" + dir) else { continue }
            for n in names.sorted() {
                let rel = dir.isEmpty ? n : dir + "/" + n
                out.append(rel)
                var st = stat()
                if lstat(mountPoint + "/" + rel, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR { dirs.append(rel) }
            }
        }
        return out
    }
}

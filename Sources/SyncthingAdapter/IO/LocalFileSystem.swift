#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import SyncBadgeProtocol

/// The lstat side of the file system.
public struct LocalFileSystem: FileSystemView {
    public init() {}
    public func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    public func identity(_ path: String) -> DiskIdentity? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        return DiskIdentity(size: Int64(st.st_size), mtimeNanoseconds: Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec),
                            isDirectory: (st.st_mode & S_IFMT) == S_IFDIR)
    }
}

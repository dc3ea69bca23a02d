#if canImport(Glibc)
import Glibc
#endif
import SyncBadgeCore

/// `lstat` in the terms the state tree uses: kind and identity. Never follows a link.
public enum FileStat {
    package static func kind(ofMode mode: mode_t) -> EntryKind {
        switch mode & S_IFMT {
        case S_IFREG: .file
        case S_IFDIR: .dir
        case S_IFLNK: .link
        default: .other
        }
    }

    package static func identity(of st: stat) -> FileIdentity {
        FileIdentity(
            inode: UInt64(st.st_ino), size: Int64(st.st_size),
            mtimeNs: Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec),
            ctimeNs: Int64(st.st_ctim.tv_sec) * 1_000_000_000 + Int64(st.st_ctim.tv_nsec))
    }

    /// The path's kind and identity, or nil if it is gone.
    public static func lstat(_ path: [UInt8]) -> (kind: EntryKind, identity: FileIdentity)? {
        var st = stat()
        guard path.withCString({ Glibc.lstat($0, &st) }) == 0 else { return nil }
        return (kind(ofMode: st.st_mode), identity(of: st))
    }

    /// The same for `name` in the open directory `directory`: no path to build, and the kernel
    /// looks up one component, not every one from `/` (a rescan asks this of every file).
    package static func lstat(in directory: Int32, name: UnsafePointer<CChar>) -> (kind: EntryKind, identity: FileIdentity)? {
        var st = stat()
        guard fstatat(directory, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        return (kind(ofMode: st.st_mode), identity(of: st))
    }
}

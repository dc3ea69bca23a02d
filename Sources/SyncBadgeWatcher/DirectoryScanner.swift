#if canImport(Glibc)
import Glibc
#endif
import SyncBadgeCore
import SyncBadgeWatchEvents

/// Walks a directory tree with `readdir`'s `d_type` (no `lstat` per entry unless identities are
/// wanted or the file system does not fill `d_type`), never following links.
enum DirectoryScanner {
    static let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
    /// `d_name`'s 256 bytes (the struct's size counts padding too).
    static let nameCapacity = 256
    /// Scans below `top`. `enter` is called for every directory (the top one included) before
    /// it is read, so a watch added there misses nothing; it receives the directory's path, the
    /// index of its scan entry (-1 for `top`) and its parent's index (-1 for `top`'s children).
    static func scan(_ top: [UInt8], identities: Bool, progress: (Int) -> Void = { _ in },
                     enter: (_ path: [UInt8], _ index: Int32, _ parent: Int32) -> Void) -> ScanTree {
        var tree = ScanTree()
        var stack: [([UInt8], Int32, Int32)] = [(top, -1, -1)]
        while let (dirPath, dirIndex, parentIndex) = stack.popLast() {
            enter(dirPath, dirIndex, parentIndex)
            guard let dir = dirPath.withCString({ opendir($0) }) else { continue }
            defer { closedir(dir) }
            while let ent = readdir(dir) {
                // The name read in place (valid until the next readdir): the scan copies it into
                // its one buffer, with no array per name on the way.
                let namePointer = UnsafeRawPointer(ent) + Self.nameOffset
                let name = UnsafeBufferPointer(start: namePointer.assumingMemoryBound(to: UInt8.self),
                                               count: strnlen(namePointer.assumingMemoryBound(to: CChar.self),
                                                              min(Self.nameCapacity, Int(ent.pointee.d_reclen) - Self.nameOffset)))
                if name.elementsEqual([0x2E]) || name.elementsEqual([0x2E, 0x2E]) { continue }
                var kind: EntryKind
                switch Int32(ent.pointee.d_type) {
                case Int32(DT_REG): kind = .file
                case Int32(DT_DIR): kind = .dir
                case Int32(DT_LNK): kind = .link
                case Int32(DT_UNKNOWN): kind = .other
                default: kind = .other
                }
                var ident: FileIdentity? = nil
                if identities || Int32(ent.pointee.d_type) == Int32(DT_UNKNOWN) {
                    guard let (k, id) = FileStat.lstat(in: dirfd(dir), name: namePointer.assumingMemoryBound(to: CChar.self)) else { continue }
                    kind = k
                    ident = identities && k != .dir ? id : nil
                }
                let index = tree.append(parent: dirIndex, name: name, kind: kind, identity: ident)
                if tree.count % 100_000 == 0 { progress(tree.count) }
                // Only directories need their path: a file's would be built and thrown away.
                if kind == .dir { stack.append((PathBytes.join(dirPath, name), index, dirIndex)) }
            }
        }
        return tree
    }

    static func readFile(_ path: [UInt8], limit: Int = 1 << 20) -> [UInt8]? {
        let fd = path.withCString { open($0, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while out.count < limit {
            let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            out.append(contentsOf: buf[0..<n])
        }
        return out
    }
}

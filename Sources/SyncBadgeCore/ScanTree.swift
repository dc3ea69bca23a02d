/// A file's identity as recorded when it becomes `synced`: a later event changes nothing while
/// this is unchanged (PROTOCOL.md, "The state rules").
public struct FileIdentity: Sendable, Hashable {
    public var inode: UInt64
    public var size: Int64
    public var mtimeNs: Int64
    public var ctimeNs: Int64

    public init(inode: UInt64, size: Int64, mtimeNs: Int64, ctimeNs: Int64) {
        self.inode = inode
        self.size = size
        self.mtimeNs = mtimeNs
        self.ctimeNs = ctimeNs
    }
}

/// A directory's contents as a walk found them, in pre-order so that every parent comes
/// before its children. Produced by the watcher, consumed by the state tree.
public struct ScanTree: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        /// Index of the parent entry, or -1 for a direct child of the scanned directory.
        public var parent: Int32
        public var name: [UInt8]
        public var kind: EntryKind
        public var identity: FileIdentity?

        public init(parent: Int32, name: [UInt8], kind: EntryKind, identity: FileIdentity? = nil) {
            self.parent = parent
            self.name = name
            self.kind = kind
            self.identity = identity
        }
    }

    public var entries: [Entry] = []

    public init(entries: [Entry] = []) {
        self.entries = entries
    }

    @discardableResult
    public mutating func append(parent: Int32, name: [UInt8], kind: EntryKind, identity: FileIdentity? = nil) -> Int32 {
        entries.append(Entry(parent: parent, name: name, kind: kind, identity: identity))
        return Int32(entries.count - 1)
    }

    public var count: Int { entries.count }
}

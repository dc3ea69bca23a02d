/// A directory's contents as a walk found them, in pre-order so that every parent comes
/// before its children. Produced by the watcher, consumed by the state tree.
///
/// The names are in one buffer, not an array each: a walk's names are freed together once the
/// tree has them, and a heap block per name left holes between the blocks the watcher keeps for
/// as long as it watches (PERFORMANCE.md, "Memory per entry").
public struct ScanTree: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        /// Index of the parent entry, or -1 for a direct child of the scanned directory.
        public var parent: Int32
        /// The name's place in `names`.
        var nameStart: UInt32
        var nameCount: UInt32
        public var kind: EntryKind
        public var identity: FileIdentity?
    }

    public private(set) var entries: [Entry] = []
    /// Every entry's name, back to back.
    public private(set) var names: [UInt8] = []

    public init() {}

    @discardableResult
    public mutating func append(parent: Int32, name: some Collection<UInt8>, kind: EntryKind, identity: FileIdentity? = nil) -> Int32 {
        let start = names.count
        names.append(contentsOf: name)
        return appended(parent: parent, from: start, kind: kind, identity: identity)
    }

    /// The same for a name in place (`readdir`'s buffer): one copy, not a generic iteration per
    /// byte across the module boundary.
    @discardableResult
    public mutating func append(parent: Int32, name: UnsafeBufferPointer<UInt8>, kind: EntryKind, identity: FileIdentity? = nil) -> Int32 {
        let start = names.count
        names.append(contentsOf: name)
        return appended(parent: parent, from: start, kind: kind, identity: identity)
    }

    private mutating func appended(parent: Int32, from start: Int, kind: EntryKind, identity: FileIdentity?) -> Int32 {
        entries.append(Entry(parent: parent, nameStart: UInt32(start), nameCount: UInt32(names.count - start),
                             kind: kind, identity: identity))
        return Int32(entries.count - 1)
    }

    /// The name of entry `index`.
    public func name(_ index: Int) -> ArraySlice<UInt8> {
        let e = entries[index]
        return names[Int(e.nameStart)..<Int(e.nameStart) + Int(e.nameCount)]
    }

    public var count: Int { entries.count }
}

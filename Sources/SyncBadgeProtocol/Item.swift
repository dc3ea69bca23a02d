/// What a viewer sees of one path: the fields of an `ITEM` line.
public struct ItemView: Sendable, Equatable {
    public var path: [UInt8]
    /// Reported state: a directory's is its roll-up.
    public var state: SyncState
    public var badge: String
    public var kind: EntryKind
    public var progress: UInt8?
    public var message: String?
    public var gen: UInt64
    /// Descendant counts, on directories only.
    public var counts: StateCounts?

    public init(path: [UInt8], state: SyncState, badge: String, kind: EntryKind, progress: UInt8? = nil,
                message: String? = nil, gen: UInt64, counts: StateCounts? = nil) {
        self.path = path
        self.state = state
        self.badge = badge
        self.kind = kind
        self.progress = progress
        self.message = message
        self.gen = gen
        self.counts = counts
    }
}

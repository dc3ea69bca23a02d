/// One `ITEM` line: what the daemon says of a path, and what a client reads of it.
public struct Item: Sendable, Equatable {
    public var path: [UInt8]
    /// The reported state (a directory's is its roll-up); nil for a path under no root, which
    /// the wire calls `outside`.
    public var state: SyncState?
    public var badge: String
    public var kind: EntryKind
    public var progress: UInt8?
    public var message: String?
    /// Nil only for a path under no root.
    public var gen: UInt64?
    /// Descendant counts, on directories only.
    public var counts: StateCounts?

    public init(path: [UInt8], state: SyncState?, badge: String, kind: EntryKind, progress: UInt8? = nil,
                message: String? = nil, gen: UInt64?, counts: StateCounts? = nil) {
        self.path = path
        self.state = state
        self.badge = badge
        self.kind = kind
        self.progress = progress
        self.message = message
        self.gen = gen
        self.counts = counts
    }

    /// The wire's name for `state`: a state's, or `outside`.
    public static let outsideName = "outside"

    public var stateName: String { state?.name ?? Self.outsideName }

    public var isOutside: Bool { state == nil }

    /// The last component of the path.
    public var name: [UInt8] { Array(PathBytes.lastComponent(path)) }

    /// Reads an `ITEM` line; nil for another kind of line, or one whose state or kind is not
    /// the protocol's. A missing `badge=` is the state's own, a missing `kind=` a file.
    public init?(_ m: WireMessage) {
        guard m.messageKind == .item, m.fields.count >= 2, m.fields[0].isPath else { return nil }
        path = m.fields[0].bytes
        let name = m.fields[1].string
        if name == Self.outsideName {
            state = nil
        } else {
            guard let s = SyncState(name: name) else { return nil }
            state = s
        }
        badge = m.option("badge") ?? name
        guard let k = m.option("kind").map(EntryKind.init(name:)) ?? .file else { return nil }
        kind = k
        progress = m.option("progress").flatMap { UInt8($0) }
        message = m.option("message")
        gen = m.option("gen").flatMap { UInt64($0) }
        counts = m.option("counts").flatMap { StateCounts(wireValue: $0) }
    }
}


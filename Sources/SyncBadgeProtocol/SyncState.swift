/// The sync state of one path (PROTOCOL.md, "States and badges").
public enum SyncState: UInt8, CaseIterable, Sendable, Hashable {
    case unknown = 0, pending, syncing, synced, error, conflict, ignored

    public var name: String {
        switch self {
        case .unknown: "unknown"
        case .pending: "pending"
        case .syncing: "syncing"
        case .synced: "synced"
        case .error: "error"
        case .conflict: "conflict"
        case .ignored: "ignored"
        }
    }

    public init?(name: some StringProtocol) {
        switch name {
        case "unknown": self = .unknown
        case "pending": self = .pending
        case "syncing": self = .syncing
        case "synced": self = .synced
        case "error": self = .error
        case "conflict": self = .conflict
        case "ignored": self = .ignored
        default: return nil
        }
    }

    /// Roll-up rank, worst highest: error > conflict > syncing > pending > unknown > synced.
    /// `ignored` never raises a roll-up, so it has no rank.
    public var rollUpRank: Int? {
        switch self {
        case .synced: 0
        case .unknown: 1
        case .pending: 2
        case .syncing: 3
        case .conflict: 4
        case .error: 5
        case .ignored: nil
        }
    }

    /// States ordered worst first, as roll-up compares them.
    public static let worstFirst: [SyncState] = [.error, .conflict, .syncing, .pending, .unknown, .synced]
}

/// What an entry is on disk, by `lstat`; `gone` marks a tombstone.
public enum EntryKind: UInt8, Sendable, Hashable {
    case file = 0, dir, link, other, gone

    public var name: String {
        switch self {
        case .file: "file"
        case .dir: "dir"
        case .link: "link"
        case .other: "other"
        case .gone: "gone"
        }
    }

    public init?(name: some StringProtocol) {
        switch name {
        case "file": self = .file
        case "dir": self = .dir
        case "link": self = .link
        case "other": self = .other
        case "gone": self = .gone
        default: return nil
        }
    }
}

/// Per-state descendant counts of a directory: every descendant counted once by its own state.
public struct StateCounts: Sendable, Hashable {
    public private(set) var values: (Int32, Int32, Int32, Int32, Int32, Int32, Int32) = (0, 0, 0, 0, 0, 0, 0)

    public init() {}

    public subscript(state: SyncState) -> Int {
        get {
            switch state {
            case .unknown: Int(values.0)
            case .pending: Int(values.1)
            case .syncing: Int(values.2)
            case .synced: Int(values.3)
            case .error: Int(values.4)
            case .conflict: Int(values.5)
            case .ignored: Int(values.6)
            }
        }
        set {
            let v = Int32(newValue)
            switch state {
            case .unknown: values.0 = v
            case .pending: values.1 = v
            case .syncing: values.2 = v
            case .synced: values.3 = v
            case .error: values.4 = v
            case .conflict: values.5 = v
            case .ignored: values.6 = v
            }
        }
    }

    public var total: Int {
        SyncState.allCases.reduce(0) { $0 + self[$1] }
    }

    public var isEmpty: Bool { total == 0 }

    public mutating func add(_ other: StateCounts, times sign: Int = 1) {
        for s in SyncState.allCases where other[s] != 0 {
            self[s] += sign * other[s]
        }
    }

    /// The worst state present, ignoring `ignored`; nil if nothing counts.
    public var worst: SyncState? {
        for s in SyncState.worstFirst where self[s] > 0 {
            return s
        }
        return nil
    }

    /// `counts=` value: `state:n` pairs in state order, zero counts left out.
    public var wireValue: String {
        var parts: [String] = []
        for s in SyncState.allCases where self[s] != 0 {
            parts.append("\(s.name):\(self[s])")
        }
        return parts.joined(separator: ",")
    }

    public static func == (a: StateCounts, b: StateCounts) -> Bool {
        SyncState.allCases.allSatisfy { a[$0] == b[$0] }
    }

    public func hash(into h: inout Hasher) {
        for s in SyncState.allCases { h.combine(self[s]) }
    }

    /// Parses a `counts=` value.
    public init?(wireValue: some StringProtocol) {
        self.init()
        if wireValue.isEmpty { return }
        for part in wireValue.split(separator: ",") {
            let kv = part.split(separator: ":")
            guard kv.count == 2, let s = SyncState(name: kv[0]), let n = Int(kv[1]) else { return nil }
            self[s] = n
        }
    }
}

/// Roll-up of a directory: the worst of its own state and its subtree's; an ignored directory
/// reports `ignored`.
public func rolledUpState(own: SyncState, counts: StateCounts) -> SyncState {
    if own == .ignored { return .ignored }
    guard let below = counts.worst, let ownRank = own.rollUpRank, let belowRank = below.rollUpRank else { return own }
    return belowRank > ownRank ? below : own
}

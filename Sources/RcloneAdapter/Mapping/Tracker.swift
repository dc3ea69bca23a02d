/// The paths whose state is not settled: those the daemon reported changed, and those last shown
/// pending, syncing or in error. Each round looks at these only; a path shown synced leaves.
public struct Tracker: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var gen: UInt64
        /// What the daemon shows now, as far as the adapter knows (nil: not set by it yet).
        public var shown: Verdict?
        /// When the daemon reported the change (nil: listed at start, or after an action).
        public var changedAt: ContinuousClock.Instant?
    }
    public private(set) var entries: [String: Entry] = [:]

    public init() {}

    public var names: [String] { entries.keys.sorted() }
    public var isEmpty: Bool { entries.isEmpty }

    /// A change from the daemon's feed (or its `CHANGES` list): the path's newest generation.
    public mutating func changed(_ name: String, gen: UInt64, at time: ContinuousClock.Instant? = nil) {
        if let e = entries[name], e.gen > gen { return }
        entries[name] = Entry(gen: gen, shown: nil, changedAt: time ?? entries[name]?.changedAt)
    }

    public mutating func forget(_ name: String) { entries[name] = nil }

    public mutating func removeAll() { entries.removeAll() }

    /// A round's verdicts: the `SET`s that change what is shown, each with the generation it
    /// was decided for (so a write after it makes it stale). Settled paths leave the tracker.
    public mutating func apply(_ verdicts: [String: Verdict]) -> [(name: String, gen: UInt64, verdict: Verdict)] {
        var out: [(String, UInt64, Verdict)] = []
        for name in names {
            guard let v = verdicts[name], var e = entries[name] else { continue }
            if e.shown != v { out.append((name, e.gen, v)) }
            e.shown = v
            if case .synced = v { entries[name] = nil } else { entries[name] = e }
        }
        return out
    }

    /// A `SET` came back stale: a newer change is on its way in the feed.
    public mutating func stale(_ name: String) {
        entries[name]?.shown = nil
    }
}

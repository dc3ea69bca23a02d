/// Where one event subscription stands, and whether what came back can be trusted to follow
/// on from what came before. Syncthing numbers events per subscription mask from 1 at each
/// start and keeps only the last 1,000: a restart or a gap means events were lost, and every
/// state is rebuilt from `/rest/db/*` instead.
public struct EventCursor: Sendable, Equatable {
    public private(set) var lastID = 0
    public private(set) var startTime: String?

    public enum Verdict: Sendable, Equatable {
        /// The events follow on: apply them.
        case inOrder
        /// Syncthing restarted (another start time, or ids that went back).
        case restarted
        /// Events between `lastID` and the first one returned were dropped from the buffer.
        case gap(missed: Int)
    }

    public init() {}

    /// What a new start time (from `/rest/system/status`) says. The first one seen is no restart.
    public mutating func started(at time: String) -> Verdict {
        defer { startTime = time }
        guard let startTime, startTime != time else { return .inOrder }
        lastID = 0
        return .restarted
    }

    /// A batch of event ids as returned for `since=lastID`.
    public mutating func received(ids: [Int]) -> Verdict {
        guard let first = ids.first, let last = ids.last else { return .inOrder }
        defer { lastID = last }
        if first <= lastID { return .restarted }
        // The first batch after a (re)start begins wherever Syncthing's buffer begins; only a
        // cursor that had seen events can tell that some went missing.
        if lastID > 0 && first > lastID + 1 { return .gap(missed: first - lastID - 1) }
        return .inOrder
    }

    /// Starts over (a rebuild): the next batch is taken as it comes.
    public mutating func reset() { lastID = 0 }

    /// After a rebuild, events up to `id` are covered by the rebuild itself.
    public mutating func skip(to id: Int) { lastID = id }
}

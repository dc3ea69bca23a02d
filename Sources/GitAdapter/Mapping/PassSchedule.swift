/// When one repository's next pass runs, and which: a rebuild after each claim (everything the
/// daemon holds, listed again), a full pass (`git status` of the whole tree) when git's own
/// files changed, or an incremental one (`git status -- <paths>`) for the paths the daemon
/// reported. No timer is armed while nothing is due: `wake` is nil.
public struct PassSchedule: Sendable, Equatable {
    public enum Pass: Sendable, Equatable {
        case rebuild, full, incremental
    }

    /// A watcher's wake-up waits this long for the rest of git's writes before the full pass.
    public static let settle = Duration.milliseconds(30)
    /// More changed paths than this make a full pass instead of `git status -- <paths>`.
    public static let incrementalLimit = 256

    /// The daemon accepted this connection's claim.
    public private(set) var claimed = false
    /// Listed and reconciled since the last claim.
    public private(set) var built = false
    public private(set) var needsFull = true
    /// When a full pass asked for by the watcher runs: a burst of git's writes settles first.
    public private(set) var fullAt: ContinuousClock.Instant?
    /// Paths the daemon reported changed, with their generation (nil: to be asked).
    public private(set) var dirty: [[UInt8]: UInt64?] = [:]

    public init() {}

    /// A claim is being made, or the connection is gone: nothing counts until a rebuild.
    public mutating func unclaimed() {
        claimed = false
        built = false
    }

    public mutating func claimAccepted() { claimed = true }

    /// `* RESET-CHANGES`: changes were dropped, so the tree is listed again.
    public mutating func changesLost() { built = false }

    /// A path the daemon reported changed (a move's old path: `gen` nil, to be asked).
    public mutating func changed(_ rel: [UInt8], gen: UInt64?) {
        dirty.updateValue(gen, forKey: rel)
    }

    /// `settle`: the watcher saw git write; the pass waits for the rest of its writes.
    public mutating func requestFull(settle: Bool, now: ContinuousClock.Instant) {
        if !needsFull { fullAt = settle ? now + Self.settle : now }
        needsFull = true
    }

    /// A push or pull ended: its refs are read at once, even if the watcher asked to settle.
    public mutating func fullNow(_ now: ContinuousClock.Instant) {
        requestFull(settle: false, now: now)
        fullAt = now
    }

    /// The pass due at `now`, if any.
    public func next(now: ContinuousClock.Instant) -> Pass? {
        guard claimed else { return nil }
        if !built { return .rebuild }
        if needsFull { return (fullAt ?? now) <= now ? .full : nil }
        if dirty.isEmpty { return nil }
        // The top level itself changed (its attributes): a full pass, not a pathspec of "".
        return dirty.count > Self.incrementalLimit || dirty.keys.contains([]) ? .full : .incremental
    }

    /// When the next pass is due (nil: none is).
    public func wake(now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        guard claimed else { return nil }
        if needsFull || !built { return fullAt ?? now }
        return dirty.isEmpty ? nil : now
    }

    /// The rebuild listed the tree: what was reported before is in the listing; a full pass follows.
    public mutating func rebuilt() {
        built = true
        dirty = [:]
        needsFull = true
        fullAt = nil
    }

    /// A full or incremental pass starts: the paths it covers.
    public mutating func take(full: Bool) -> [[UInt8]: UInt64?] {
        if full {
            needsFull = false
            fullAt = nil
        }
        defer { dirty = [:] }
        return dirty
    }
}

/// When the watcher must look again by itself, because inotify cannot tell it: after queue
/// overflows (rescans, backed off when they repeat), for roots over the watch limit (periodic
/// rescans with backoff until every directory is watched again), for vanished roots (a check
/// with backoff, besides a watch on the nearest ancestor that sees most returns at once), and
/// for an ignore file whose writer's close never came.
///
/// Empty while all is well: then the watcher thread blocks with no timeout at all. No I/O and
/// no clock of its own: every event takes `now`, and `takeDue(now:)` hands back the work that
/// is due for `WatcherLoop` to do.
struct RecoveryTimers {
    enum Reason: Equatable { case overflow, degraded }

    struct Due: Equatable {
        var at: ContinuousClock.Instant
        var delay: Duration
    }

    /// The work due at a given time, taken off the timers, in the order it is done.
    struct DueWork: Equatable {
        /// Rescans in path order.
        var rescans: [(path: [UInt8], reason: Reason)] = []
        /// Vanished roots to check, each with the delay that led to this check.
        var returnChecks: [(path: [UInt8], delay: Duration)] = []
        /// Roots whose ignore file is to be read now.
        var ignoreFileReads: [[UInt8]] = []

        var isEmpty: Bool { rescans.isEmpty && returnChecks.isEmpty && ignoreFileReads.isEmpty }

        static func == (a: DueWork, b: DueWork) -> Bool {
            a.rescans.map(\.path) == b.rescans.map(\.path) && a.rescans.map(\.reason) == b.rescans.map(\.reason)
                && a.returnChecks.map(\.path) == b.returnChecks.map(\.path)
                && a.returnChecks.map(\.delay) == b.returnChecks.map(\.delay)
                && a.ignoreFileReads == b.ignoreFileReads
        }
    }

    private(set) var rescans: [[UInt8]: (due: ContinuousClock.Instant, reason: Reason)] = [:]
    private(set) var returnChecks: [[UInt8]: Due] = [:]
    /// The wait before a degraded root's next rescan, doubling up to `maxDegradedDelay`.
    private(set) var degradedDelay: [[UInt8]: Duration] = [:]
    /// Roots whose ignore file was created and whose writer's close has not come yet: read
    /// then anyway, for a file that no writer will close under that name (see
    /// `WatcherLoop.ignoreFileIsFinal`).
    private(set) var ignoreFileReads: [[UInt8]: ContinuousClock.Instant] = [:]
    private var lastOverflow: ContinuousClock.Instant?
    private var overflowDelay: Duration = .zero

    static let firstDegradedDelay = Duration.seconds(2)
    static let maxDegradedDelay = Duration.seconds(30)
    static let firstReturnDelay = Duration.seconds(1)
    static let maxReturnDelay = Duration.seconds(30)
    /// Overflows closer together than this count as a storm and back off.
    static let overflowStormWindow = Duration.seconds(10)
    static let maxOverflowDelay = Duration.seconds(16)
    static let ignoreFileReadDelay = Duration.seconds(1)

    var isEmpty: Bool { rescans.isEmpty && returnChecks.isEmpty && ignoreFileReads.isEmpty }

    // MARK: Overflows and degraded roots

    /// The kernel queue overflowed: every root in `roots` is rescanned, now or, when overflows
    /// repeat, after a backoff (a storm that overflows the queue would overflow it again during
    /// each rescan). Returns the wait.
    mutating func overflowed(roots: some Sequence<[UInt8]>, now: ContinuousClock.Instant) -> Duration {
        if let last = lastOverflow, now - last < Self.overflowStormWindow {
            overflowDelay = min(max(overflowDelay * 2, .seconds(1)), Self.maxOverflowDelay)
        } else {
            overflowDelay = .zero
        }
        lastOverflow = now
        for path in roots { schedule(rescanOf: path, in: overflowDelay, reason: .overflow, now: now) }
        return overflowDelay
    }

    /// An overflow rescan also serves a degraded one, so it wins; the earlier time wins.
    mutating func schedule(rescanOf path: [UInt8], in delay: Duration, reason: Reason, now: ContinuousClock.Instant) {
        let due = now + delay
        if let old = rescans[path] {
            rescans[path] = (min(old.due, due), old.reason == .overflow || reason == .overflow ? .overflow : .degraded)
        } else {
            rescans[path] = (due, reason)
        }
    }

    /// After a root was watched or scanned: a degraded root (over the watch limit) gets its
    /// next rescan unless one is pending, each one later than the last. Returns true when a
    /// root that was degraded is not any more (it recovered).
    mutating func rootChecked(_ path: [UInt8], degraded: Bool, now: ContinuousClock.Instant) -> Bool {
        guard degraded else { return degradedDelay.removeValue(forKey: path) != nil }
        guard rescans[path] == nil else { return false }
        let delay = degradedDelay[path] ?? Self.firstDegradedDelay
        degradedDelay[path] = min(delay * 2, Self.maxDegradedDelay)
        schedule(rescanOf: path, in: delay, reason: .degraded, now: now)
        return false
    }

    /// A root stopped being watched: its rescans are off.
    mutating func rootUnwatched(_ path: [UInt8]) {
        rescans.removeValue(forKey: path)
        degradedDelay.removeValue(forKey: path)
    }

    // MARK: Vanished roots

    /// A vanished (or missing) root is checked after `delay`.
    mutating func awaitReturn(_ path: [UInt8], delay: Duration = Self.firstReturnDelay, now: ContinuousClock.Instant) {
        returnChecks[path] = Due(at: now + delay, delay: delay)
    }

    /// The wait after a check that found a root still gone: twice the last, up to a maximum.
    static func nextReturnDelay(after delay: Duration) -> Duration {
        min(delay * 2, maxReturnDelay)
    }

    mutating func stopAwaitingReturn(_ path: [UInt8]) {
        returnChecks.removeValue(forKey: path)
    }

    /// Something happened where a vanished root was (its sentinel saw an entry appear): check
    /// it now, and back off from the start again.
    mutating func checkReturnSoon(_ path: [UInt8], now: ContinuousClock.Instant) {
        returnChecks[path] = Due(at: now, delay: Self.firstReturnDelay)
    }

    /// The mounts changed: every vanished root is checked now, keeping its backoff.
    mutating func checkEveryReturnNow(now: ContinuousClock.Instant) {
        for path in returnChecks.keys { returnChecks[path]?.at = now }
    }

    // MARK: Ignore files

    /// A root's ignore file was created by open(2): its writer's close is expected, but should
    /// none come under this name it is read after `ignoreFileReadDelay` anyway.
    mutating func ignoreFileCreated(root: [UInt8], now: ContinuousClock.Instant) {
        ignoreFileReads[root] = now + Self.ignoreFileReadDelay
    }

    /// The root's ignore file was read (or the root removed): no later read is due.
    mutating func ignoreFileRead(root: [UInt8]) {
        ignoreFileReads.removeValue(forKey: root)
    }

    // MARK: Due work

    /// Takes off everything due at `now`. A return check is taken off too: the caller either
    /// awaits the root's return again (`awaitReturn`) or has it back.
    mutating func takeDue(now: ContinuousClock.Instant) -> DueWork {
        var work = DueWork()
        guard !isEmpty else { return work }
        for (path, r) in rescans.filter({ $0.value.due <= now }).sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            rescans.removeValue(forKey: path)
            work.rescans.append((path, r.reason))
        }
        for (path, check) in returnChecks.filter({ $0.value.at <= now }).sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            returnChecks.removeValue(forKey: path)
            work.returnChecks.append((path, check.delay))
        }
        for (root, _) in ignoreFileReads.filter({ $0.value <= now }).sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            ignoreFileReads.removeValue(forKey: root)
            work.ignoreFileReads.append(root)
        }
        return work
    }

    /// Whole seconds until the next due work (libinotifytools' timeout unit), rounded up;
    /// -1 (block) when there is none.
    func secondsUntilDue(now: ContinuousClock.Instant) -> Int {
        let dues = rescans.values.map(\.due) + returnChecks.values.map(\.at) + Array(ignoreFileReads.values)
        guard let next = dues.min() else { return -1 }
        let left = next - now
        if left <= .zero { return 0 }
        let (seconds, attoseconds) = left.components
        return Int(seconds) + (attoseconds > 0 ? 1 : 0)
    }
}

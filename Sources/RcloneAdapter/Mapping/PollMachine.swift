/// When to ask rclone: only while it has uploads queued or running, or a change from the
/// daemon may have queued one. At idle nothing is scheduled at all. The swift-nio style: one
/// `mutating func` per event, each returning what to do.
public struct PollMachine: Sendable, Equatable {
    public enum State: Sendable, Equatable {
        /// The mount point is not rclone's mount (or not yet): nothing to ask.
        case unmounted
        /// Nothing to upload: no timer.
        case idle
        /// A round of rc calls is running; `again`: a change came meanwhile, so the round's
        /// answer may predate it; `failures`: rounds that failed in a row before this one.
        case polling(again: Bool, failures: Int = 0)
        /// Waiting for the next round.
        case waiting
        /// rc did not answer: retried with backoff while the mount is there.
        case unreachable(failures: Int)
    }

    public enum Action: Sendable, Equatable {
        case none
        /// Start a round of rc calls now.
        case poll
        /// Start a round after this long (the only timer, armed only in these states).
        case pollAfter(Duration)
        /// The mount came (back): claim the root and rebuild every file's state, then poll.
        case claimAndPoll
        /// The mount went away: give the root up.
        case unclaim
    }

    /// While uploads run: often enough for progress, and for `synced` soon after rclone ends
    /// (within 1 s on rclone before 1.68, where a round also reads the cache's metadata).
    public static let busyInterval = Duration.milliseconds(250)
    /// The same with `vfs/queue` (1.68 and later), where a finished upload leaves the queue and
    /// the next round marks it synced: half the 200 ms that may pass from rclone finishing to
    /// `synced`, the other half left for the round itself.
    public static let queueInterval = Duration.milliseconds(100)
    /// While only failed uploads wait for rclone's own retry.
    public static let retryInterval = Duration.seconds(2)

    public private(set) var state: State = .unmounted
    /// Whether rclone answers `vfs/queue`: rounds are cheaper and come more often then.
    public var perFileQueue = false

    public init() {}

    public mutating func mounted() -> Action {
        guard case .unmounted = state else { return .none }
        state = .polling(again: false)
        return .claimAndPoll
    }

    public mutating func unmounted() -> Action {
        if case .unmounted = state { return .none }
        state = .unmounted
        return .unclaim
    }

    /// The daemon reported a change under the mount.
    public mutating func changed() -> Action {
        switch state {
        case .idle:
            state = .polling(again: false)
            return .poll
        case .polling(_, let failures):
            state = .polling(again: true, failures: failures)
            return .none
        case .unmounted, .waiting, .unreachable:
            // The round already scheduled sees it.
            return .none
        }
    }

    /// The scheduled time came.
    public mutating func timerFired() -> Action {
        switch state {
        case .waiting:
            state = .polling(again: false)
            return .poll
        case .unreachable(let n):
            state = .polling(again: false, failures: n)
            return .poll
        case .unmounted, .idle, .polling:
            return .none
        }
    }

    /// A round answered. `busy`: rclone has uploads left; `onlyRetries`: those are failed ones
    /// waiting for rclone's retry.
    public mutating func polled(busy: Bool, onlyRetries: Bool = false) -> Action {
        guard case .polling(let again, _) = state else { return .none }
        if again {
            state = .polling(again: false)
            return .poll
        }
        guard busy else {
            state = .idle
            return .none
        }
        state = .waiting
        return .pollAfter(onlyRetries ? Self.retryInterval : perFileQueue ? Self.queueInterval : Self.busyInterval)
    }

    /// A round failed: rc did not answer.
    public mutating func pollFailed() -> Action {
        guard case .polling(_, let failures) = state else { return .none }
        state = .unreachable(failures: failures + 1)
        return .pollAfter(Self.backoff(failures + 1))
    }

    /// 0.25 s, doubled per failure, at most 10 s.
    static func backoff(_ failures: Int) -> Duration {
        .milliseconds(min(10_000, 250 << min(failures - 1, 6)))
    }
}

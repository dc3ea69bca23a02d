/// When an adapter connects to the daemon again, and whether to say so: one warning when the
/// daemon goes away, one notice when it is back, and a backoff from 50 ms to 2 s between tries,
/// with no timer while connected. The git adapter's loop and the provider channel of the
/// Syncthing and rclone adapters both follow it.
public struct Reconnect: Sendable, Equatable {
    public static let first = Duration.milliseconds(50)
    public static let longest = Duration.seconds(2)

    public private(set) var retryAt: ContinuousClock.Instant?
    public private(set) var backoff = Self.first
    /// The warning was said and the notice that it is back is owed.
    public private(set) var saidLost = false

    public init() {}

    /// Whether to try now (at start, or once the backoff is over).
    public func due(now: ContinuousClock.Instant) -> Bool { retryAt.map { now >= $0 } ?? true }

    /// The connection failed or went away. True when this is news, to be said.
    public mutating func lost(now: ContinuousClock.Instant) -> Bool {
        defer { saidLost = true }
        retryAt = now + backoff
        backoff = min(backoff * 2, Self.longest)
        return !saidLost
    }

    /// The adapter closed the connection itself (a claim it cannot undo): connect again at once.
    public mutating func dropped() { retryAt = nil }

    /// Connected. True when it had been lost, to say it is back.
    public mutating func connected() -> Bool {
        defer { saidLost = false }
        backoff = Self.first
        retryAt = nil
        return saidLost
    }
}

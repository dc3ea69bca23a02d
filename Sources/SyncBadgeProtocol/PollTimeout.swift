/// Milliseconds for `poll` until a deadline, rounded up so that it has passed on waking; -1 (no
/// timeout) without one. In the lowest module, so that the daemon's watcher and the adapters'
/// loops share it.
public enum PollTimeout {
    public static func milliseconds(until deadline: ContinuousClock.Instant?, now: ContinuousClock.Instant) -> Int32 {
        guard let deadline else { return -1 }
        let left = deadline - now
        let ms = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000
        return Int32(clamping: max(0, ms + 1))
    }
}

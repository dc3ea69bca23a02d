/// Barriers waiting for their touch of the barrier file to come back, oldest group first.
///
/// One inotify instance reports in order, so the touch's event proves that every event queued
/// before it was read: the barriers asked for before the touch are released then. The barrier
/// file is touched by the watcher thread only, so each of its events is one of these touches.
/// No I/O: `WatcherLoop` touches the file when `asked` says so.
struct BarrierQueue {
    private(set) var held: [[UInt64]] = []

    /// Barriers asked for since the last commands were run. Returns true when the barrier
    /// file must be touched for them.
    mutating func asked(_ tokens: [UInt64]) -> Bool {
        guard !tokens.isEmpty else { return false }
        held.append(tokens)
        return true
    }

    /// A touch of the barrier file came back: the oldest group's tokens are released.
    mutating func touchSeen() -> [UInt64] {
        held.isEmpty ? [] : held.removeFirst()
    }
}

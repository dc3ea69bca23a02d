#if canImport(Glibc)
import Glibc
#endif
import SyncBadgeProtocol

/// One `poll` over the adapter's descriptors until the earliest deadline, with no timeout when
/// there is none: nothing wakes the adapter while it is idle.
struct PollSet {
    private(set) var fds: [pollfd] = []
    private(set) var deadline: ContinuousClock.Instant?

    /// Watches `fd` for input; returns its index, for `ready`.
    @discardableResult
    mutating func add(_ fd: Int32) -> Int {
        fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0))
        return fds.count - 1
    }

    mutating func wake(at t: ContinuousClock.Instant?) {
        guard let t else { return }
        deadline = deadline.map { min($0, t) } ?? t
    }

    /// False when `poll` failed (a signal): nothing is ready.
    mutating func wait() -> Bool {
        poll(&fds, nfds_t(fds.count), PollTimeout.milliseconds(until: deadline, now: .now)) >= 0
    }

    func ready(_ i: Int) -> Bool { fds[i].revents != 0 }
}

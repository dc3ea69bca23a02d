import NIOCore

/// One of the hub's timers: armed only while something waits for it, so that an idle daemon
/// has none. The owners say when (a deadline, as `SyncingReleases.nextDeadlineMs` or
/// `ActionReplies.nextDeadline` do); the hub schedules the task and keeps it here with the
/// deadline it was armed for, so that asking again for the same deadline changes nothing.
struct Alarm<Deadline: Equatable> {
    private var armed: (task: Scheduled<Void>, at: Deadline)?

    var isArmed: Bool { armed != nil }

    /// Armed already, for exactly this deadline.
    func isArmed(for deadline: Deadline) -> Bool { armed?.at == deadline }

    mutating func arm(_ task: Scheduled<Void>, at deadline: Deadline) {
        armed?.task.cancel()
        armed = (task, deadline)
    }

    mutating func cancel() {
        armed?.task.cancel()
        armed = nil
    }

    /// It fired: nothing is armed any more.
    mutating func fired() {
        armed = nil
    }
}

extension Alarm {
    /// Armed for `deadline`, or disarmed when it is nil: asking again for the deadline it is
    /// armed for changes nothing; another re-arms it with the task `schedule` makes.
    mutating func keep(_ deadline: Deadline?, _ schedule: (Deadline) -> Scheduled<Void>) {
        if let deadline, isArmed(for: deadline) { return }
        cancel()
        guard let deadline else { return }
        arm(schedule(deadline), at: deadline)
    }
}

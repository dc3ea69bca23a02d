/// Pairs inotify's two halves of a rename: `IN_MOVED_FROM` in the old directory and
/// `IN_MOVED_TO` in the new one, with the same cookie, queued one after the other (mostly with
/// nothing between them).
///
/// A departure waits for its arrival only until the next event, or for `arrivalGrace` once the
/// queue is empty: an event that is not its partner, or the end of the grace, means the entry
/// left every watched directory. The kernel queues a rename's halves one after the other, not at
/// once (inotify(7), "Dealing with rename() events"): a renaming process preempted between them
/// leaves the queue empty meanwhile, and on a loaded machine that lasts milliseconds. An arrival
/// with no departure came from outside. No I/O and no clock of its own: `WatcherLoop` feeds it
/// events and the time, and performs what it returns.
struct MovePairing {
    /// An entry moved away from a watched directory, waiting for its arrival.
    struct Departure: Equatable {
        var cookie: UInt32
        var path: [UInt8]
        var isDir: Bool
        /// The directory's watch, when it was watched: the watch moves with it.
        var wd: Int32?
    }

    /// What an `IN_MOVED_TO` is, once paired (or not).
    enum Arrival: Equatable {
        /// From outside every watched directory (or its departure was already given up): new here.
        case appeared
        /// A file, link or other entry renamed within the watched tree.
        case fileRenamed(from: [UInt8])
        /// A watched directory renamed within: its watch, and its subtree's, follow it.
        case directoryRenamed(from: [UInt8], wd: Int32)
        /// A directory that was not watched where it was (the watch limit): gone there, new here.
        case directoryReplaced(from: [UInt8])
    }

    /// What an empty queue means for a waiting departure.
    enum Drained: Equatable {
        /// No departure waits.
        case nothing
        /// Wait for more events until then (the departure's arrival may not be queued yet).
        case waitUntil(ContinuousClock.Instant)
        /// The grace is over: the entry moved out of every watched directory.
        case movedOut(Departure)
    }

    /// How long an empty queue may wait for a departure's arrival. Long enough for a renaming
    /// process preempted between the two halves to run again on a busy machine (a scheduler
    /// slice is a few milliseconds); short enough that a move out is seen at once. An event
    /// that comes ends the wait early.
    static let arrivalGrace = Duration.milliseconds(50)

    private(set) var waiting: Departure? {
        didSet { graceEnds = nil }
    }
    /// When the grace of the waiting departure ends, once the queue was found empty.
    private var graceEnds: ContinuousClock.Instant?

    var isWaiting: Bool { waiting != nil }

    /// Before each event is handled: a waiting departure that this event does not pair with
    /// left every watched directory, and is returned to be treated as deleted.
    mutating func eventArrived(isMovedTo: Bool, cookie: UInt32) -> Departure? {
        guard let w = waiting, !(isMovedTo && cookie == w.cookie) else { return nil }
        waiting = nil
        return w
    }

    /// `IN_MOVED_FROM`: waits for its partner.
    mutating func movedFrom(_ departure: Departure) {
        waiting = departure
    }

    /// `IN_MOVED_TO` of a directory entry (`isDir`) with `cookie`.
    mutating func movedTo(cookie: UInt32) -> Arrival {
        guard let w = waiting, w.cookie == cookie else { return .appeared }
        waiting = nil
        guard w.isDir else { return .fileRenamed(from: w.path) }
        if let wd = w.wd { return .directoryRenamed(from: w.path, wd: wd) }
        return .directoryReplaced(from: w.path)
    }

    /// Nothing more is queued at `now`: wait for the departure's arrival until the grace ends
    /// (counted from the first time the queue is found empty), then it moved out.
    mutating func queueDrained(now: ContinuousClock.Instant) -> Drained {
        guard let w = waiting else { return .nothing }
        if let end = graceEnds {
            guard now >= end else { return .waitUntil(end) }
            waiting = nil
            return .movedOut(w)
        }
        let end = now + Self.arrivalGrace
        graceEnds = end
        return .waitUntil(end)
    }
}

/// Pairs inotify's two halves of a rename: `IN_MOVED_FROM` in the old directory and
/// `IN_MOVED_TO` in the new one, with the same cookie, queued one right after the other.
///
/// A departure waits for its arrival only until the next event: one that is not its partner, or
/// an empty queue, means the entry left every watched directory. An arrival with no departure
/// came from outside. No I/O: `WatcherLoop` feeds it events and performs what it returns.
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

    private(set) var waiting: Departure?

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

    /// Nothing more is queued: a waiting departure moved out of every watched directory.
    mutating func queueDrained() -> Departure? {
        defer { waiting = nil }
        return waiting
    }
}

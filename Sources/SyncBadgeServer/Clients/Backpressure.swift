import SyncBadgeCore

/// What a connection that reads too slowly misses, and what it gets once it catches up
/// (PROTOCOL.md: `* RESET`, `* RESET-CHANGES`). While its output is over the cap, pushes are
/// dropped rather than held: an observed directory's become one `* RESET <dir>`, a root's
/// change feed one `* RESET-CHANGES <root>`, and `* ROOT` / `* BADGE` lines only their latest
/// version. So a client that never reads costs a few set entries, not its whole backlog.
struct Backpressure {
    /// What one push is about.
    enum Push: Hashable {
        /// An `ITEM` or `GONE` for an observed directory (nil: the client observes only the
        /// entry itself, so there is no directory to reset).
        case observed(StateTree.NodeID?)
        case change(root: [UInt8])
        case root([UInt8])
        case badge(String)
        /// A provider's `* TOOLBAR` line, by provider name.
        case toolbar(String)
    }

    /// What to send once the client reads again.
    enum CatchUp: Equatable {
        case root([UInt8])
        case badge(String)
        case toolbar(String)
        case reset(StateTree.NodeID)
        case resetChanges(root: [UInt8])
    }

    private var roots: Set<[UInt8]> = []
    private var badges: Set<String> = []
    private var toolbars: Set<String> = []
    private var observed: Set<StateTree.NodeID> = []
    private var changes: Set<[UInt8]> = []

    var hasMissed: Bool { !roots.isEmpty || !badges.isEmpty || !toolbars.isEmpty || !observed.isEmpty || !changes.isEmpty }

    /// A push is due: whether to write it now (false: dropped, remembered for the catch-up).
    mutating func push(_ push: Push, backedUp: Bool) -> Bool {
        guard backedUp else { return true }
        switch push {
        case .observed(let node?): observed.insert(node)
        // The `GONE` of a directory whose observation just ended: nothing could replace it.
        case .observed(nil): return true
        case .change(let root): changes.insert(root)
        case .root(let root): roots.insert(root)
        case .badge(let id): badges.insert(id)
        case .toolbar(let name): toolbars.insert(name)
        }
        return false
    }

    /// The observed directory went away: nothing to reset.
    mutating func removed(_ node: StateTree.NodeID) {
        observed.remove(node)
    }

    /// The client reads again: the latest `ROOT` and `BADGE` lines, then a `RESET` for each
    /// directory it still observes and a `RESET-CHANGES` for each feed it still follows.
    mutating func caughtUp(observing: (StateTree.NodeID) -> Bool, subscribed: ([UInt8]) -> Bool) -> [CatchUp] {
        var out: [CatchUp] = roots.sorted { $0.lexicographicallyPrecedes($1) }.map { .root($0) }
        out += badges.sorted().map { .badge($0) }
        out += toolbars.sorted().map { .toolbar($0) }
        out += observed.sorted().filter(observing).map { .reset($0) }
        out += changes.sorted { $0.lexicographicallyPrecedes($1) }.filter(subscribed).map { .resetChanges(root: $0) }
        self = Backpressure()
        return out
    }
}

import SyncBadgeCore

/// What a connection that reads too slowly misses, and what it gets once it catches up
/// (PROTOCOL.md: `* RESET`, `* RESET-CHANGES`). While its output is over the cap, pushes are
/// dropped rather than held: an observed directory's become one `* RESET <dir>`, the
/// directory's own `ITEM` its latest version (the `LIST` a `RESET` brings holds only its
/// children), a root's change feed one `* RESET-CHANGES <root>`, and `* ROOT` / `* BADGE` lines
/// only their latest version. So a client that never reads costs a few set entries, not its whole backlog.
struct Backpressure {
    /// What one push is about.
    enum Push: Hashable {
        /// An `ITEM` or `GONE` for an observed directory (nil: the client observes only the
        /// entry itself, so there is no directory to reset).
        case observed(StateTree.NodeID?)
        /// An observed directory's own `ITEM`, to a client that does not observe its parent
        /// (whose listing would hold it).
        case own(StateTree.NodeID)
        case change(root: [UInt8])
        case root([UInt8])
        case badge(String)
        /// A provider's `* TOOLBAR` line, by provider name.
        case toolbar(String)

        /// Whether a client over the cap loses it (to a catch-up line): all but the `GONE` of
        /// an observation that just ended.
        var droppable: Bool {
            if case .observed(nil) = self { return false }
            return true
        }
    }

    /// What to send once the client reads again.
    enum CatchUp: Equatable {
        case root([UInt8])
        case badge(String)
        case toolbar(String)
        /// The directory's own `ITEM`, as it is now.
        case item(StateTree.NodeID)
        case reset(StateTree.NodeID)
        case resetChanges(root: [UInt8])
    }

    private var roots: Set<[UInt8]> = []
    private var badges: Set<String> = []
    private var toolbars: Set<String> = []
    private var observed: Set<StateTree.NodeID> = []
    private var own: Set<StateTree.NodeID> = []
    private var changes: Set<[UInt8]> = []

    var hasMissed: Bool { !roots.isEmpty || !badges.isEmpty || !toolbars.isEmpty || !observed.isEmpty || !own.isEmpty || !changes.isEmpty }

    /// A push is due: whether to write it now (false: dropped, remembered for the catch-up).
    mutating func push(_ push: Push, backedUp: Bool) -> Bool {
        guard backedUp, push.droppable else { return true }
        switch push {
        case .observed(let node): if let node { observed.insert(node) }
        case .own(let node): own.insert(node)
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
        own.remove(node)
    }

    /// The client reads again: the latest `ROOT` and `BADGE` lines, then, for each directory it
    /// still observes, its own `ITEM` and a `RESET`, and a `RESET-CHANGES` for each feed it
    /// still follows.
    mutating func caughtUp(observing: (StateTree.NodeID) -> Bool, subscribed: ([UInt8]) -> Bool) -> [CatchUp] {
        var out: [CatchUp] = roots.sorted { $0.lexicographicallyPrecedes($1) }.map { .root($0) }
        out += badges.sorted().map { .badge($0) }
        out += toolbars.sorted().map { .toolbar($0) }
        out += own.sorted().filter(observing).map { .item($0) }
        out += observed.sorted().filter(observing).map { .reset($0) }
        out += changes.sorted { $0.lexicographicallyPrecedes($1) }.filter(subscribed).map { .resetChanges(root: $0) }
        self = Backpressure()
        return out
    }
}

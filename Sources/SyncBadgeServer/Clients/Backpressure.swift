import SyncBadgeCore

/// What a connection that reads too slowly misses, and what it gets once it catches up
/// (PROTOCOL.md: `* RESET`, `* RESET-CHANGES`). While its output is over the cap, pushes are
/// dropped rather than held: an observed directory's become one `* RESET <dir>`, the
/// directory's own `ITEM` its latest version (the `LIST` a `RESET` brings holds only its
/// children), a root's change feed one `* RESET-CHANGES <root>`, and `* ROOT` / `* BADGE`
/// lines only their latest version. So a client that never reads costs a few set entries, not
/// its whole backlog.
struct Backpressure {
    /// What one push is about.
    enum Push: Hashable {
        /// An `ITEM` or `GONE` of an entry of an observed directory; nil: the `GONE` of an
        /// observed directory itself, to a client that does not observe its parent: the
        /// observation ends with it, and nothing can stand in for it.
        case observed(StateTree.NodeID?)
        /// An observed directory's own `ITEM`, to its observers (also when they observe its
        /// parent: they may stop observing either before they read again).
        case own(StateTree.NodeID, parent: StateTree.NodeID)
        case change(root: [UInt8])
        case root([UInt8])
        case badge(String)
        /// A provider's `* TOOLBAR` line, by provider name.
        case toolbar(String)

        /// Whether a client over the cap loses it (to a catch-up line): all but an observed
        /// directory's `GONE` to a client that does not observe its parent.
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
        /// The directory's own `ITEM`, as it is now (if it is still the entry of that parent).
        case item(StateTree.NodeID, parent: StateTree.NodeID)
        case reset(StateTree.NodeID)
        case resetChanges(root: [UInt8])
    }

    private var roots: Set<[UInt8]> = []
    private var badges: Set<String> = []
    private var toolbars: Set<String> = []
    private var observed: Set<StateTree.NodeID> = []
    /// Directories whose own `ITEM` was dropped, with their parents.
    private var own: [StateTree.NodeID: StateTree.NodeID] = [:]
    private var changes: Set<[UInt8]> = []

    var hasMissed: Bool { !roots.isEmpty || !badges.isEmpty || !toolbars.isEmpty || !observed.isEmpty || !own.isEmpty || !changes.isEmpty }

    /// A push is due: whether to write it now (false: dropped, remembered for the catch-up).
    mutating func push(_ push: Push, backedUp: Bool) -> Bool {
        guard backedUp else { return true }
        switch push {
        case .observed(let node?): observed.insert(node)
        case .observed(nil): return true
        case .own(let node, let parent): own[node] = parent
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
        own[node] = nil
    }

    /// The client reads again: of what it missed, the latest `ROOT`, `BADGE` and `TOOLBAR`
    /// lines; the own `ITEM`s of the directories it still observes or whose parent it does;
    /// a `RESET` for each directory it still observes; a `RESET-CHANGES` for each feed it
    /// still follows.
    mutating func caughtUp(observing: (StateTree.NodeID) -> Bool, subscribed: ([UInt8]) -> Bool) -> [CatchUp] {
        var out: [CatchUp] = roots.sorted { $0.lexicographicallyPrecedes($1) }.map { .root($0) }
        out += badges.sorted().map { .badge($0) }
        out += toolbars.sorted().map { .toolbar($0) }
        out += own.filter { observing($0.key) || observing($0.value) }.sorted { $0.key < $1.key }.map { .item($0.key, parent: $0.value) }
        out += observed.sorted().filter(observing).map { .reset($0) }
        out += changes.sorted { $0.lexicographicallyPrecedes($1) }.filter(subscribed).map { .resetChanges(root: $0) }
        self = Backpressure()
        return out
    }
}

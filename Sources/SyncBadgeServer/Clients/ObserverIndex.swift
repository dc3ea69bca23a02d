import SyncBadgeCore

/// Who observes which directory (PROTOCOL.md, "Observing directories"). Observation is per
/// connection and exact: observing twice needs two `UNOBSERVE`s, a push goes once per
/// connection however often it observes, and a closed connection observes nothing. The one
/// place that knows it: the hub used to keep a node → sessions map and each session its own
/// counts, in step by hand in four places.
///
/// Observers are client ids (Clients), unique among the connections that are open.
struct ObserverIndex {
    typealias Node = StateTree.NodeID

    /// Node → the connections observing it.
    private var observers: [Node: Set<Int>] = [:]
    /// Connection → node → how many times it observes it.
    private var counts: [Int: [Node: Int]] = [:]

    /// `OBSERVE`.
    mutating func observe(_ node: Node, by id: Int) {
        counts[id, default: [:]][node, default: 0] += 1
        observers[node, default: []].insert(id)
    }

    enum Unobserved: Equatable {
        /// It did not observe the node: `ERR not-found`.
        case notObserved
        /// It observed it more than once: still observing.
        case stillObserved
        case ended
    }

    /// `UNOBSERVE`.
    mutating func unobserve(_ node: Node, by id: Int) -> Unobserved {
        guard let n = counts[id]?[node] else { return .notObserved }
        if n > 1 {
            counts[id]![node] = n - 1
            return .stillObserved
        }
        end(node, for: id)
        return .ended
    }

    /// The connection closed.
    mutating func closed(_ id: Int) {
        guard let nodes = counts.removeValue(forKey: id) else { return }
        for node in nodes.keys { removeObserver(id, of: node) }
    }

    /// The directory went away: every observation of it ends. Returns who observed it.
    mutating func removed(_ node: Node) -> Set<Int> {
        guard let own = observers.removeValue(forKey: node) else { return [] }
        for id in own {
            counts[id]?.removeValue(forKey: node)
            if counts[id]?.isEmpty == true { counts.removeValue(forKey: id) }
        }
        return own
    }

    /// Who observes `node` (each once).
    func observers(of node: Node) -> Set<Int>? { observers[node] }

    func isObserving(_ id: Int, _ node: Node) -> Bool { counts[id]?[node] != nil }

    /// Every observed node.
    var observedNodes: Dictionary<Node, Set<Int>>.Keys { observers.keys }

    /// Observed directories summed over connections (`STATS observations`).
    var count: Int { counts.values.reduce(0) { $0 + $1.count } }

    private mutating func end(_ node: Node, for id: Int) {
        counts[id]?.removeValue(forKey: node)
        if counts[id]?.isEmpty == true { counts.removeValue(forKey: id) }
        removeObserver(id, of: node)
    }

    private mutating func removeObserver(_ id: Int, of node: Node) {
        observers[node]?.remove(id)
        if observers[node]?.isEmpty == true { observers.removeValue(forKey: node) }
    }
}

/// What the daemon shows for every entry of one working tree, as far as the adapter knows:
/// learnt from `LIST`, `CHANGES`, `* CHANGED` and the answers to its own `SET`s. It lets a
/// pass send only the `SET`s that change something, each with the generation it saw, and
/// cover a whole unchanged subtree with one recursive `SET`.
public struct RepoModel: Sendable {
    public typealias ID = Int32

    public struct Node: Sendable {
        /// Relative to the top level; empty for the top level itself.
        public var rel: [UInt8]
        public var parent: ID
        public var children: [ID] = []
        public var isDirectory: Bool
        /// A tombstone: the path was deleted and the daemon keeps it `pending` until a `SET synced`.
        public var gone: Bool
        public var gen: UInt64
        /// What the daemon shows for the entry's own state; nil when not known.
        public var shown: Verdict?
        /// Whether the entry's children are known (a directory never listed is not).
        public var childrenKnown: Bool
        public var live = true
    }

    public private(set) var nodes: [Node]
    var index: [[UInt8]: ID] = [:]
    var free: [ID] = []

    public init() {
        nodes = [Node(rel: [], parent: -1, isDirectory: true, gone: false, gen: 0, shown: nil, childrenKnown: false)]
        index[[]] = 0
    }

    public static let root: ID = 0

    public var count: Int { index.count }

    public func find(_ rel: [UInt8]) -> ID? { index[rel] }

    public subscript(id: ID) -> Node { nodes[Int(id)] }

    public static func parent(of rel: [UInt8]) -> [UInt8] {
        guard let slash = rel.lastIndex(of: UInt8(ascii: "/")) else { return [] }
        return Array(rel[..<slash])
    }

    /// Adds or updates an entry; missing parent directories are added with unknown states.
    @discardableResult
    public mutating func upsert(_ rel: [UInt8], isDirectory: Bool, gone: Bool = false, gen: UInt64, shown: Verdict?) -> ID {
        if let id = index[rel] {
            if nodes[Int(id)].isDirectory && (!isDirectory || gone) { removeChildren(id) }
            nodes[Int(id)].isDirectory = isDirectory
            nodes[Int(id)].gone = gone
            nodes[Int(id)].gen = gen
            nodes[Int(id)].shown = shown
            return id
        }
        let parentRel = Self.parent(of: rel)
        let parent = index[parentRel] ?? upsert(parentRel, isDirectory: true, gen: 0, shown: nil)
        let node = Node(rel: rel, parent: parent, isDirectory: isDirectory, gone: gone, gen: gen, shown: shown,
                        childrenKnown: !isDirectory)
        let id: ID
        if let reused = free.popLast() {
            id = reused
            nodes[Int(id)] = node
        } else {
            id = ID(nodes.count)
            nodes.append(node)
        }
        index[rel] = id
        nodes[Int(parent)].children.append(id)
        return id
    }

    /// Forgets an entry and everything below it.
    public mutating func remove(_ id: ID) {
        guard id != Self.root, nodes[Int(id)].live else { return }
        removeChildren(id)
        let p = nodes[Int(id)].parent
        nodes[Int(p)].children.removeAll { $0 == id }
        index[nodes[Int(id)].rel] = nil
        nodes[Int(id)].live = false
        nodes[Int(id)].children = []
        free.append(id)
    }

    public mutating func removeChildren(_ id: ID) {
        for c in nodes[Int(id)].children { remove(c) }
        nodes[Int(id)].children = []
    }

    /// A directory's listing (`LIST`): its existing children, replacing what was known of
    /// them. Tombstones are kept: `LIST` leaves them out.
    public mutating func listed(_ dir: ID, children: [(rel: [UInt8], isDirectory: Bool, gen: UInt64, shown: Verdict)]) {
        let seen = Set(children.map(\.rel))
        for c in nodes[Int(dir)].children where !nodes[Int(c)].gone && !seen.contains(nodes[Int(c)].rel) { remove(c) }
        for c in children {
            let was = index[c.rel].map { nodes[Int($0)] }
            let id = upsert(c.rel, isDirectory: c.isDirectory, gen: c.gen, shown: c.shown)
            // A directory listed before keeps its known children.
            if c.isDirectory { nodes[Int(id)].childrenKnown = was?.isDirectory == true && was?.childrenKnown == true }
        }
        nodes[Int(dir)].childrenKnown = true
    }

    public mutating func setChildrenKnown(_ id: ID, _ known: Bool) { nodes[Int(id)].childrenKnown = known }

    /// A local change the daemon reported: the entry is `pending` at `gen`, its message gone.
    public mutating func changed(_ rel: [UInt8], gen: UInt64, isDirectory: Bool, gone: Bool) -> ID {
        let id = upsert(rel, isDirectory: isDirectory, gone: gone, gen: gen, shown: Verdict(.pending))
        // What came with a new directory is not known until it is listed.
        if isDirectory && !gone { nodes[Int(id)].childrenKnown = false }
        return id
    }

    // MARK: Planning

    public struct PlannedSet: Sendable, Equatable, CustomStringConvertible {
        public var rel: [UInt8]
        public var verdict: Verdict
        public var gen: UInt64
        public var recursive: Bool

        public init(rel: [UInt8], verdict: Verdict, gen: UInt64, recursive: Bool = false) {
            self.rel = rel; self.verdict = verdict; self.gen = gen; self.recursive = recursive
        }

        public var description: String {
            "SET \(verdict) \(String(decoding: rel, as: UTF8.self)) gen=\(gen)\(recursive ? " recursive" : "")"
        }
    }

    /// The verdict of each entry, top-down (an ignored directory makes its subtree ignored).
    public typealias Judge = (_ node: Node, _ ancestorIgnored: Bool) -> Verdict

    /// Directories whose children are not known and whose verdict is not `ignored`: they are
    /// listed before planning, so that nothing below them is missed.
    public func unknownDirectories(under start: ID = root, ancestorIgnored: Bool = false, judge: Judge) -> [ID] {
        var out: [ID] = []
        var stack: [(ID, Bool)] = [(start, ancestorIgnored)]
        while let (id, above) = stack.popLast() {
            let n = nodes[Int(id)]
            let v = judge(n, above)
            let ignored = v == .ignored
            if n.isDirectory && !n.gone && !n.childrenKnown && !ignored { out.append(id) }
            for c in n.children { stack.append((c, above || (ignored && n.isDirectory))) }
        }
        return out
    }

    struct Summary {
        /// Every entry of the subtree has this verdict (nil: they differ).
        var uniform: Verdict?
        /// Every entry already shows its verdict.
        var allShown: Bool
        var maxGen: UInt64
        /// Every directory's children are known.
        var complete: Bool
        /// Entries, and those that do not show their verdict yet.
        var size: Int
        var differ: Int
    }

    /// The `SET`s that make the daemon show the verdicts of the subtree at `start`: nothing
    /// for an entry that shows its verdict already, one recursive `SET` (with the subtree's
    /// newest generation, so that anything changed since stays `pending`) where a whole
    /// subtree needs the same one and most of it changes.
    public func plan(from start: ID = root, ancestorIgnored: Bool = false, judge: Judge) -> [PlannedSet] {
        // Indexed by node id: a pass over a hundred thousand entries stays in arrays.
        var desired = [Verdict?](repeating: nil, count: nodes.count)
        var summaries = [Summary?](repeating: nil, count: nodes.count)
        // Post-order without recursion: trees can be deep.
        var stack: [(ID, Bool, Bool)] = [(start, ancestorIgnored, false)]
        while let (id, above, visited) = stack.popLast() {
            let i = Int(id)
            if !visited {
                let v = judge(nodes[i], above)
                desired[i] = v
                stack.append((id, above, true))
                let below = above || (v == .ignored && nodes[i].isDirectory)
                for c in nodes[i].children { stack.append((c, below, false)) }
                continue
            }
            let v = desired[i]!
            let shown = nodes[i].shown == v
            var s = Summary(uniform: v, allShown: shown, maxGen: nodes[i].gen, complete: nodes[i].childrenKnown || nodes[i].gone,
                            size: 1, differ: shown ? 0 : 1)
            for c in nodes[i].children {
                let cs = summaries[Int(c)]!
                if cs.uniform != v { s.uniform = nil }
                s.allShown = s.allShown && cs.allShown
                s.maxGen = max(s.maxGen, cs.maxGen)
                s.complete = s.complete && cs.complete
                s.size += cs.size
                s.differ += cs.differ
            }
            summaries[i] = s
        }
        var out: [PlannedSet] = []
        var emit: [ID] = [start]
        while let id = emit.popLast() {
            let n = nodes[Int(id)]
            let s = summaries[Int(id)]!
            let v = desired[Int(id)]!
            if s.allShown { continue }
            // One recursive SET where at least half the subtree changes (a fresh root: all of
            // it); where only a few entries do (a push of some files), those alone: the daemon
            // records every entry a SET covers.
            if s.uniform == v && s.complete && !n.children.isEmpty && s.differ * 2 >= s.size {
                out.append(PlannedSet(rel: n.rel, verdict: v, gen: s.maxGen, recursive: true))
                continue
            }
            if n.shown != v {
                // `ignored` on a directory covers its subtree anyway: nothing below to send.
                out.append(PlannedSet(rel: n.rel, verdict: v, gen: n.gen))
                if v == .ignored && n.isDirectory { continue }
            }
            // Children in reverse on the stack: sent in the order they were learnt.
            for c in n.children.reversed() { emit.append(c) }
        }
        return out
    }

    // MARK: Outcomes

    /// A `SET` the daemon applied: what each entry it covered shows now.
    public mutating func applied(_ s: PlannedSet) {
        guard let id = index[s.rel] else { return }
        var stack = [id]
        while let n = stack.popLast() {
            let node = nodes[Int(n)]
            // A recursive `SET` skips entries newer than its generation, and `ignored` on a
            // directory covers everything below.
            let covered = n == id || (s.recursive && node.gen <= s.gen) || s.verdict == .ignored
            if covered {
                if node.gone && s.verdict.state == .synced {
                    remove(n)
                    continue
                }
                nodes[Int(n)].shown = s.verdict
            }
            if s.recursive || s.verdict == .ignored { stack.append(contentsOf: node.children) }
        }
    }

    /// A `SET` that came back stale: the entry changed since; the daemon's `* CHANGED` follows.
    public mutating func stale(_ rel: [UInt8], gen: UInt64) {
        guard let id = index[rel] else { return }
        nodes[Int(id)].gen = max(nodes[Int(id)].gen, gen)
        nodes[Int(id)].shown = Verdict(.pending)
    }
}

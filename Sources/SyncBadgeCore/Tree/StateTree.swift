/// Own-state counts and roll-up counts, moved together.
struct Tally: Sendable, Equatable {
    var own = StateCounts()
    var roll = StateCounts()

    var negated: Tally {
        var t = Tally()
        t.own.add(own, times: -1)
        t.roll.add(roll, times: -1)
        return t
    }

    func adding(_ o: Tally) -> Tally {
        var t = self
        t.own.add(o.own)
        t.roll.add(o.roll)
        return t
    }
}

/// The state of every path under every root, with directory roll-up counts kept incrementally:
/// an event costs O(depth), and no lookup walks the tree. No I/O.
///
/// Changes are recorded for the caller to turn into pushes: `drainChanges()` returns each node
/// touched since the last drain with what a viewer saw before, and each path that went away.
public struct StateTree: Sendable {
    public typealias NodeID = Int32

    struct Node: Sendable {
        var parent: NodeID
        /// The node's slot in `dirs` once it has children or descendants, else -1. Most
        /// entries are files and never need one.
        var dir: Int32 = -1
        /// Siblings in the parent's child list, -1 at either end.
        var next: NodeID = -1
        var prev: NodeID = -1
        /// The name in `names`. A root's is its absolute path; everyone else's is one component.
        var nameStart: UInt32
        var nameCount: UInt16
        var live = true
        var record: EntryRecord

        init(parent: NodeID, nameStart: UInt32, nameCount: UInt16, record: EntryRecord) {
            self.parent = parent
            self.nameStart = nameStart
            self.nameCount = nameCount
            self.record = record
        }
    }

    /// What only a node with children needs.
    struct DirData: Sendable {
        var firstChild: NodeID = -1
        /// Every descendant once, by own state (tombstones included): what `counts=` shows.
        var counts = StateCounts()
        /// The same, but each ignored directory's subtree counted as `ignored`: what the roll-up
        /// reads, since nothing below an ignored directory may raise it.
        var rollup = StateCounts()
    }

    public struct Root: Sendable {
        public var node: NodeID
        public var path: [UInt8]
        public var rules: IgnoreRules
    }

    /// One node touched since the last drain.
    public struct Change: Sendable {
        public var node: NodeID
        public var parent: NodeID
        /// What a viewer saw before the batch; nil if the entry did not exist (or was a tombstone).
        public var before: Item?
    }

    /// A path that stopped existing for viewers (deleted, moved away, or its root removed).
    public struct Removal: Sendable {
        public var path: [UInt8]
        /// The node, which may since have been freed or reused.
        public var node: NodeID
        public var parent: NodeID
        public var wasDirectory: Bool
    }

    var nodes: [Node] = []
    var free: [NodeID] = []
    var dirs: [DirData] = []
    var freeDirs: [Int32] = []
    /// Every node's name, back to back (StateTree+Storage.swift).
    var names: [UInt8] = []
    /// Bytes of `names` that belong to freed nodes.
    var namesFree = 0
    /// The child table: node ids by hash of (parent, name) (StateTree+Storage.swift).
    var childTable = ChildTable()
    public internal(set) var roots: [Root] = []
    /// The last generation handed out; generations only grow, across roots and restarts.
    public var lastGen: UInt64 = 0
    public private(set) var liveCount = 0
    /// Deleted paths waiting for a provider (`STATS tombstones`); a walk, for rare asks.
    public var tombstoneCount: Int { nodes.reduce(0) { $0 + ($1.live && $1.record.kind == .gone ? 1 : 0) } }

    /// The two change logs, apart from the storage above: what viewers must be told
    /// (`drainChanges`) and what the store must write (`drainStoreChanges`).
    var changeLog = TreeChangeLog()
    var storeLog = StoreChangeLog()

    public init(lastGen: UInt64 = 0) {
        self.lastGen = lastGen
    }

    // MARK: Lookup

    /// The root containing `path`, if any.
    public func root(containing path: [UInt8]) -> Root? {
        roots.first { PathBytes.isAtOrBelow(path, $0.path) }
    }

    public func root(at path: [UInt8]) -> Root? {
        roots.first { $0.path == path }
    }

    /// The node at `path`, tombstones included. The same walk as `find(slice:)`, with no array
    /// of components: the daemon looks paths up several times per watcher event.
    public func find(_ path: [UInt8]) -> NodeID? {
        find(slice: path[...])
    }

    public func record(_ id: NodeID) -> EntryRecord { nodes[Int(id)].record }
    public func parent(_ id: NodeID) -> NodeID { nodes[Int(id)].parent }
    public func isRoot(_ id: NodeID) -> Bool { nodes[Int(id)].parent < 0 }

    public func path(_ id: NodeID) -> [UInt8] {
        var parts: [NodeID] = []
        var cur = id
        while cur >= 0 {
            parts.append(cur)
            cur = nodes[Int(cur)].parent
        }
        var out = name(parts.removeLast())
        for p in parts.reversed() {
            if out.last != PathBytes.slash { out.append(PathBytes.slash) }
            out.append(contentsOf: nameSlice(p))
        }
        return out
    }

    /// Reported state: a directory's own state rolled up with its subtree's.
    public func reportedState(_ id: NodeID) -> SyncState {
        let n = nodes[Int(id)]
        return n.record.kind == .dir ? rolledUpState(own: n.record.state, counts: rollupCounts(id)) : n.record.state
    }

    public func view(_ id: NodeID) -> Item {
        view(id, path: path(id))
    }

    public func view(_ id: NodeID, path: [UInt8]) -> Item {
        let n = nodes[Int(id)]
        let state = reportedState(id)
        return Item(
            path: path, state: state, badge: n.record.badge ?? state.name, kind: n.record.kind,
            progress: n.record.progress, message: n.record.message, gen: n.record.gen,
            counts: n.record.kind == .dir ? counts(id) : nil)
    }

    /// Existing direct children (tombstones left out), in name order.
    public func children(_ id: NodeID) -> [NodeID] {
        childIDs(id)
            .filter { nodes[Int($0)].record.kind != .gone }
            .sorted(by: nameLess)
    }

    /// Every node of a root (tombstones included), parents first.
    public func subtree(_ id: NodeID) -> [NodeID] {
        var out: [NodeID] = [id]
        var i = 0
        while i < out.count {
            out.append(contentsOf: childIDs(out[i]))
            i += 1
        }
        return out
    }

    /// The path below the root, as the ignore rules see it.
    func relativeComponents(_ id: NodeID) -> [ArraySlice<UInt8>] {
        var out: [ArraySlice<UInt8>] = []
        var cur = id
        while nodes[Int(cur)].parent >= 0 {
            out.append(nameSlice(cur))
            cur = nodes[Int(cur)].parent
        }
        return out.reversed()
    }

    func rootIndex(of id: NodeID) -> Int? {
        var cur = id
        while nodes[Int(cur)].parent >= 0 { cur = nodes[Int(cur)].parent }
        return roots.firstIndex { $0.node == cur }
    }

    // MARK: Change recording

    /// Records what a viewer sees of a node before this batch changes it (first touch only).
    mutating func touch(_ id: NodeID) {
        guard !changeLog.isTouched(id) else { return }
        let n = nodes[Int(id)]
        changeLog.touched(id, before: (n.live && n.record.kind != .gone) ? view(id) : nil)
    }

    /// Records a node created in this batch: viewers saw nothing of it before.
    mutating func touchNew(_ id: NodeID) {
        changeLog.created(id)
    }

    /// Nodes touched since the last drain, children before their ancestors, and removed paths.
    public mutating func drainChanges() -> (changes: [Change], removals: [Removal]) {
        let (touched, removals) = changeLog.drain()
        var changes: [Change] = []
        changes.reserveCapacity(touched.count)
        for (id, before) in touched {
            let n = nodes[Int(id)]
            // A node freed during the batch shows up in `removals` instead.
            guard n.live else { continue }
            changes.append(Change(node: id, parent: n.parent, before: before))
        }
        return (changes, removals)
    }

    // MARK: Counts

    /// What a node adds to its parent's counts and roll-up counts: itself and its descendants,
    /// each by its own state; but in the roll-up an ignored directory's whole subtree counts as
    /// `ignored`.
    func contribution(_ id: NodeID) -> Tally {
        let n = nodes[Int(id)]
        var own = counts(id)
        own[n.record.state] += 1
        var roll = rollupCounts(id)
        roll[n.record.state] += 1
        if n.record.state == .ignored && n.record.kind == .dir {
            roll = StateCounts()
            roll[.ignored] = own.total
        }
        return Tally(own: own, roll: roll)
    }

    /// Adds `delta` to `start` and every directory above it, recording each one's view before
    /// it changes. Above an ignored directory the roll-up sees the change as `ignored`.
    mutating func applyCounts(at start: NodeID, _ delta: Tally) {
        var d = delta
        var cur = start
        while cur >= 0 {
            touch(cur)
            addCounts(cur, d)
            let n = nodes[Int(cur)]
            if n.record.state == .ignored && n.record.kind == .dir {
                d.roll = StateCounts()
                d.roll[.ignored] = d.own.total
            }
            cur = n.parent
        }
    }

    mutating func addToAncestors(of id: NodeID, _ delta: Tally, sign: Int) {
        applyCounts(at: nodes[Int(id)].parent, sign < 0 ? delta.negated : delta)
    }

    /// Replaces a node's record, keeping every ancestor's counts right.
    mutating func update(_ id: NodeID, _ new: EntryRecord) {
        touch(id)
        storeLog.changed(id)
        let before = contribution(id)
        nodes[Int(id)].record = new
        let after = contribution(id)
        if before != after {
            addToAncestors(of: id, after.adding(before.negated), sign: 1)
        }
    }

    // MARK: Node allocation

    /// Makes room for `more` nodes, with `nameBytes` of names, before a bulk insert (a
    /// registration, a restore): arrays are not left up to half empty by doubling (at a
    /// million entries that slack was over 90 MB), and the child table is not rehashed on the
    /// way. Growth beyond stays geometric, so small inserts never copy per call.
    mutating func reserve(nodes more: Int, nameBytes: Int) {
        let needed = nodes.count - free.count + more
        if needed > nodes.capacity {
            nodes.reserveCapacity(max(needed, nodes.capacity + nodes.capacity / 2))
        }
        let bytes = names.count + nameBytes
        if bytes > names.capacity {
            names.reserveCapacity(max(bytes, names.capacity + names.capacity / 2))
        }
        reserveSlots(more)
    }

    /// A new node, linked under its parent (unless it is a root).
    mutating func allocate(parent: NodeID, name: [UInt8], record: EntryRecord) -> NodeID {
        allocate(parent: parent, name: name[...], record: record)
    }

    mutating func allocate(parent: NodeID, name: ArraySlice<UInt8>, record: EntryRecord) -> NodeID {
        let (start, count) = storeName(name)
        let node = Node(parent: parent, nameStart: start, nameCount: count, record: record)
        liveCount += 1
        let id: NodeID
        if let reused = free.popLast() {
            nodes[Int(reused)] = node
            id = reused
        } else {
            nodes.append(node)
            id = NodeID(nodes.count - 1)
        }
        if parent >= 0 { link(id) }
        storeLog.changed(id)
        return id
    }

    /// Frees a node and its descendants, fixing ancestors' counts and recording removals of
    /// what existed.
    mutating func detach(_ id: NodeID, recordAs path: [UInt8]?) {
        if storeLog.recording, let r = rootIndex(of: id) {
            storeLog.deleted(.init(root: roots[r].path, relativePath: relativePath(id)))
        }
        addToAncestors(of: id, contribution(id), sign: -1)
        if let path {
            recordRemovals(id, path: path)
        }
        let all = subtree(id)
        unlink(id)
        // Every descendant leaves the child table while its parent and name are still there.
        for n in all.dropFirst() { removeSlot(n) }
        for n in all {
            nodes[Int(n)].live = false
            storeLog.freed(n)
            releaseDir(n)
            freeName(n)
            free.append(n)
            liveCount -= 1
        }
        compactNamesIfSparse()
    }

    /// Records the node and every existing directory below it as gone for viewers.
    mutating func recordRemovals(_ id: NodeID, path: [UInt8]) {
        let n = nodes[Int(id)]
        guard n.record.kind != .gone else { return }
        changeLog.removed(Removal(path: path, node: id, parent: n.parent, wasDirectory: n.record.kind == .dir))
        guard n.record.kind == .dir else { return }
        for child in childIDs(id) where nodes[Int(child)].record.kind == .dir {
            recordRemovals(child, path: childPath(child, under: path))
        }
    }

    // MARK: Roots

    /// Registers a root from a scan of it: every entry `unknown` (or `ignored`), one generation.
    @discardableResult
    public mutating func addRoot(path: [UInt8], scan: ScanTree, rules: IgnoreRules) -> NodeID {
        lastGen += 1
        let gen = lastGen
        let id = allocate(parent: -1, name: path, record: EntryRecord(kind: .dir, state: .unknown, gen: gen))
        touchNew(id)
        roots.append(Root(node: id, path: path, rules: rules))
        insert(scan, under: id, state: .unknown, gen: gen)
        return id
    }

    /// Forgets a root and everything in it.
    public mutating func removeRoot(path: [UInt8]) {
        guard let i = roots.firstIndex(where: { $0.path == path }) else { return }
        let node = roots[i].node
        roots.remove(at: i)
        detach(node, recordAs: path)
    }

    /// Inserts scanned entries below `dir`, all in `state` (or `ignored`) with generation `gen`
    /// (nil: a fresh one each). Existing children of the same name are replaced.
    mutating func insert(_ scan: ScanTree, under dir: NodeID, state: SyncState, gen: UInt64?) {
        guard !scan.entries.isEmpty else { return }
        reserve(nodes: scan.entries.count, nameBytes: scan.names.count)
        let rules = rootIndex(of: dir).map { roots[$0].rules } ?? .none
        var ids = [NodeID](repeating: -1, count: scan.entries.count)
        var added = Tally()
        // A directory changed while it was read can list a name twice (readdir on tmpfs after
        // a rename): the second entry is merged into the node of the first, which is counted
        // once. Below the top level every parent is new, so any hit there is such a twin; at
        // the top level `newTop` tells twins from children that were there before.
        var newTop = Set<NodeID>()
        var twins = Set<Int>()
        // Counts are summed bottom-up after the insert; ancestors of `dir` get the total once.
        for (i, e) in scan.entries.enumerated() {
            let parent = e.parent < 0 ? dir : ids[Int(e.parent)]
            var g: UInt64
            if let gen { g = gen } else { lastGen += 1; g = lastGen }
            let name = scan.name(i)
            if let old = child(parent, name) {
                if e.parent >= 0 || newTop.contains(old) {
                    twins.insert(i)
                    ids[i] = old
                    // What was read last wins, unless the first is a directory with entries now.
                    if e.kind == .dir || childIDs(old).isEmpty {
                        nodes[Int(old)].record = EntryRecord(kind: e.kind, state: state, gen: g)
                        applyNewEntryIgnore(old, rules: rules)
                    }
                    continue
                }
                // A tombstone or stale entry of the same name: the scan is the truth now.
                let existed = nodes[Int(old)].record.kind != .gone
                detach(old, recordAs: existed ? PathBytes.join(path(parent), name) : nil)
            }
            let id = allocate(parent: parent, name: name, record: EntryRecord(kind: e.kind, state: state, gen: g))
            if e.parent < 0 {
                touchNew(id)
                newTop.insert(id)
            }
            ids[i] = id
            applyNewEntryIgnore(id, rules: rules)
        }
        // Counts bottom-up (children come after their parents in a scan, twins' children after
        // both twins), then the top-level entries' contributions go to `dir` and above once.
        for i in stride(from: scan.entries.count - 1, through: 0, by: -1) where !twins.contains(i) {
            let c = contribution(ids[i])
            let p = scan.entries[i].parent
            if p >= 0 {
                addCounts(ids[Int(p)], c)
            } else {
                added = added.adding(c)
            }
        }
        applyCounts(at: dir, added)
    }

    /// Whether the ignore rules ignore the entry: a pattern matches it, or its parent is
    /// ignored by the rules (below an ignored directory everything is, as in gitignore).
    func isIgnoredByRules(_ id: NodeID, rules: IgnoreRules) -> Bool {
        let parent = nodes[Int(id)].parent
        if parent >= 0, nodes[Int(parent)].record.ruleIgnored { return true }
        if rules.isEmpty { return false }
        return rules.matches(name: nameSlice(id), isDir: nodes[Int(id)].record.kind == .dir) { relativeComponents(id) }
    }

    /// A new entry is ignored by the rules, or (not by the rules) when it appears inside a
    /// directory a provider set `ignored`: a provider can still report on it.
    mutating func applyNewEntryIgnore(_ id: NodeID, rules: IgnoreRules) {
        if isIgnoredByRules(id, rules: rules) {
            nodes[Int(id)].record = StateMachine.becameIgnored(nodes[Int(id)].record)
        } else if let p = Optional(nodes[Int(id)].parent), p >= 0, nodes[Int(p)].record.state == .ignored {
            nodes[Int(id)].record.state = .ignored
        }
    }
}

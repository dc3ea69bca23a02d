#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
@testable import SyncBadgeCore

/// Model-based property test of `StateTree`: a random sequence of the watcher's local changes
/// and providers' `SET`s goes to the real tree and, step by step, to a small reference model
/// written here from PROTOCOL.md ("States and badges", `SET`, "The state rules"): a plain
/// dictionary keyed by relative path, whose roll-ups and counts are recomputed naively by
/// scanning descendants. After every step every path of either side is compared: existence
/// (tombstones included), kind, own state, generation, reported state and, on directories,
/// counts.
///
/// Generations come from one global counter and the order in which the entries of one
/// operation get theirs is the tree's business, so they are compared by property: a path the
/// model says changed must have a gen above every gen that existed before the step (the model
/// then adopts it); any other path keeps exactly its gen; a stale SET answers the current gen.
///
/// Replay a failure with `SYNCBADGE_SEED=<n> swift test --filter StateModelTests`; the failure
/// message carries a shrunk sequence of operations that still fails the same way.
/// `SYNCBADGE_COVERAGE=1` prints how often each interesting rule was hit.
///
/// Where PROTOCOL.md is silent the model takes one reading, each marked "Reading:" below:
/// `ignored` on a directory covers its subtree; an entry appearing directly in a directory whose
/// own state is `ignored` is `ignored`; a local change or delete is judged "ignored" by the
/// entry's own state, and an ignored entry that goes leaves no tombstone.
@Suite struct StateModelTests {
    static let defaultSeed: UInt64 = 20_250_611
    static let episodes = 10
    static let stepsPerEpisode = 1_000

    static func seed() -> UInt64 {
        guard let raw = getenv("SYNCBADGE_SEED"), let v = UInt64(String(cString: raw)) else { return defaultSeed }
        return v
    }

    @Test func randomOperationsMatchTheReferenceModel() {
        let seed = Self.seed()
        var master = SplitMix64(seed: seed)
        var gen = OpGenerator()
        var total = Coverage()
        for episode in 0..<Self.episodes {
            var rng = SplitMix64(seed: master.next())
            let initial = gen.randomSubtree(&rng, depthBudget: 3, maxEntries: 6)
            var h = Harness(initial: initial)
            if let m = h.checkInitial() {
                Issue.record("seed \(seed), episode \(episode), after addRoot \(describe(initial)): \(m)")
                return
            }
            var ops: [ModelOp] = []
            for step in 1...Self.stepsPerEpisode {
                let op = gen.randomOp(&rng, h)
                ops.append(op)
                guard let m = h.step(op) else { continue }
                let (minInitial, minOps, minMismatch) = Shrinker.shrink(initial: initial, ops: ops, field: m.field)
                let repro = minOps.enumerated().map { "  \($0.offset + 1). \($0.element)" }.joined(separator: "\n")
                Issue.record("""
                    seed \(seed) (SYNCBADGE_SEED=\(seed)), episode \(episode), step \(step) \
                    (overall \(episode * Self.stepsPerEpisode + step)): \(op)
                      \(m)
                    minimal repro: addRoot /r with \(describe(minInitial)), then
                    \(repro)
                      -> \(minMismatch)
                    """)
                return
            }
            total.add(h.coverage)
        }
        for k in Coverage.required {
            #expect((total.hits[k] ?? 0) > 0, "seed \(seed): never exercised: \(k)")
        }
        if getenv("SYNCBADGE_COVERAGE") != nil {
            print(Coverage.required.map { "\($0): \(total.hits[$0] ?? 0)" }.joined(separator: "\n"))
        }
    }
}

// MARK: - PRNG

/// The model test's generator: Core's SplitMix64 plus a picker.
extension SplitMix64 {
    mutating func pick<T>(_ xs: [T]) -> T? { xs.isEmpty ? nil : xs[below(xs.count)] }
}

// MARK: - Operations

/// One entry of a scanned subtree, by path relative to the scanned directory (parents first).
private struct SubEntry: Equatable {
    var rel: String
    var kind: EntryKind
    var identity: FileIdentity?
}

private enum GenMode: Equatable, CustomStringConvertible {
    case none, current, older(UInt64), newer(UInt64)
    var description: String {
        switch self {
        case .none: "no gen"
        case .current: "gen=current"
        case .older(let k): "gen=current-\(k)"
        case .newer(let k): "gen=current+\(k)"
        }
    }
}

private enum ModelOp: CustomStringConvertible {
    case createFile(String, FileIdentity)
    /// nil: the file's identity on disk stays as it is (an attribute touch, or the provider's
    /// own write finished before its SET).
    case write(String, FileIdentity?)
    case touchDir(String)
    case mkdir(String, [SubEntry])
    case delete(String)
    case rename(String, String)
    case moveOut(String)
    case moveInFile(String, FileIdentity)
    case moveInDir(String, [SubEntry])
    case set(String, SyncState, GenMode, recursive: Bool)

    var description: String {
        switch self {
        case .createFile(let p, let i): "create file \(absPath(p)) identity=\(idText(i)) [localChange .file]"
        case .write(let p, let i): "write \(absPath(p)) " + (i.map { "identity=\(idText($0))" } ?? "(identity unchanged)") + " [localChange .file]"
        case .touchDir(let p): "chmod dir \(absPath(p)) [localChange .dir, no subtree]"
        case .mkdir(let p, let s): "mkdir \(absPath(p)) with \(describe(s)) [localChange .dir + subtree]"
        case .delete(let p): "delete \(absPath(p)) [deleted]"
        case .rename(let f, let t): "rename \(absPath(f)) -> \(absPath(t)) [moved]"
        case .moveOut(let p): "move out \(absPath(p)) [deleted]"
        case .moveInFile(let p, let i): "move in file \(absPath(p)) identity=\(idText(i)) [localChange .file]"
        case .moveInDir(let p, let s): "move in dir \(absPath(p)) with \(describe(s)) [localChange .dir + subtree]"
        case .set(let p, let s, let g, let r): "SET \(s.name) \(absPath(p)) \(g)" + (r ? " recursive=1" : "")
        }
    }
}

private let rootPath = "/r"

private func absPath(_ rel: String) -> String { rel.isEmpty ? rootPath : rootPath + "/" + rel }

private func idText(_ i: FileIdentity) -> String { "#\(i.inode)" }

private func describe(_ s: [SubEntry]) -> String {
    s.isEmpty ? "{}" : "{" + s.map { $0.rel + ($0.kind == .dir ? "/" : "") }.joined(separator: ", ") + "}"
}

private func parentKey(_ p: String) -> String {
    let u = p.utf8
    guard let i = u.lastIndex(of: UInt8(ascii: "/")) else { return "" }
    return String(u[..<i])!
}

private func depth(_ p: String) -> Int { p.isEmpty ? 0 : 1 + p.utf8.reduce(0) { $0 + ($1 == UInt8(ascii: "/") ? 1 : 0) } }

private func scanTree(_ subs: [SubEntry]) -> ScanTree {
    var s = ScanTree()
    var index: [String: Int32] = [:]
    for e in subs {
        let parent = parentKey(e.rel)
        let name = e.rel.split(separator: "/").last.map(String.init) ?? e.rel
        index[e.rel] = s.append(parent: parent.isEmpty ? -1 : index[parent]!, name: Array(name.utf8), kind: e.kind, identity: e.identity)
    }
    return s
}

// MARK: - The reference model

private struct ModelEntry: Equatable {
    /// `.file`, `.dir` or `.gone` (a tombstone).
    var kind: EntryKind
    var state: SyncState
    var gen: UInt64
    /// The file's identity recorded when it became `synced`.
    var identity: FileIdentity?
}

/// Roll-up rank, re-derived from PROTOCOL.md: error > conflict > syncing > pending > unknown > synced.
private func rank(_ s: SyncState) -> Int {
    switch s {
    case .error: 5
    case .conflict: 4
    case .syncing: 3
    case .pending: 2
    case .unknown: 1
    case .synced: 0
    case .ignored: -1
    }
}

private struct Mismatch: CustomStringConvertible {
    var field: String
    var path: String
    var expected: String
    var actual: String
    var description: String { "\(field) of \(path): expected (model) \(expected), actual (tree) \(actual)" }
}

/// How often the interesting rules were hit, so a drifting generator cannot go unnoticed.
private struct Coverage {
    static let required = [
        "write with the recorded identity kept synced", "local change to an ignored entry kept",
        "tombstone revived", "tombstone left", "ignored entry deleted without tombstone", "directory moved",
        "stale SET", "SET not found", "tombstone dropped by SET synced", "recursive SET", "identity recorded at synced",
    ]
    var hits: [String: Int] = [:]
    mutating func hit(_ k: String) {
        precondition(Self.required.contains(k), k)
        hits[k, default: 0] += 1
    }
    mutating func add(_ o: Coverage) { hits.merge(o.hits, uniquingKeysWith: +) }
}

/// The real tree, the model, and the "disk" the watcher would stat.
private struct Harness {
    var coverage = Coverage()
    var tree = StateTree()
    var rootID: StateTree.NodeID
    /// Keyed by path relative to the root; "" is the root.
    var model: [String: ModelEntry] = [:]
    /// The identity of every file that exists now.
    var disk: [String: FileIdentity] = [:]
    /// Paths whose generation the model says the step bumped.
    var changed = Set<String>()

    init(initial: [SubEntry]) {
        rootID = tree.addRoot(path: Array(rootPath.utf8), scan: scanTree(initial), rules: .none)
        // When a root is added, every entry in it starts `unknown`.
        model[""] = ModelEntry(kind: .dir, state: .unknown, gen: 0, identity: nil)
        changed.insert("")
        for e in initial {
            model[e.rel] = ModelEntry(kind: e.kind, state: .unknown, gen: 0, identity: nil)
            if let i = e.identity { disk[e.rel] = i }
            changed.insert(e.rel)
        }
    }

    mutating func checkInitial() -> Mismatch? {
        compare(previousMax: 0)
    }

    // MARK: Model queries

    func isLive(_ p: String) -> Bool { model[p].map { $0.kind != .gone } ?? false }
    func isLiveDir(_ p: String) -> Bool { model[p]?.kind == .dir }
    /// Missing or a tombstone: something may be created there.
    func isFree(_ p: String) -> Bool { !isLive(p) }

    /// Every descendant (tombstones included), parents first.
    func descendants(_ p: String) -> [String] {
        let prefix = p.isEmpty ? "" : p + "/"
        return model.keys.filter { !$0.isEmpty && $0 != p && $0.hasPrefix(prefix) }
            .sorted { (depth($0), $0) < (depth($1), $1) }
    }

    /// Reported state and counts of every directory, recomputed from scratch: each entry is
    /// added to every ancestor's counts by its own state (tombstones included); to an ancestor's
    /// roll-up only when it is not `ignored` and no entry between them is `ignored` (PROTOCOL.md:
    /// `ignored` items do not count; an ignored directory reports `ignored` and nothing below it
    /// counts in its parent's roll-up). Roll-up: worst first, error > conflict > syncing >
    /// pending > unknown > synced.
    func rollUps() -> (reported: [String: SyncState], counts: [String: [SyncState: Int]]) {
        var worstBelow: [String: SyncState] = [:]
        var counts: [String: [SyncState: Int]] = [:]
        for (d, e) in model where !d.isEmpty {
            var visible = e.state != .ignored
            var cur = d
            while !cur.isEmpty {
                let up = parentKey(cur)
                counts[up, default: [:]][e.state, default: 0] += 1
                if visible, rank(e.state) > rank(worstBelow[up] ?? .ignored) { worstBelow[up] = e.state }
                if model[up]?.state == .ignored { visible = false }
                cur = up
            }
        }
        var reported: [String: SyncState] = [:]
        for (p, e) in model {
            if e.kind != .dir || e.state == .ignored {
                reported[p] = e.state
            } else if let below = worstBelow[p], rank(below) > rank(e.state) {
                reported[p] = below
            } else {
                reported[p] = e.state
            }
        }
        return (reported, counts)
    }

    func applicable(_ op: ModelOp) -> Bool {
        switch op {
        case .createFile(let p, _), .moveInFile(let p, _), .mkdir(let p, _), .moveInDir(let p, _):
            return !p.isEmpty && isFree(p) && isLiveDir(parentKey(p))
        case .write(let p, _):
            return model[p]?.kind == .file
        case .touchDir(let p):
            return isLiveDir(p)
        case .delete(let p), .moveOut(let p):
            return !p.isEmpty && isLive(p)
        case .rename(let f, let t):
            return !f.isEmpty && !t.isEmpty && isLive(f) && isFree(t) && isLiveDir(parentKey(t))
                && t != f && !t.hasPrefix(f + "/")
        case .set:
            return true
        }
    }

    // MARK: Model transitions

    /// A path appears (created, moved in, rename target): a fresh generation, `pending`.
    /// Reading: an entry that appears directly inside a directory whose own state is `ignored`
    /// is ignored (the ignored directory covers its subtree), so it is not made `pending`.
    mutating func modelAppear(_ p: String, kind: EntryKind, identity: FileIdentity?) {
        if model[p]?.kind == .gone { coverage.hit("tombstone revived") }
        let parentIgnored = model[parentKey(p)]?.state == .ignored
        model[p] = ModelEntry(kind: kind, state: parentIgnored ? .ignored : .pending, gen: 0, identity: nil)
        if kind == .file, let identity { disk[p] = identity }
        changed.insert(p)
    }

    /// A local change to an existing entry: pending with a new gen unless it is ignored or a
    /// synced file whose identity equals the recorded one.
    /// Reading: "ignored" is the entry's own state.
    mutating func modelChange(_ p: String, identity: FileIdentity?) {
        var e = model[p]!
        if e.state == .ignored {
            coverage.hit("local change to an ignored entry kept")
            return
        }
        if e.kind == .file, e.state == .synced, let rec = e.identity, rec == identity {
            coverage.hit("write with the recorded identity kept synced")
            return
        }
        e.state = .pending
        e.identity = nil
        model[p] = e
        changed.insert(p)
    }

    /// Deleted or moved away: a pending tombstone, descendants forgotten.
    /// Reading: an ignored entry (own state) leaves no tombstone — a tombstone is `pending` and
    /// listed by CHANGES, which ignored entries never are — so it simply goes.
    mutating func modelDelete(_ p: String) {
        for d in descendants(p) {
            model[d] = nil
            disk[d] = nil
        }
        disk[p] = nil
        if model[p]!.state == .ignored {
            coverage.hit("ignored entry deleted without tombstone")
            model[p] = nil
            return
        }
        coverage.hit("tombstone left")
        model[p] = ModelEntry(kind: .gone, state: .pending, gen: 0, identity: nil)
        changed.insert(p)
    }

    // MARK: One step

    /// Applies `op` to both sides and compares them; the first difference, if any.
    mutating func step(_ op: ModelOp) -> Mismatch? {
        let previousMax = model.values.map(\.gen).max() ?? 0
        changed = []
        switch op {
        case .createFile(let p, let i), .moveInFile(let p, let i):
            tree.localChange(Array(absPath(p).utf8), kind: .file, identity: i)
            modelAppear(p, kind: .file, identity: i)
        case .write(let p, let i):
            let identity = i ?? disk[p]!
            disk[p] = identity
            tree.localChange(Array(absPath(p).utf8), kind: .file, identity: identity)
            modelChange(p, identity: identity)
        case .touchDir(let p):
            tree.localChange(Array(absPath(p).utf8), kind: .dir)
            modelChange(p, identity: nil)
        case .mkdir(let p, let subs), .moveInDir(let p, let subs):
            tree.localChange(Array(absPath(p).utf8), kind: .dir, subtree: scanTree(subs))
            modelAppear(p, kind: .dir, identity: nil)
            for e in subs { modelAppear(p + "/" + e.rel, kind: e.kind, identity: e.identity) }
        case .delete(let p), .moveOut(let p):
            tree.deleted(Array(absPath(p).utf8))
            modelDelete(p)
        case .rename(let f, let t):
            let kind = model[f]!.kind
            if kind == .dir { coverage.hit("directory moved") }
            let moving = descendants(f).filter { isLive($0) }
                .map { SubEntry(rel: String($0.dropFirst(f.count + 1)), kind: model[$0]!.kind, identity: disk[$0]) }
            let identity = disk[f]
            tree.moved(from: Array(absPath(f).utf8), to: Array(absPath(t).utf8), kind: kind)
            modelDelete(f)
            // A directory moved within the root is pending throughout: every path in it changed.
            modelAppear(t, kind: kind, identity: identity)
            for e in moving { modelAppear(t + "/" + e.rel, kind: e.kind, identity: e.identity) }
        case .set(let p, let state, let mode, let recursive):
            if let m = modelSet(p, state: state, mode: mode, recursive: recursive) { return m }
        }
        return compare(previousMax: previousMax)
    }

    /// A provider's SET on both sides; a mismatch of the answer, if any.
    mutating func modelSet(_ p: String, state: SyncState, mode: GenMode, recursive: Bool) -> Mismatch? {
        let diskNow = disk
        let identify: ([UInt8]) -> FileIdentity? = { bytes in
            let s = String(decoding: bytes, as: UTF8.self)
            return s == rootPath ? nil : diskNow[String(s.dropFirst(rootPath.count + 1))]
        }
        let current = model[p]?.gen
        var reqGen: UInt64?
        switch mode {
        case .none: reqGen = nil
        case .current: reqGen = current ?? 1
        case .older(let k): reqGen = (current ?? 1) > k ? (current ?? 1) - k : 0
        case .newer(let k): reqGen = (current ?? 1) + k
        }
        let actual = tree.set(Array(absPath(p).utf8), SetRequest(state: state, gen: reqGen, recursive: recursive), identify: identify)
        let expected: StateTree.SetResult
        if let e = model[p] {
            if let g = reqGen, g < e.gen {
                // Stale: changes nothing, reports the current gen.
                expected = .stale(gen: e.gen)
                coverage.hit("stale SET")
            } else {
                expected = .done(gen: e.gen)
                // Reading: `ignored` on a directory covers its subtree (as `recursive=1`).
                let all = recursive || (state == .ignored && e.kind == .dir)
                if all { coverage.hit("recursive SET") }
                for t in [p] + (all ? descendants(p) : []) {
                    guard var te = model[t] else { continue }
                    // Per path ("no change where gen is older than the path's"): a gen older than
                    // that path's is stale for it.
                    if let g = reqGen, g < te.gen { continue }
                    if te.kind == .gone && state == .synced {
                        // The deletion reached the remote side: the tombstone goes.
                        model[t] = nil
                        coverage.hit("tombstone dropped by SET synced")
                        continue
                    }
                    te.state = state
                    // The daemon stats the file when it applies a SET synced.
                    te.identity = state == .synced && te.kind == .file ? diskNow[t] : nil
                    if te.identity != nil { coverage.hit("identity recorded at synced") }
                    model[t] = te
                }
            }
        } else {
            expected = .notFound
            coverage.hit("SET not found")
        }
        if actual != expected {
            return Mismatch(field: "SET answer", path: absPath(p), expected: "\(expected)", actual: "\(actual)")
        }
        return nil
    }

    // MARK: Comparison

    func describe(_ e: ModelEntry?) -> String {
        guard let e else { return "absent" }
        return "\(e.kind.name) \(e.state.name) gen=\(e.gen)"
    }

    func describe(_ r: EntryRecord) -> String { "\(r.kind.name) \(r.state.name) gen=\(r.gen)" }

    func describe(_ c: [SyncState: Int]) -> String {
        SyncState.allCases.filter { (c[$0] ?? 0) != 0 }.map { "\($0.name):\(c[$0]!)" }.joined(separator: ",")
    }

    /// Compares every path of both sides; adopts the tree's gens for the paths the step changed.
    mutating func compare(previousMax: UInt64) -> Mismatch? {
        let tree = self.tree
        // Every node of the tree (tombstones included), by path relative to the root.
        var treePaths: [String: StateTree.NodeID] = ["": rootID]
        var stack: [(StateTree.NodeID, String)] = [(rootID, "")]
        while let (id, rel) = stack.popLast() {
            for child in tree.childIDs(id) {
                let n = String(decoding: tree.name(child), as: UTF8.self)
                let childRel = rel.isEmpty ? n : rel + "/" + n
                treePaths[childRel] = child
                stack.append((child, childRel))
            }
        }
        // Sorted, so that the first difference reported does not depend on hashing.
        let keys = model.keys.sorted()
        for k in treePaths.keys.sorted() where model[k] == nil {
            return Mismatch(field: "existence", path: absPath(k), expected: "absent", actual: describe(tree.record(treePaths[k]!)))
        }
        for k in keys {
            let m = model[k]!
            guard let id = treePaths[k] else {
                return Mismatch(field: "existence", path: absPath(k), expected: describe(m), actual: "absent")
            }
            let r = tree.record(id)
            func shown() -> String { changed.contains(k) ? "\(m.kind.name) \(m.state.name) gen=new" : describe(m) }
            if r.kind != m.kind {
                return Mismatch(field: "kind", path: absPath(k), expected: shown(), actual: describe(r))
            }
            if r.state != m.state {
                return Mismatch(field: "own state", path: absPath(k), expected: shown(), actual: describe(r))
            }
            if changed.contains(k) {
                if r.gen <= previousMax {
                    return Mismatch(field: "gen", path: absPath(k), expected: "a new gen > \(previousMax)", actual: "gen=\(r.gen)")
                }
                model[k]!.gen = r.gen
            } else if r.gen != m.gen {
                return Mismatch(field: "gen", path: absPath(k), expected: "unchanged gen=\(m.gen)", actual: "gen=\(r.gen)")
            }
            if m.kind == .file && m.state == .synced && r.syncedIdentity != m.identity?.digest {
                return Mismatch(field: "recorded identity", path: absPath(k),
                                expected: m.identity.map { "\(idText($0)) digest=\($0.digest.bits)" } ?? "none",
                                actual: r.syncedIdentity.map { "digest=\($0.bits)" } ?? "none")
            }
        }
        let (reported, counts) = rollUps()
        for k in keys {
            let m = model[k]!
            let id = treePaths[k]!
            let want = reported[k]!
            let got = tree.reportedState(id)
            if want != got {
                return Mismatch(field: "reported state", path: absPath(k), expected: "\(want.name) (own \(m.state.name))",
                                actual: "\(got.name) (own \(tree.record(id).state.name))")
            }
            if m.kind == .dir {
                let want = counts[k] ?? [:]
                let got = tree.counts(id)
                for s in SyncState.allCases where (want[s] ?? 0) != got[s] {
                    return Mismatch(field: "counts", path: absPath(k), expected: describe(want), actual: got.wireValue)
                }
            }
        }
        return nil
    }
}

// MARK: - Random operations

private struct OpGenerator {
    static let names = ["a", "b", "c"]
    /// Every relative path of depth 1 to 3.
    static let allPaths: [String] = {
        var out: [String] = []
        var level = [""]
        for _ in 1...3 {
            level = level.flatMap { p in names.map { p.isEmpty ? $0 : p + "/" + $0 } }
            out += level
        }
        return out
    }()

    var nextInode: UInt64 = 1

    mutating func newIdentity(_ rng: inout SplitMix64) -> FileIdentity {
        nextInode += 1
        let t = Int64(nextInode) * 1_000_000_007
        return FileIdentity(inode: nextInode, size: Int64(rng.below(4096)), mtimeNs: t, ctimeNs: t)
    }

    /// A small random tree within `depthBudget` levels.
    mutating func randomSubtree(_ rng: inout SplitMix64, depthBudget: Int, maxEntries: Int) -> [SubEntry] {
        guard depthBudget > 0 else { return [] }
        var out: [SubEntry] = []
        var dirs: [String] = [""]
        var used = Set<String>()
        for _ in 0..<rng.below(maxEntries + 1) {
            let parent = rng.pick(dirs)!
            let rel = (parent.isEmpty ? "" : parent + "/") + rng.pick(Self.names)!
            guard used.insert(rel).inserted else { continue }
            let isDir = depth(rel) < depthBudget && rng.percent(40)
            out.append(SubEntry(rel: rel, kind: isDir ? .dir : .file, identity: isDir ? nil : newIdentity(&rng)))
            if isDir { dirs.append(rel) }
        }
        return out
    }

    mutating func randomOp(_ rng: inout SplitMix64, _ h: Harness) -> ModelOp {
        while true {
            if let op = tryOp(&rng, h) { return op }
        }
    }

    mutating func tryOp(_ rng: inout SplitMix64, _ h: Harness) -> ModelOp? {
        let roll = rng.below(100)
        var free: [String] { Self.allPaths.filter { h.isFree($0) && h.isLiveDir(parentKey($0)) } }
        var live: [String] { h.model.keys.filter { !$0.isEmpty && h.isLive($0) }.sorted() }
        switch roll {
        case 0..<11:
            guard let p = rng.pick(free) else { return nil }
            return .createFile(p, newIdentity(&rng))
        case 11..<24:
            guard let p = rng.pick(live.filter { h.model[$0]!.kind == .file }) else { return nil }
            return .write(p, rng.percent(50) ? nil : newIdentity(&rng))
        case 24..<27:
            let dirs = [""] + live.filter { h.model[$0]!.kind == .dir }
            return .touchDir(rng.percent(15) ? "" : rng.pick(dirs)!)
        case 27..<35:
            guard let p = rng.pick(free) else { return nil }
            return .mkdir(p, randomSubtree(&rng, depthBudget: 3 - depth(p), maxEntries: 3))
        case 35..<42:
            guard let p = rng.pick(live) else { return nil }
            return .delete(p)
        case 42..<50:
            guard let f = rng.pick(live) else { return nil }
            let height = h.model.keys.filter { $0.hasPrefix(f + "/") && h.isLive($0) }.map { depth($0) - depth(f) }.max() ?? 0
            let targets = free.filter { $0 != f && !$0.hasPrefix(f + "/") && depth($0) + height <= 3 }
            guard let t = rng.pick(targets) else { return nil }
            return .rename(f, t)
        case 50..<53:
            guard let p = rng.pick(live) else { return nil }
            return .moveOut(p)
        case 53..<58:
            guard let p = rng.pick(free) else { return nil }
            if rng.percent(50) { return .moveInFile(p, newIdentity(&rng)) }
            return .moveInDir(p, randomSubtree(&rng, depthBudget: 3 - depth(p), maxEntries: 3))
        default:
            let known = h.model.keys.sorted()
            let p = rng.percent(12) ? rng.pick(Self.allPaths)! : rng.pick(known)!
            let states: [(SyncState, Int)] = [(.synced, 34), (.pending, 10), (.syncing, 14), (.error, 10),
                                              (.conflict, 10), (.unknown, 8), (.ignored, 6)]
            var x = rng.below(states.reduce(0) { $0 + $1.1 })
            var state = SyncState.synced
            for (s, w) in states {
                if x < w { state = s; break }
                x -= w
            }
            let g = rng.below(100)
            let mode: GenMode = g < 35 ? .none : g < 70 ? .current : g < 92 ? .older(UInt64(1 + rng.below(3))) : .newer(UInt64(1 + rng.below(2)))
            return .set(p, state, mode, recursive: rng.percent(18))
        }
    }
}

// MARK: - Shrinking a failure

private enum Shrinker {
    /// Replays `ops` (skipping those that no longer apply) from a root holding `initial`;
    /// the first mismatch and the operations applied up to it.
    static func run(initial: [SubEntry], ops: [ModelOp]) -> (Mismatch, [ModelOp])? {
        var h = Harness(initial: initial)
        if let m = h.checkInitial() { return (m, []) }
        var applied: [ModelOp] = []
        for op in ops where h.applicable(op) {
            applied.append(op)
            if let m = h.step(op) { return (m, applied) }
        }
        return nil
    }

    /// A shorter sequence that still fails on the same field.
    static func shrink(initial: [SubEntry], ops: [ModelOp], field: String) -> ([SubEntry], [ModelOp], Mismatch) {
        var initial = initial
        guard var (mismatch, current) = run(initial: initial, ops: ops), mismatch.field == field else {
            return (initial, ops, Mismatch(field: field, path: "?", expected: "?", actual: "(did not replay)"))
        }
        func attempt(_ i: [SubEntry], _ o: [ModelOp]) -> (Mismatch, [ModelOp])? {
            guard let r = run(initial: i, ops: o), r.0.field == field else { return nil }
            return r
        }
        for _ in 0..<3 {
            // Operations: drop chunks, halving their size.
            var chunk = max(1, current.count / 2)
            while true {
                var i = 0
                while i < current.count {
                    var candidate = current
                    candidate.removeSubrange(i..<min(current.count, i + chunk))
                    if let r = attempt(initial, candidate) {
                        (mismatch, current) = r
                    } else {
                        i += chunk
                    }
                }
                if chunk == 1 { break }
                chunk = max(1, chunk / 2)
            }
            // The initial tree: drop entries with their descendants.
            var j = 0
            while j < initial.count {
                let rel = initial[j].rel
                let candidate = initial.filter { $0.rel != rel && !$0.rel.hasPrefix(rel + "/") }
                if let r = attempt(candidate, current) {
                    initial = candidate
                    (mismatch, current) = r
                } else {
                    j += 1
                }
            }
        }
        return (initial, current, mismatch)
    }
}

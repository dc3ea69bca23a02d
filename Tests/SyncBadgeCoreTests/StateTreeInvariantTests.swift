import Testing
@testable import SyncBadgeCore

/// Random operations on a state tree: the incrementally kept counts must always equal a
/// recount from scratch, and `liveCount` the number of nodes reachable from the roots.
@Suite struct StateTreeInvariantTests {
    static let roots = ["/r", "/s"]
    static let names = ["a", "b", "c", "d"]
    /// `c` ignored anywhere; directories named `d` ignored.
    static let rules = IgnoreRules(fileContents: b("c\nd/\n"), defaults: false)

    func randomPath(_ rng: inout SplitMix64) -> String {
        var p = Self.roots[Int(rng.next() % 2)]
        let depth = 1 + Int(rng.next() % 3)
        for _ in 0..<depth { p += "/" + Self.names[Int(rng.next() % UInt64(Self.names.count))] }
        return p
    }

    func randomScan(_ rng: inout SplitMix64) -> ScanTree {
        var s = ScanTree()
        let n = Int(rng.next() % 4)
        var dirs: [Int32] = [-1]
        var used: Set<[Int32]> = []
        for _ in 0..<n {
            let parent = dirs[Int(rng.next() % UInt64(dirs.count))]
            let nameIndex = Int32(rng.next() % UInt64(Self.names.count))
            guard used.insert([parent, nameIndex]).inserted else { continue }
            let isDir = rng.next() % 2 == 0
            let id = s.append(parent: parent, name: b(Self.names[Int(nameIndex)]), kind: isDir ? .dir : .file)
            if isDir { dirs.append(id) }
        }
        return s
    }

    /// Every problem with the tree's bookkeeping, empty when it is consistent.
    func violations(_ t: StateTree) -> [String] {
        var problems: [String] = []
        var reachable = 0
        var slots: [Int32: String] = [:]
        let freeSlots = Set(t.freeDirs)
        var liveNameBytes = 0
        for root in t.roots {
            let all = t.subtree(root.node)
            reachable += all.count
            for id in all {
                let rec = t.record(id)
                let path = text(t.path(id))
                let slot = t.nodes[Int(id)].dir
                if slot >= 0 {
                    if let other = slots.updateValue(path, forKey: slot) {
                        problems.append("\(path): shares its directory slot with \(other)")
                    }
                    if freeSlots.contains(slot) {
                        problems.append("\(path): its directory slot is on the free list")
                    }
                }
                guard t.nodes[Int(id)].live else {
                    problems.append("\(path): reachable but freed")
                    continue
                }
                var recount = StateCounts()
                for d in t.subtree(id).dropFirst() { recount[t.record(d).state] += 1 }
                if t.counts(id) != recount {
                    problems.append("\(path): counts \(t.counts(id).wireValue), recount \(recount.wireValue)")
                }
                if rec.kind != .dir && !t.childIDs(id).isEmpty {
                    problems.append("\(path): a \(rec.kind.name) with children")
                }
                if rec.kind == .gone && rec.state != .pending {
                    problems.append("\(path): tombstone in state \(rec.state.name)")
                }
                if t.find(t.path(id)) != id {
                    problems.append("\(path): find does not lead back to the node")
                }
                let kids = t.childIDs(id)
                for child in kids where t.parent(child) != id || t.child(id, t.name(child)) != child {
                    problems.append("\(path): child \(text(t.name(child))) is linked wrongly")
                }
                for (i, child) in kids.enumerated() where t.nodes[Int(child)].prev != (i == 0 ? -1 : kids[i - 1]) {
                    problems.append("\(path): child \(text(t.name(child))) has a wrong back link")
                }
                liveNameBytes += t.name(id).count
                let p = t.parent(id)
                if p >= 0, !t.isRoot(p), t.record(p).state == .ignored, rec.state != .ignored {
                    problems.append("\(path): below an ignored directory but \(rec.state.name)")
                }
            }
        }
        if t.liveCount != reachable {
            problems.append("liveCount \(t.liveCount), reachable \(reachable)")
        }
        // Every non-root node has exactly one entry in the child table.
        if t.childTable.used != reachable - t.roots.count || t.childTable.slots.filter({ $0 >= 0 }).count != t.childTable.used {
            problems.append("child table holds \(t.childTable.used) (\(t.childTable.slots.filter { $0 >= 0 }.count) found), \(reachable - t.roots.count) linked")
        }
        if liveNameBytes + t.namesFree != t.names.count {
            problems.append("names: \(liveNameBytes) live + \(t.namesFree) free != \(t.names.count)")
        }
        return problems
    }

    @Test func theCheckerNoticesCorruption() throws {
        var t = StateTree()
        t.addRoot(path: b("/r"), scan: scan(["a/", "a/x", "f"]), rules: .none)
        #expect(violations(t).isEmpty)
        var bad = t
        let a = try #require(bad.find(b("/r/a")))
        bad.dirs[Int(bad.nodes[Int(a)].dir)].counts[.pending] += 1
        #expect(violations(bad).contains { $0.hasPrefix("/r/a: counts") })
        var bad2 = t
        let x = try #require(bad2.find(b("/r/a/x")))
        bad2.nodes[Int(x)].record.state = .error
        #expect(violations(bad2).contains { $0.hasPrefix("/r: counts") })
        var bad3 = t
        bad3.unlink(x)
        #expect(violations(bad3).contains { $0.hasPrefix("liveCount") })
        var bad4 = t
        bad4.freeDirs.append(bad4.nodes[Int(a)].dir)
        #expect(violations(bad4).contains { $0.hasPrefix("/r/a: its directory slot is on the free list") })
    }

    @Test func countsStayRightUnderRandomOperations() throws {
        let seed: UInt64 = 20_240_601
        var rng = SplitMix64(seed: seed)
        var t = StateTree()
        for r in Self.roots { t.addRoot(path: b(r), scan: randomScan(&rng), rules: Self.rules) }
        var rulesOn = true
        var opsApplied = [String: Int]()
        for step in 0..<6_000 {
            let roll = rng.next() % 100
            let path = randomPath(&rng)
            var op: String
            switch roll {
            case 0..<28:
                op = "localChange(\(path), file)"
                t.localChange(b(path), kind: .file)
            case 28..<42:
                op = "mkdir(\(path))"
                t.localChange(b(path), kind: .dir, subtree: randomScan(&rng))
            case 42..<62:
                op = "deleted(\(path))"
                t.deleted(b(path))
            case 62..<78:
                let to = randomPath(&rng)
                // A rename never puts a directory inside itself or replaces an ancestor.
                guard PathBytes.relativeComponents(b(to), under: b(path)) == nil,
                      PathBytes.relativeComponents(b(path), under: b(to)) == nil
                else { continue }
                let kind = t.id(path).map { t.record($0).kind } ?? .file
                op = "moved(\(path) → \(to), \(kind.name))"
                t.moved(from: b(path), to: b(to), kind: kind == .gone ? .file : kind)
            case 78..<95:
                // A provider's SET on an existing, not ignored entry.
                guard let id = t.id(path), t.record(id).kind != .gone, t.record(id).state != .ignored else { continue }
                let states: [SyncState] = [.unknown, .pending, .syncing, .synced, .error, .conflict]
                let s = states[Int(rng.next() % UInt64(states.count))]
                op = "set(\(path), \(s.name))"
                var rec = t.record(id)
                rec.state = s
                t.update(id, rec)
            case 95..<96:
                let root = Self.roots[Int(rng.next() % 2)]
                if rng.next() % 2 == 0 {
                    op = "reconcile(\(root))"
                    t.reconcile(root: b(root), scan: randomScan(&rng))
                } else {
                    op = "readd(\(root))"
                    t.removeRoot(path: b(root))
                    t.addRoot(path: b(root), scan: randomScan(&rng), rules: rulesOn ? Self.rules : .none)
                }
            case 96..<98:
                rulesOn.toggle()
                let root = Self.roots[Int(rng.next() % 2)]
                op = "setRules(\(root), \(rulesOn ? "on" : "off"))"
                t.setRules(root: b(root), rules: rulesOn ? Self.rules : .none)
            default:
                op = "drainChanges"
                _ = t.drainChanges()
            }
            opsApplied[String(op.prefix { $0 != "(" }), default: 0] += 1
            let problems = violations(t)
            try #require(problems.isEmpty, "seed \(seed), step \(step), after \(op): \(problems.prefix(5))")
        }
        // The run must have exercised every operation a fair number of times.
        for name in ["localChange", "mkdir", "deleted", "moved", "set", "setRules", "drainChanges", "reconcile", "readd"] {
            #expect(opsApplied[name, default: 0] >= 20, "\(name): \(opsApplied[name, default: 0])")
        }
        #expect(opsApplied.values.reduce(0, +) >= 5_000)
    }
}

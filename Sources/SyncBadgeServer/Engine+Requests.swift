#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import NIOCore
import SyncBadgeCore
import SyncBadgeStore
import SyncBadgeWatchEvents

extension Engine {
    /// Answers one request. Returns false when the answer comes later (the session then holds
    /// its next requests until `resume()`).
    func handle(_ req: WireRequest, from s: Session) -> Bool {
        guard let role = s.role else {
            if req.verb == Verb.hello.rawValue { hello(req, s) } else { s.error(req.tag, "hello-required") }
            return true
        }
        guard let verb = Verb(rawValue: req.verb) else {
            s.error(req.tag, "unknown-verb")
            return true
        }
        if verb == .hello {
            s.error(req.tag, "bad-request", message: Array("HELLO was already sent".utf8))
            return true
        }
        guard verb.allowed(for: role) else {
            s.error(req.tag, "forbidden", message: Array("\(req.verb) is not for role \(role.rawValue)".utf8))
            return true
        }
        switch verb {
        case .hello: break
        case .ping: s.ok(req.tag)
        case .bye:
            s.ok(req.tag)
            s.close()
        case .roots: roots(req, s)
        case .badges: badgesList(req, s)
        case .stats: stats(req, s)
        case .status: status(req, s)
        case .list: list(req, s, observe: false)
        case .observe: list(req, s, observe: true)
        case .unobserve: unobserve(req, s)
        case .addRoot: return addRoot(req, s)
        case .removeRoot: return removeRoot(req, s)
        case .set: return handleSets([req], from: s)
        case .changes: changes(req, s)
        case .subscribeChanges: subscribeChanges(req, s)
        case .claim: claim(req, s)
        case .defineBadge: defineBadge(req, s)
        case .defineMenu: defineMenu(req, s)
        case .defineToolbar: defineToolbar(req, s)
        case .menu: menu(req, s)
        case .action: return action(req, s)
        case .answer: answer(req, s)
        case .unclaim: unclaim(req, s)
        case .toolbar: toolbar(req, s)
        }
        return true
    }

    func hello(_ req: WireRequest, _ s: Session) {
        guard req.option("proto") == "1" else {
            s.error(req.tag, "unsupported-version", extra: "supported=1")
            return
        }
        guard let roleName = req.option("role"), let role = Role(rawValue: roleName) else {
            s.error(req.tag, "bad-request", message: Array("role must be viewer, provider or admin".utf8))
            return
        }
        s.role = role
        if let name = req.options["name"], !name.isEmpty { s.name = String(decoding: name, as: UTF8.self) }
        s.wantsRootPushes = req.option("roots") != "0"
        s.ok(req.tag) { line in
            line.word("proto=1")
            line.option("server", Engine.serverName)
            line.word("epoch=" + epoch)
            line.word("caps=" + Engine.capabilities)
        }
    }

    // MARK: Arguments

    /// The request's path fields, each checked, as many as its verb takes (`Verb.pathCount`);
    /// nil (with the error sent) if any is bad or there are too few or too many.
    func paths(_ req: WireRequest, _ s: Session) -> [[UInt8]]? {
        let count = Verb(rawValue: req.verb)?.pathCount ?? 1...Int.max
        guard count.contains(req.fields.count) else {
            let n = count.lowerBound == count.upperBound ? "\(count.lowerBound)" : "at least \(count.lowerBound)"
            s.error(req.tag, "bad-request", message: Array("\(req.verb) takes \(n) path\(count == 1...1 ? "" : "s")".utf8))
            return nil
        }
        for f in req.fields where !PathBytes.isNormalizedAbsolute(f.bytes) {
            s.error(req.tag, "bad-path", message: f.bytes)
            return nil
        }
        return req.fields.map(\.bytes)
    }

    // MARK: Queries

    func badgesList(_ req: WireRequest, _ s: Session) {
        for b in badges { s.write(b.wireLine(tag: req.tag)) }
        s.ok(req.tag)
    }

    func stats(_ req: WireRequest, _ s: Session) {
        let values: [(String, Int)] = [
            ("clients", sessions.count),
            ("roots", roots.count),
            ("items", tree.liveCount),
            ("watches", watcher?.totalWatches ?? 0),
            ("events", watcher?.events ?? 0),
            ("commits", sets.commits),
            ("commits-done", sets.commitsDone),
            ("observations", observerIndex.count),
            ("tombstones", tree.tombstoneCount),
            ("rss-bytes", Self.residentBytes()),
        ]
        for (k, v) in values {
            var line = WireLine(req.tag)
            line.word("STAT")
            line.word(k)
            line.word(String(v))
            s.write(line)
        }
        s.ok(req.tag)
    }

    static func residentBytes() -> Int {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let parts = statm.split(separator: " ")
        guard parts.count >= 2, let pages = Int(parts[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    func status(_ req: WireRequest, _ s: Session) {
        guard let paths = paths(req, s) else { return }
        var lines: [WireLine] = []
        for p in paths {
            if tree.root(containing: p) != nil {
                guard let id = tree.find(p) else {
                    s.error(req.tag, "not-found", message: p)
                    return
                }
                lines.append(tree.view(id, path: p).wireLine(head: req.tag))
            } else {
                lines.append(ItemView.outsideLine(head: req.tag, path: p, kind: files.lstat(p)?.kind ?? .gone))
            }
        }
        for l in lines { s.write(l) }
        s.ok(req.tag)
    }

    /// The existing directory at `path`, or nil with the error sent.
    func directory(_ req: WireRequest, _ s: Session, _ path: [UInt8]) -> StateTree.NodeID? {
        guard tree.root(containing: path) != nil else {
            s.error(req.tag, "outside", message: path)
            return nil
        }
        guard let id = tree.find(path), tree.record(id).kind != .gone else {
            s.error(req.tag, "not-found", message: path)
            return nil
        }
        guard tree.record(id).kind == .dir else {
            s.error(req.tag, "not-a-directory", message: path)
            return nil
        }
        return id
    }

    func list(_ req: WireRequest, _ s: Session, observe: Bool) {
        guard let p = paths(req, s)?.first, let id = directory(req, s, p) else { return }
        let children = tree.children(id)
        // `OBSERVE <dir> list=0` (1.1): the count without the listing, for prompts.
        if !(observe && req.option("list") == "0") {
            // Each child's path and line built in reused buffers: a file manager lists
            // directories of thousands of entries.
            var childPath = p
            if childPath != [PathBytes.slash] { childPath.append(PathBytes.slash) }
            let base = childPath.count
            let head = Array(req.tag.utf8)
            listOut.removeAll(keepingCapacity: true)
            for child in children {
                childPath.removeSubrange(base...)
                tree.appendName(child, to: &childPath)
                tree.appendItemLine(child, path: childPath[...], head: head[...], into: &listOut)
            }
            s.writeLines(listOut)
            // A big listing's buffer is not kept for the daemon's whole life.
            if listOut.capacity > 1 << 16 { listOut = [] }
        }
        if observe {
            observerIndex.observe(id, by: s.id, s)
        }
        s.ok(req.tag) { $0.word("count=\(children.count)") }
    }

    func unobserve(_ req: WireRequest, _ s: Session) {
        guard let p = paths(req, s)?.first else { return }
        guard let id = tree.find(p), observerIndex.unobserve(id, by: s.id) != .notObserved else {
            s.error(req.tag, "not-found", message: p)
            return
        }
        s.ok(req.tag)
    }
}

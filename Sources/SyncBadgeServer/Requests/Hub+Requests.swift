#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import NIOCore
import SyncBadgeCore
import SyncBadgeStore
import SyncBadgeWatchEvents

extension Hub {
    // MARK: Lines in

    /// A line from a client (without its LF), in arrival order: answered now, or queued
    /// behind a request that waits. False once the client takes no more lines (told `BYE`).
    @discardableResult
    func received(_ line: ByteBuffer, from c: Clients.ID) -> Bool {
        guard let gate = clients.gate(c) else { return false }
        guard gate.idle else {
            clients[c]?.requests.enqueue(line)
            return true
        }
        // A plain STATUS, answered in place, never ends its client: the hot path of a
        // pipelined STATUS asks the registry once (by index, ClientSlot).
        if gate.helloed && fastStatus(line, c) { return true }
        process(line, from: c, helloed: false)
        return clients.isActive(c)
    }

    /// A read is done: what its requests wrote, and what they pushed to other clients (a
    /// CLAIM's `* ROOT`, say), goes out now, not with whatever event comes next (PROTOCOL.md:
    /// a push goes out as soon as its event is processed).
    func readComplete(_ c: Clients.ID) {
        deliver()
    }

    /// More than the longest line without an LF: `* BYE too-long` at once, not behind a
    /// request that waits for a scan or a commit (PROTOCOL.md: as soon as the daemon holds
    /// more than that without an LF); what queued is dropped.
    func tooLong(_ c: Clients.ID) {
        bye(c, "too-long")
    }

    private func process(_ line: ByteBuffer, from c: Clients.ID) {
        guard let gate = clients.gate(c) else { return }
        process(line, from: c, helloed: gate.helloed)
    }

    /// `helloed` from the gate the caller just passed (false when it tried the fast STATUS
    /// itself): one lookup of the client per line.
    private func process(_ line: ByteBuffer, from c: Clients.ID, helloed: Bool) {
        if helloed && fastStatus(line, c) { return }
        switch WireParser.parse(line.readableBytesView) {
        case .empty:
            return
        case .badTag:
            bye(c, "bad-request")
        case .malformed(let tag):
            outbox.error(c, tag, "bad-request")
        case .request(let request):
            // Waiting from the start: an answer that comes at once (store work that completes
            // before `handle` returns) resumes the queue itself.
            clients[c]?.requests.awaitAnswer()
            let answered: Bool
            if request.verb == Verb.set.rawValue && clients[c]?.role == .provider {
                // Pipelined SETs share one barrier and one commit.
                let sets = [request] + (clients[c]?.requests.takeSets() ?? [])
                answered = handleSets(sets, from: c)
            } else {
                answered = handle(request, from: c)
            }
            if answered { clients[c]?.requests.answered() }
        }
    }

    /// The slow request answered: go on with the lines that queued behind it, then hand out
    /// what they wrote.
    func resume(_ c: Clients.ID) {
        clients[c]?.requests.answered()
        while clients.isActive(c), let line = clients[c]?.requests.next() {
            process(line, from: c)
        }
        deliver()
    }

    // MARK: Requests

    /// Answers one request. Returns false when the answer comes later (the client's next
    /// requests then queue until `resume`).
    func handle(_ req: WireRequest, from c: Clients.ID) -> Bool {
        guard let role = clients[c]?.role else {
            if req.verb == Verb.hello.rawValue { hello(req, c) } else { outbox.error(c, req.tag, "hello-required") }
            return true
        }
        guard let verb = Verb(rawValue: req.verb) else {
            outbox.error(c, req.tag, "unknown-verb")
            return true
        }
        if verb == .hello {
            outbox.error(c, req.tag, "bad-request", message: Array("HELLO was already sent".utf8))
            return true
        }
        guard verb.allowed(for: role) else {
            outbox.error(c, req.tag, "forbidden", message: Array("\(req.verb) is not for role \(role.rawValue)".utf8))
            return true
        }
        switch verb {
        case .hello: break
        case .ping: outbox.ok(c, req.tag)
        case .bye:
            outbox.ok(c, req.tag)
            close(c)
        case .roots: roots(req, c)
        case .badges: badgesList(req, c)
        case .stats: return stats(req, c)
        case .status: return status(req, c)
        case .list: list(req, c, observe: false)
        case .observe: list(req, c, observe: true)
        case .unobserve: unobserve(req, c)
        case .addRoot: return addRoot(req, c)
        case .removeRoot: return removeRoot(req, c)
        case .set: return handleSets([req], from: c)
        case .changes: changes(req, c)
        case .subscribeChanges: subscribeChanges(req, c)
        case .claim: claim(req, c)
        case .defineBadge: defineBadge(req, c)
        case .defineMenu: defineMenu(req, c)
        case .defineToolbar: defineToolbar(req, c)
        case .menu: menu(req, c)
        case .action: return action(req, c)
        case .answer: answer(req, c)
        case .unclaim: unclaim(req, c)
        case .toolbar: toolbar(req, c)
        }
        return true
    }

    func hello(_ req: WireRequest, _ c: Clients.ID) {
        let hello = Hello(req)
        guard hello.proto == "1" else {
            outbox.error(c, req.tag, Err("unsupported-version", supported: "1"))
            return
        }
        guard let role = hello.role else {
            outbox.error(c, req.tag, "bad-request", message: Array("role must be viewer, provider or admin".utf8))
            return
        }
        clients[c]?.role = role
        if let name = hello.name, !name.isEmpty { clients[c]?.name = name }
        clients[c]?.wantsRootPushes = hello.rootPushes
        outbox.ok(c, req.tag, Ok(proto: 1, server: Hub.serverName, epoch: settings.epoch, caps: Hub.capabilities))
    }

    // MARK: Arguments

    /// The request's path fields, each checked, as many as its verb takes (`Verb.pathCount`);
    /// nil (with the error sent) if any is bad or there are too few or too many.
    func paths(_ req: WireRequest, _ c: Clients.ID) -> [[UInt8]]? {
        let count = Verb(rawValue: req.verb)?.pathCount ?? 1...Int.max
        guard count.contains(req.fields.count) else {
            let n = count.lowerBound == count.upperBound ? "\(count.lowerBound)" : "at least \(count.lowerBound)"
            outbox.error(c, req.tag, "bad-request", message: Array("\(req.verb) takes \(n) path\(count == 1...1 ? "" : "s")".utf8))
            return nil
        }
        for f in req.fields where !PathBytes.isNormalizedAbsolute(f.bytes) {
            outbox.error(c, req.tag, "bad-path", message: f.bytes)
            return nil
        }
        return req.fields.map(\.bytes)
    }

    // MARK: Queries

    func badgesList(_ req: WireRequest, _ c: Clients.ID) {
        for b in settings.badges { outbox.write(c, b.wireLine(head: req.tag)) }
        outbox.ok(c, req.tag)
    }

    /// `STATS`: the counts as they are when the request is handled; the resident size is read
    /// from `/proc/self/statm` on the file thread (`fileWork`), since the loop reads no file.
    /// False while it is (the client's later requests wait).
    func stats(_ req: WireRequest, _ c: Clients.ID) -> Bool {
        let values: [(String, Int)] = [
            ("clients", clients.count),
            ("roots", roots.count),
            ("items", tree.liveCount),
            ("watches", watcher?.totalWatches ?? 0),
            ("events", watcher?.events ?? 0),
            ("commits", sets.commits),
            ("commits-done", sets.commitsDone),
            ("observations", clients.observers.count),
            ("tombstones", tree.tombstoneCount),
        ]
        fileWork {
            Self.residentBytes()
        }.assumeIsolated().whenComplete { result in
            guard self.clients.isActive(c) else { return }
            // The pool stopped (the daemon is on its way out): nothing could be read.
            for (k, v) in values + [("rss-bytes", (try? result.get()) ?? 0)] {
                self.outbox.write(c, Stat(k, v).wireLine(head: req.tag))
            }
            self.outbox.ok(c, req.tag)
            self.resume(c)
        }
        return false
    }

    static func residentBytes() -> Int {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let parts = statm.split(separator: " ")
        guard parts.count >= 2, let pages = Int(parts[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// `STATUS`. A path outside every root is looked up on disk (its kind) off the event loop
    /// (`fileWork`): the loop never waits for the file system. Returns false while it is.
    func status(_ req: WireRequest, _ c: Clients.ID) -> Bool {
        guard let paths = paths(req, c) else { return true }
        var lines: [WireLine?] = []
        var outside: [[UInt8]] = []
        for p in paths {
            if tree.root(containing: p) != nil {
                guard let id = tree.find(p) else {
                    outbox.error(c, req.tag, "not-found", message: p)
                    return true
                }
                lines.append(tree.view(id, path: p).wireLine(head: req.tag))
            } else {
                lines.append(nil)
                outside.append(p)
            }
        }
        guard !outside.isEmpty else {
            for case let l? in lines { outbox.write(c, l) }
            outbox.ok(c, req.tag)
            return true
        }
        let files = ports.files
        let lookups = outside
        fileWork {
            lookups.map { files.lstat($0)?.kind ?? .gone }
        }.assumeIsolated().whenComplete { result in
            guard self.clients.isActive(c) else { return }
            // The pool stopped (the daemon is on its way out): what cannot be looked at is gone.
            var kinds = ((try? result.get()) ?? lookups.map { _ in .gone }).makeIterator()
            var outsidePaths = lookups.makeIterator()
            for l in lines {
                if let l {
                    self.outbox.write(c, l)
                } else if let p = outsidePaths.next(), let kind = kinds.next() {
                    self.outbox.write(c, Item.outsideLine(head: req.tag, path: p, kind: kind))
                }
            }
            self.outbox.ok(c, req.tag)
            self.resume(c)
        }
        return false
    }

    /// The existing directory at `path`, or nil with the error sent.
    func directory(_ req: WireRequest, _ c: Clients.ID, _ path: [UInt8]) -> StateTree.NodeID? {
        guard tree.root(containing: path) != nil else {
            outbox.error(c, req.tag, "outside", message: path)
            return nil
        }
        guard let id = tree.find(path), tree.record(id).kind != .gone else {
            outbox.error(c, req.tag, "not-found", message: path)
            return nil
        }
        guard tree.record(id).kind == .dir else {
            outbox.error(c, req.tag, "not-a-directory", message: path)
            return nil
        }
        return id
    }

    func list(_ req: WireRequest, _ c: Clients.ID, observe: Bool) {
        guard let p = paths(req, c)?.first, let id = directory(req, c, p) else { return }
        let children = tree.children(id)
        // `OBSERVE <dir> list=0` (1.1): the count without the listing, for prompts.
        if !(observe && req.option("list") == "0") {
            // Each child's path and line built in reused buffers: a file manager lists
            // directories of thousands of entries.
            var childPath = p
            if childPath != [PathBytes.slash] { childPath.append(PathBytes.slash) }
            let base = childPath.count
            let head = Array(req.tag.utf8)
            scratch.listOut.removeAll(keepingCapacity: true)
            for child in children {
                childPath.removeSubrange(base...)
                tree.appendName(child, to: &childPath)
                tree.appendItemLine(child, path: childPath[...], head: head[...], into: &scratch.listOut)
            }
            outbox.writeLines(c, scratch.listOut)
            // A big listing's buffer is not kept for the daemon's whole life.
            if scratch.listOut.capacity > 1 << 16 { scratch.listOut = [] }
        }
        if observe {
            clients.observers.observe(id, by: c)
        }
        outbox.ok(c, req.tag, Ok(count: children.count))
    }

    func unobserve(_ req: WireRequest, _ c: Clients.ID) {
        guard let p = paths(req, c)?.first else { return }
        guard let id = tree.find(p), clients.observers.unobserve(id, by: c) != .notObserved else {
            outbox.error(c, req.tag, "not-found", message: p)
            return
        }
        outbox.ok(c, req.tag)
    }
}

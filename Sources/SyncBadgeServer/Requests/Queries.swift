#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import NIOCore
import SyncBadgeCore
import SyncBadgeWatchEvents

/// The requests that read the tree and answer at once (`HELLO`, `STATUS` in its general form,
/// `LIST`, `OBSERVE`, `UNOBSERVE`, `BADGES`, `STATS`' counts). Their answers are built straight
/// into the outbox, in buffers kept between requests (a file manager lists directories of
/// thousands of entries): no effects to carry out but the writes, and none allocated per
/// request. The plain `STATUS` does not come here (PlainStatus, in the outbox). No I/O: a
/// `STATUS` of a path outside every root says what to look up, and the hub does.
struct Queries {
    /// `LIST` and `OBSERVE`'s listings.
    private var listOut: [UInt8] = []

    /// A new epoch for the server, eight hex digits (`HELLO`'s answer).
    static func newEpoch() -> String {
        let hex = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }

    static let serverName = "syncbadge/\(SyncBadgeVersion.string)"
    /// Protocol 1.0's, then 1.1's and 1.2's (PROTOCOL.md, "Capabilities of version 1.1" and "1.2").
    static let capabilities = ["observe", "menus", "changes", "observe-nolist", "roots-optout", "badge-push", "provider-address",
                               "action-reply", "lease", "unclaim", "toolbar-push"]

    static func hello(_ req: WireRequest, _ c: Clients.ID, epoch: String, clients: inout Clients, outbox: inout Outbox) {
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
        outbox.ok(c, req.tag, Ok(proto: 1, server: serverName, epoch: epoch, caps: capabilities))
    }

    static func paths(_ req: WireRequest, _ c: Clients.ID, outbox: inout Outbox) -> [[UInt8]]? {
        switch req.checkedPaths() {
        case .success(let paths): return paths
        case .failure(let err):
            outbox.error(c, req.tag, err)
            return nil
        }
    }

    static func badges(_ req: WireRequest, _ c: Clients.ID, _ badges: [Badge], outbox: inout Outbox) {
        for b in badges { outbox.write(c, b.wireLine(head: req.tag)) }
        outbox.ok(c, req.tag)
    }

    /// `STATS`' lines but the resident size, which is read off the loop (`residentBytes`).
    static func stats(clients: Clients, roots: Int, tree: inout StateTree, watcher: (any WatcherControl)?,
                      sets: SetPipeline<SetGroup, CommitWaiter>) -> [(String, Int)] {
        [("clients", clients.count), ("roots", roots), ("items", tree.liveCount), ("watches", watcher?.totalWatches ?? 0),
         ("events", watcher?.events ?? 0), ("commits", sets.commits), ("commits-done", sets.commitsDone),
         ("observations", clients.observers.count), ("tombstones", tree.tombstoneCount)]
    }

    /// `STATS`' answer; `rss`: the resident size (nil: the file thread stopped, the daemon is
    /// on its way out).
    static func answerStats(_ values: [(String, Int)], rss: Int?, tag: String, _ c: Clients.ID, outbox: inout Outbox) {
        for (k, v) in values + [("rss-bytes", rss ?? 0)] { outbox.write(c, Stat(k, v).wireLine(head: tag)) }
        outbox.ok(c, tag)
    }

    static func residentBytes() -> Int {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let parts = statm.split(separator: " ")
        guard parts.count >= 2, let pages = Int(parts[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// A `STATUS` with paths outside every root: their kinds are looked up on disk, off the
    /// loop, and then every line goes out in order.
    struct Outside {
        var lines: [WireLine?]
        var paths: [[UInt8]]
    }

    /// `STATUS` in its general form: answered, or nil; or the paths outside every root to look
    /// up first (`answerOutside`).
    static func status(_ req: WireRequest, _ c: Clients.ID, tree: inout StateTree, outbox: inout Outbox) -> Outside? {
        guard let paths = paths(req, c, outbox: &outbox) else { return nil }
        var lines: [WireLine?] = []
        var outside: [[UInt8]] = []
        for p in paths {
            if tree.root(containing: p) != nil {
                guard let id = tree.find(p) else {
                    outbox.error(c, req.tag, "not-found", message: p)
                    return nil
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
            return nil
        }
        return Outside(lines: lines, paths: outside)
    }

    /// The kinds of the outside paths are back (nil: they could not be looked at: gone).
    static func answerOutside(_ o: Outside, kinds: [EntryKind]?, tag: String, _ c: Clients.ID, outbox: inout Outbox) {
        var kinds = (kinds ?? o.paths.map { _ in .gone }).makeIterator()
        var outsidePaths = o.paths.makeIterator()
        for l in o.lines {
            if let l {
                outbox.write(c, l)
            } else if let p = outsidePaths.next(), let kind = kinds.next() {
                outbox.write(c, Item.outsideLine(head: tag, path: p, kind: kind))
            }
        }
        outbox.ok(c, tag)
    }

    /// The existing directory at `path`, or nil with the error sent.
    private static func directory(_ req: WireRequest, _ c: Clients.ID, _ path: [UInt8], tree: inout StateTree, outbox: inout Outbox) -> StateTree.NodeID? {
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

    /// `LIST`, and `OBSERVE` (which also follows the directory).
    mutating func list(_ req: WireRequest, _ c: Clients.ID, observe: Bool, tree: inout StateTree, clients: inout Clients, outbox: inout Outbox) {
        guard let p = Self.paths(req, c, outbox: &outbox)?.first, let id = Self.directory(req, c, p, tree: &tree, outbox: &outbox) else { return }
        let children = tree.children(id)
        // `OBSERVE <dir> list=0` (1.1): the count without the listing, for prompts.
        if !(observe && req.option("list") == "0") {
            // Each child's path and line built in reused buffers.
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
            outbox.writeLines(c, listOut)
            // A big listing's buffer is not kept for the daemon's whole life.
            if listOut.capacity > 1 << 16 { listOut = [] }
        }
        if observe { clients.observers.observe(id, by: c) }
        outbox.ok(c, req.tag, Ok(count: children.count))
    }

    static func unobserve(_ req: WireRequest, _ c: Clients.ID, tree: inout StateTree, clients: inout Clients, outbox: inout Outbox) {
        guard let p = paths(req, c, outbox: &outbox)?.first else { return }
        guard let id = tree.find(p), clients.observers.unobserve(id, by: c) != .notObserved else {
            outbox.error(c, req.tag, "not-found", message: p)
            return
        }
        outbox.ok(c, req.tag)
    }
}

extension Queries {
    /// Whether a request goes on to its owner: its verb and the client's role, or nil when it
    /// was answered here (`HELLO` itself, or refused: before `HELLO`, an unknown verb, a
    /// second `HELLO`, a verb not for the role).
    static func admit(_ req: WireRequest, _ c: Clients.ID, epoch: String, clients: inout Clients, outbox: inout Outbox) -> (Verb, Role)? {
        guard let role = clients[c]?.role else {
            if req.verb == Verb.hello.rawValue {
                hello(req, c, epoch: epoch, clients: &clients, outbox: &outbox)
            } else {
                outbox.error(c, req.tag, "hello-required")
            }
            return nil
        }
        guard let verb = Verb(rawValue: req.verb) else {
            outbox.error(c, req.tag, "unknown-verb")
            return nil
        }
        guard verb != .hello else {
            outbox.error(c, req.tag, "bad-request", message: Array("HELLO was already sent".utf8))
            return nil
        }
        guard verb.allowed(for: role) else {
            outbox.error(c, req.tag, "forbidden", message: Array("\(req.verb) is not for role \(role.rawValue)".utf8))
            return nil
        }
        return (verb, role)
    }
}

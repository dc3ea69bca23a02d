#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import SyncBadgeCore
import SyncBadgeStore
import SyncBadgeWatchEvents

/// Roots, from `ADD-ROOT` to `REMOVE-ROOT`: registering and scanning, restoring at start,
/// vanishing and coming back, rescans after lost events, their ignore files, claims, and their
/// `ROOT` lines. The registry keeps each root's own state, the tree (passed in) its entries;
/// one mutating func per verb or watcher event keeps the two in step and returns what the hub
/// is to carry out (`Effects`). No I/O.
struct Roots {
    var registry = RootRegistry()
    /// Paths the daemon writes itself (its state directory): ignored inside any root.
    let privatePaths: [[UInt8]]

    init(privatePaths: [[UInt8]]) {
        self.privatePaths = privatePaths
    }

    func rules(for root: [UInt8], file: [UInt8]?, defaults: Bool) -> IgnoreRules {
        var rules = IgnoreRules(fileContents: file, defaults: defaults)
        for p in privatePaths {
            if let rel = PathBytes.relativeComponents(p, under: root), !rel.isEmpty {
                rules.ignoreExactly(rel.map(Array.init))
            }
        }
        return rules
    }

    // MARK: Registering

    /// `ADD-ROOT`: the root is registered as `scanning=1` and the watcher asked to watch and
    /// scan it; the answer waits for the scan (`scanned`).
    mutating func add(_ req: WireRequest, _ c: Clients.ID, tree: inout StateTree) -> Effects {
        var fx = Effects()
        guard let p = fx.paths(req, c)?.first else { return fx }
        switch registry.check(adding: p, privatePaths: privatePaths) {
        case .alreadyARoot:
            fx.ok(c, req.tag)
        case .busy(let why):
            fx.error(c, req.tag, "busy", message: Array(why.utf8))
        case .add:
            let token = addUnscanned(p, ignoreDefaults: req.option("ignore-defaults") != "0",
                                     scan: .init(client: c, tag: req.tag, restored: false), tree: &tree)
            fx = Self.startWatching(p, token: token, identities: false)
            fx.waits = true
        }
        return fx
    }

    /// A root in the registry and the tree with nothing below it yet (a new root, or a stored
    /// one with no stored entries): the watcher's scan fills it. Returns the scan's token.
    mutating func addUnscanned(_ path: [UInt8], ignoreDefaults: Bool, scan: RootRegistry.Scan, tree: inout StateTree) -> UInt64 {
        let (token, rules) = register(path, ignoreDefaults: ignoreDefaults, scan: scan)
        tree.addRoot(path: path, scan: ScanTree(), rules: rules)
        return token
    }

    private mutating func register(_ path: [UInt8], ignoreDefaults: Bool, scan: RootRegistry.Scan) -> (UInt64, IgnoreRules) {
        (registry.begin(path, ignoreDefaults: ignoreDefaults, scan: scan), rules(for: path, file: nil, defaults: ignoreDefaults))
    }

    /// Announced before the watcher starts, so the announcement shows no watches yet.
    /// `identities`: a stored root, which may hold synced files: its scan reads identities, and
    /// so do the watcher's batches below it from the start.
    static func startWatching(_ path: [UInt8], token: UInt64, identities: Bool) -> Effects {
        var fx = Effects([.pushRoot(path)])
        if identities { fx.append(.watcher(.compareIdentities(under: path))) }
        fx.append(.watcher(.addRoot(path, token: token, identities: identities)))
        return fx
    }

    // MARK: Restoring at start (`restore`)

    mutating func beginRestoring(_ stored: StoredRoot, entries: Int, tree: inout StateTree) -> UInt64 {
        let (token, rules) = register(stored.path, ignoreDefaults: stored.ignoreDefaults, scan: .init(client: nil, tag: "", restored: true))
        registry.restoring = tree.beginRestore(path: stored.path, rules: rules, entries: entries)
        return token
    }

    mutating func restoreChunk(_ entries: StoredEntries, tree: inout StateTree) {
        tree.restore(entries, into: &registry.restoring!)
    }

    mutating func finishRestoring(_ path: [UInt8], entries: Int, tree: inout StateTree) -> Effects {
        guard let restore = registry.restoring else { return Effects() }
        registry.restoring = nil
        tree.finishRestore(restore)
        return Effects([.log(.info, "loaded stored states", ["root": "\(PathBytes.display(path))", "entries": "\(entries)"])])
    }

    // MARK: The watcher's answers

    /// A watcher message about a root (its scan, a rescan or refresh, its vanishing, its
    /// ignore file); nothing for the others (Ingest applies the file events).
    mutating func watcherReported(_ e: WatcherMessage, tree: inout StateTree) -> Effects {
        switch e {
        case .rootAdded(let root, let token, let result): scanned(root, token: token, result: result, tree: &tree)
        case .rootRescanned(let root, let scan): rescanned(root, scan, tree: &tree)
        case .rootRefreshed(let root, let scan): refreshed(root, scan, tree: &tree)
        case .rootVanished(let root, let reason): vanished(root, reason: reason, tree: &tree)
        case .ignoreFileChanged(let root, let contents): ignoreFileChanged(root, contents, tree: &tree)
        default: Effects()
        }
    }

    /// The watcher's answer to a root being added (by `ADD-ROOT` or at start).
    mutating func scanned(_ path: [UInt8], token: UInt64, result: Result<RootScan, RootError>, tree: inout StateTree) -> Effects {
        var fx = Effects()
        guard let pending = registry.scanAnswered(token, path: path), let ignoreDefaults = registry[path]?.ignoreDefaults else { return fx }
        switch result {
        case .success(let scan):
            tree.setRules(root: path, rules: rules(for: path, file: scan.ignoreFile, defaults: ignoreDefaults))
            // Stored in error because its directory had vanished, and found again at start.
            if let message = tree.root(at: path).map({ tree.record($0.node) })?.message, message.hasPrefix(Self.errorPrefix(path)) {
                tree.clearRootError(path)
            }
            if pending.restored {
                // What changed while the daemon was down: new entries pending, vanished ones
                // tombstoned, synced files whose identity changed pending.
                tree.reconcile(root: path, scan: scan.scan)
                fx.append(.resetChanges(path))
            } else {
                tree.fill(root: path, scan: scan.scan)
            }
            registry.watched(path, ignoreFile: scan.ignoreFile, degraded: scan.degraded)
            fx.append(.log(.info, "watching root", ["root": "\(PathBytes.display(path))", "entries": "\(scan.scan.count)", "watches": "\(scan.watches)"]))
            // A new root's row is stored first; its entries follow with the next group commit,
            // once the answer is out.
            fx.append(pending.isNew ? .storeRoot(StoredRoot(path: path, ignoreDefaults: ignoreDefaults), pending) : .pushRoot(path))
        case .failure(let error):
            let (code, message): (String, String)
            switch error {
            // A stored root that is missing is watched for (WatcherLoop+Commands).
            case .notFound: (code, message) = ("not-found", pending.isNew ? "no such directory" : "no such directory; it is watched again when it comes back")
            case .notADirectory: (code, message) = ("not-a-directory", "not a directory")
            case .failed(let why): (code, message) = ("internal", why)
            }
            registry.scanFailed(path, scan: pending, message: message)
            guard pending.isNew else {
                tree.setRootError(path, message: Self.errorPrefix(path) + message)
                fx.append(.log(.error, "cannot watch stored root", ["root": "\(PathBytes.display(path))", "reason": "\(message)"]))
                fx.append(.pushRoot(path))
                return fx
            }
            fx.append(.providers(.forgetSets(path)))
            tree.removeRoot(path: path)
            // Observers of the empty root (OBSERVE during its scan) hear it go; other roots'
            // changes drained with it are pushed as usual. A group commit may have stored the
            // empty root meanwhile.
            fx.append(contentsOf: Effects([.publish, .unstoreRoot(path, answering: nil), .pushRootRemoved(path)]))
            if let c = pending.client {
                fx.error(c, pending.tag, code, message: Array("\(PathBytes.display(path)): \(message)".utf8))
                fx.append(.resume(c))
            }
        }
        return fx
    }

    /// A new root's row is stored (or not): its `ADD-ROOT` is answered (`active`: its client is
    /// still there), out before the requests queued behind it run (a SET there would start the
    /// commit first).
    static func stored(_ path: [UInt8], _ pending: RootRegistry.Scan, result: Result<Void, Error>, active: Bool) -> Effects {
        var fx = Effects([.pushRoot(path)])
        guard let c = pending.client, active else { return fx }
        switch result {
        case .success: fx.ok(c, pending.tag)
        case .failure(let e): fx.error(c, pending.tag, "internal", message: Array("cannot store the root: \(e)".utf8))
        }
        fx.append(.deliver)
        fx.append(.resume(c))
        return fx
    }

    /// `REMOVE-ROOT`: the watcher stops, the tree and the providers forget it, the store's rows
    /// go; answered once they have (`unstored`).
    mutating func remove(_ req: WireRequest, _ c: Clients.ID, tree: inout StateTree) -> Effects {
        var fx = Effects()
        guard let p = fx.paths(req, c)?.first else { return fx }
        let claimant = registry.claimant(of: p)
        switch registry.remove(p) {
        case .notARoot:
            fx.error(c, req.tag, "not-found", message: Array("\(PathBytes.display(p)) is not a root".utf8))
            return fx
        case .scanning:
            fx.error(c, req.tag, "busy", message: Array("\(PathBytes.display(p)) is being scanned".utf8))
            return fx
        case .removed:
            break
        }
        fx.append(.watcher(.removeRoot(p)))
        tree.removeRoot(path: p)
        // What held its `syncing` entries goes with them (their lease rows with the root's row).
        fx.append(.providers(.rootRemoved(p)))
        if let owner = claimant { fx.append(.toolbarUnclaimed(owner)) }
        fx.append(contentsOf: Effects([.publish, .pushRootRemoved(p), .unstoreRoot(p, answering: (c, req.tag))]))
        fx.waits = true
        return fx
    }

    /// The removed root's rows went from the store (or not): its `REMOVE-ROOT`'s answer.
    static func unstored(_ tag: String, _ c: Clients.ID, result: Result<Void, Error>) -> Effects {
        var fx = Effects()
        switch result {
        case .success: fx.ok(c, tag)
        case .failure(let e): fx.error(c, tag, "internal", message: Array("cannot store the change: \(e)".utf8))
        }
        return fx
    }

    // MARK: While watched

    /// How the daemon's own `error` on a root begins (a provider's message on the root is its
    /// own): the error it clears once the directory is back.
    static func errorPrefix(_ root: [UInt8]) -> String {
        "\(PathBytes.display(root)): "
    }

    /// The root directory itself was deleted, moved away or unmounted: it turns `error`, its
    /// entries keep what they had, and the watcher watches for it to come back.
    mutating func vanished(_ root: [UInt8], reason: String, tree: inout StateTree) -> Effects {
        let message = "the root directory was \(reason); it is watched again when it comes back"
        guard registry.vanished(root, message: message) else { return Effects() }
        tree.setRootError(root, message: Self.errorPrefix(root) + message)
        return Effects([.pushRoot(root)])
    }

    /// The root's ignore file changed: new rules; entries they stop ignoring are created anew.
    mutating func ignoreFileChanged(_ root: [UInt8], _ contents: [UInt8]?, tree: inout StateTree) -> Effects {
        guard let info = registry.ignoreFileChanged(root, contents: contents) else { return Effects() }
        let unignored = tree.setRules(root: root, rules: rules(for: root, file: contents, defaults: info.ignoreDefaults))
        return Effects(unignored.filter { tree.record($0).kind != .gone }.map { .changed(tree.path($0), .create) })
    }

    /// After lost events: make the root match the scan, then tell every observer of a directory
    /// in it to list again (`resets`), and every change subscriber to ask for `CHANGES` again.
    mutating func rescanned(_ root: [UInt8], _ scan: RootScan, tree: inout StateTree) -> Effects {
        guard reconcile(root, scan, tree: &tree) != nil else { return Effects() }
        return Effects([.publish, .resetObservers(root: root), .resetChanges(root)])
    }

    /// `* RESET` for every observed directory in `root`, to its observers.
    static func resets(under root: [UInt8], observers: ObserverIndex, tree: inout StateTree) -> Effects {
        var fx = Effects()
        for node in observers.observedNodes where tree.record(node).kind == .dir {
            guard let ids = observers.observers(of: node) else { continue }
            let p = tree.path(node)
            guard PathBytes.relativeComponents(p, under: root) != nil else { continue }
            for c in ids { fx.write(c, Reset(p).wireLine(head: "*")) }
        }
        return fx
    }

    /// A fresh scan with nothing lost elsewhere (a periodic rescan of a root over the watch
    /// limit, or a root that came back): what differs is pushed like any change, and the change
    /// feed is reset only when something did.
    mutating func refreshed(_ root: [UInt8], _ scan: RootScan, tree: inout StateTree) -> Effects {
        guard let info = registry[root], !info.scanning else { return Effects() }
        let before = tree.lastGen
        if info.error != nil { tree.clearRootError(root) }
        guard let was = reconcile(root, scan, tree: &tree) else { return Effects() }
        var fx = Effects()
        if tree.lastGen != before { fx.append(.resetChanges(root)) }
        if tree.lastGen != before || was.wasDegraded != scan.degraded { fx.append(.pushRoot(root)) }
        return fx
    }

    /// Makes a watched root match a fresh scan: its ignore file, its rules, its entries, whether
    /// it is fully watched. Nil while the root is still being scanned.
    private mutating func reconcile(_ root: [UInt8], _ scan: RootScan, tree: inout StateTree) -> (wasInError: Bool, wasDegraded: String?)? {
        guard let was = registry.refreshed(root, ignoreFile: scan.ignoreFile, degraded: scan.degraded),
              let info = registry[root] else { return nil }
        tree.setRules(root: root, rules: rules(for: root, file: scan.ignoreFile, defaults: info.ignoreDefaults))
        tree.reconcile(root: root, scan: scan.scan)
        return was
    }

    // MARK: Ignore files

    /// The built-in Ignore / Stop ignoring wrote the root's ignore file (`failure`: why not):
    /// its contents are known at once; the watcher sees the edit and the rules apply as for any
    /// other edit. `active`: its client is still there to be answered.
    mutating func ignoreFileWritten(_ root: [UInt8], _ contents: [UInt8], failure: String?, client c: Clients.ID, tag: String, active: Bool) -> Effects {
        if failure == nil { _ = registry.ignoreFileChanged(root, contents: contents) }
        var fx = Effects()
        guard active else { return fx }
        if let failure {
            let file = PathBytes.join(root, IgnoreRules.fileName)
            fx.error(c, tag, "internal", message: Array("cannot write \(PathBytes.display(file)): \(failure)".utf8))
        } else {
            fx.ok(c, tag)
        }
        fx.append(.resume(c))
        return fx
    }

    /// Writes a small file in place (no temporary file: its rename would show up as a change).
    /// Runs on the file thread (`HubEffect.writeIgnoreFile`); nil, or why it failed.
    static func writeFile(_ path: [UInt8], _ bytes: [UInt8]) -> String? {
        let fd = path.withCString { open($0, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o644) }
        guard fd >= 0 else { return String(cString: strerror(errno)) }
        defer { Glibc.close(fd) }
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return String(cString: strerror(errno))
            }
            off += n
        }
        return nil
    }

    // MARK: Claims (providers)

    /// The root at exactly the request's path, or nil with the error answered (`not-found`
    /// under a root, `outside` under none).
    static func exactRoot(_ req: WireRequest, _ c: Clients.ID, registry: RootRegistry, tree: inout StateTree, _ fx: inout Effects) -> [UInt8]? {
        guard let p = fx.paths(req, c)?.first else { return nil }
        guard tree.root(at: p) != nil, registry[p] != nil else {
            fx.error(c, req.tag, tree.root(containing: p) != nil ? "not-found" : "outside", message: p)
            return nil
        }
        return p
    }

    /// `CLAIM`. `name`: a client's name, for the error naming who holds the root.
    mutating func claim(_ req: WireRequest, _ c: Clients.ID, tree: inout StateTree, name: (Clients.ID) -> String?) -> Effects {
        var fx = Effects()
        guard let root = Self.exactRoot(req, c, registry: registry, tree: &tree, &fx) else { return fx }
        let before = registry.claimant(of: root)
        if case .heldBy(let owner) = registry.claim(root, by: c) {
            fx.error(c, req.tag, "busy", message: Array("claimed by \(name(owner) ?? "")".utf8))
            return fx
        }
        fx.ok(c, req.tag)
        fx.append(.pushRoot(root))
        // A second CLAIM of the same root is no new claim.
        if before == nil { fx.append(.toolbarClaimed(c)) }
        return fx
    }

    /// `UNCLAIM` (1.2): what the provider holds `syncing` in the root is released.
    mutating func unclaim(_ req: WireRequest, _ c: Clients.ID, tree: inout StateTree) -> Effects {
        var fx = Effects()
        guard let p = fx.paths(req, c)?.first else { return fx }
        guard let rootNode = tree.root(at: p)?.node, registry.unclaim(p, by: c) else {
            fx.error(c, req.tag, "not-found", message: Array("\(PathBytes.display(p)) is not claimed by this connection".utf8))
            return fx
        }
        fx.ok(c, req.tag)
        fx.append(contentsOf: Effects([.pushRoot(p), .toolbarUnclaimed(c), .providers(.unclaimed(c, root: rootNode))]))
        return fx
    }

    // MARK: ROOT lines

    /// A root's `ROOT` line as it is now, or `removed` once it is no root. `provider`: the
    /// claimant's name; `watches`: the watcher's count for it.
    func line(_ path: [UInt8], tree: inout StateTree, provider: (Clients.ID) -> String?, watches: Int) -> RootRegistry.RootLine {
        guard let root = registry[path] else { return .removed(path) }
        let reported = tree.root(at: path).map { r in
            let own = tree.record(r.node)
            return RootRegistry.Reported(state: tree.reportedState(r.node), ownState: own.state, ownMessage: own.message,
                                         entriesInError: tree.counts(r.node)[.error])
        }
        return registry.line(root, reported: reported, provider: registry.claimant(of: path).flatMap(provider), watches: watches)
    }
}

extension Roots {
    /// Restores the stored roots at start, before any client connects; they answer with
    /// `scanning=1` until their rescan ends. The store's reads run on the calling thread and the
    /// tree's fill on the hub's loop, one chunk at a time, so that the two overlap
    /// (PERFORMANCE.md, "Start-up"). The watcher starts on the roots once all of them are in:
    /// nothing it reports may run between the chunks of a root half restored.
    static func restore(from store: any StateStore, into hub: NIOLoopBound<Hub>, chunk: Int = 8_192) throws {
        let loop = hub.eventLoop
        var toWatch: [(path: [UInt8], token: UInt64)] = []
        for stored in try store.roots() {
            let count = try store.entryCount(root: stored.path)
            guard count > 0 else {
                let token = try loop.submit {
                    let h = hub.value
                    return h.roots.addUnscanned(stored.path, ignoreDefaults: stored.ignoreDefaults,
                                                scan: .init(client: nil, tag: "", restored: false), tree: &h.tree)
                }.wait()
                toWatch.append((stored.path, token))
                continue
            }
            let token = try loop.submit { let h = hub.value; return h.roots.beginRestoring(stored, entries: count, tree: &h.tree) }.wait()
            try store.entries(root: stored.path, chunk: chunk) { part in
                loop.execute { let h = hub.value; h.roots.restoreChunk(part, tree: &h.tree) }
            }
            try loop.submit { let h = hub.value; h.perform(h.roots.finishRestoring(stored.path, entries: count, tree: &h.tree)) }.wait()
            toWatch.append((stored.path, token))
        }
        let roots = toWatch
        let leases = try store.leases()
        try loop.submit {
            // Before the rescan: what it finds changed turns `pending` and leaves the hold.
            let h = hub.value
            h.perform(h.providers.restore(leases, nowMs: h.ports.clock.nowMs(), tree: &h.tree))
            for r in roots { hub.value.perform(startWatching(r.path, token: r.token, identities: true)) }
        }.wait()
    }
}

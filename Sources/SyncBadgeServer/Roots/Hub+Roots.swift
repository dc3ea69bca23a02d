import NIOCore
import SyncBadgeCore
import SyncBadgeStore
import SyncBadgeWatchEvents

/// Roots, from `ADD-ROOT` to `REMOVE-ROOT`: registering and scanning, reloading at start,
/// vanishing and coming back, rescans after lost events, their ignore files, claims, and their
/// `ROOT` lines. RootRegistry keeps each root's own state; the tree its entries.
extension Hub {
    // MARK: Registering

    /// Restores the stored roots at start, before any client connects; they answer with
    /// `scanning=1` until their rescan ends. The store's reads run on the calling thread and the
    /// tree's fill on the hub's loop, one chunk at a time, so that the two overlap
    /// (PERFORMANCE.md, "Start-up"). The watcher starts on the roots once all of them are in:
    /// nothing it reports may run between the chunks of a root half restored.
    static func restoreStoredRoots(_ hub: NIOLoopBound<Hub>, store: any StateStore, chunk: Int = 8_192) throws {
        let loop = hub.eventLoop
        var toWatch: [(path: [UInt8], token: UInt64)] = []
        for stored in try store.roots() {
            let count = try store.entryCount(root: stored.path)
            guard count > 0 else {
                let token = try loop.submit {
                    hub.value.addUnscannedRoot(stored.path, ignoreDefaults: stored.ignoreDefaults,
                                                  scan: .init(client: nil, tag: "", restored: false))
                }.wait()
                toWatch.append((stored.path, token))
                continue
            }
            let token = try loop.submit { hub.value.beginRestoring(stored, entries: count) }.wait()
            try store.entries(root: stored.path, chunk: chunk) { part in
                loop.execute { hub.value.restoreChunk(part) }
            }
            try loop.submit { hub.value.finishRestoring(stored.path, entries: count) }.wait()
            toWatch.append((stored.path, token))
        }
        let roots = toWatch
        let leases = try store.leases()
        try loop.submit {
            // Before the rescan: what it finds changed turns `pending` and leaves the hold.
            hub.value.restoreReleases(leases)
            for r in roots { hub.value.startWatching(r.path, token: r.token, identities: true) }
        }.wait()
    }

    private func beginRestoring(_ stored: StoredRoot, entries: Int) -> UInt64 {
        let (token, rules) = registerRoot(stored.path, ignoreDefaults: stored.ignoreDefaults,
                                          scan: .init(client: nil, tag: "", restored: true))
        roots.restoring = tree.beginRestore(path: stored.path, rules: rules, entries: entries)
        return token
    }

    private func restoreChunk(_ entries: StoredEntries) {
        tree.restore(entries, into: &roots.restoring!)
    }

    private func finishRestoring(_ path: [UInt8], entries: Int) {
        guard let restore = roots.restoring else { return }
        roots.restoring = nil
        tree.finishRestore(restore)
        logger.info("loaded stored states", metadata: ["root": "\(PathBytes.display(path))", "entries": "\(entries)"])
    }

    /// Registers a root as `scanning=1` and asks the watcher to watch and scan it.
    func beginRoot(_ path: [UInt8], ignoreDefaults: Bool, scan: RootRegistry.Scan) {
        let token = addUnscannedRoot(path, ignoreDefaults: ignoreDefaults, scan: scan)
        startWatching(path, token: token, identities: scan.client == nil)
    }

    /// A root in the registry and the tree with nothing below it yet (a new root, or a stored
    /// one with no stored entries): the watcher's scan fills it.
    private func addUnscannedRoot(_ path: [UInt8], ignoreDefaults: Bool, scan: RootRegistry.Scan) -> UInt64 {
        let (token, rules) = registerRoot(path, ignoreDefaults: ignoreDefaults, scan: scan)
        tree.addRoot(path: path, scan: ScanTree(), rules: rules)
        return token
    }

    private func registerRoot(_ path: [UInt8], ignoreDefaults: Bool, scan: RootRegistry.Scan) -> (UInt64, IgnoreRules) {
        (roots.begin(path, ignoreDefaults: ignoreDefaults, scan: scan), rules(for: path, file: nil, defaults: ignoreDefaults))
    }

    /// `identities`: a stored root, which may hold synced files: its scan reads identities, and
    /// so do the watcher's batches below it (`compareIdentities`) from the start.
    private func startWatching(_ path: [UInt8], token: UInt64, identities: Bool) {
        // Announce before the watcher starts, so the announcement shows no watches yet.
        pushRoot(path)
        if identities { watcher?.compareIdentities(under: path) }
        watcher?.addRoot(path, token: token, identities: identities)
    }

    func rules(for root: [UInt8], file: [UInt8]?, defaults: Bool) -> IgnoreRules {
        var rules = IgnoreRules(fileContents: file, defaults: defaults)
        for p in settings.privatePaths {
            if let rel = PathBytes.relativeComponents(p, under: root), !rel.isEmpty {
                rules.ignoreExactly(rel.map(Array.init))
            }
        }
        return rules
    }

    func addRoot(_ req: WireRequest, _ c: Clients.ID) -> Bool {
        guard let p = paths(req, c)?.first else { return true }
        switch roots.check(adding: p, privatePaths: settings.privatePaths) {
        case .alreadyARoot:
            outbox.ok(c, req.tag)
            return true
        case .busy(let why):
            outbox.error(c, req.tag, "busy", message: Array(why.utf8))
            return true
        case .add:
            beginRoot(p, ignoreDefaults: req.option("ignore-defaults") != "0", scan: .init(client: c, tag: req.tag, restored: false))
            return false
        }
    }

    /// The watcher's answer to a root being added (by `ADD-ROOT` or at start).
    func rootAdded(_ path: [UInt8], token: UInt64, result: Result<RootScan, RootError>) {
        guard let pending = roots.scanAnswered(token, path: path), let ignoreDefaults = roots[path]?.ignoreDefaults else { return }
        switch result {
        case .success(let scan):
            tree.setRules(root: path, rules: rules(for: path, file: scan.ignoreFile, defaults: ignoreDefaults))
            // Stored in error because its directory had vanished, and found again at start.
            if let message = tree.root(at: path).map({ tree.record($0.node) })?.message,
               message.hasPrefix(Self.rootErrorPrefix(path)) {
                tree.clearRootError(path)
            }
            if pending.restored {
                // What changed while the daemon was down: new entries pending, vanished ones
                // tombstoned, synced files whose identity changed pending.
                tree.reconcile(root: path, scan: scan.scan)
                resetChanges(path)
            } else {
                tree.fill(root: path, scan: scan.scan)
            }
            roots.watched(path, ignoreFile: scan.ignoreFile, degraded: scan.degraded)
            logger.info("watching root", metadata: ["root": "\(PathBytes.display(path))", "entries": "\(scan.scan.count)", "watches": "\(scan.watches)"])
            guard pending.isNew else {
                pushRoot(path)
                return
            }
            let stored = StoredRoot(path: path, ignoreDefaults: ignoreDefaults)
            let store = self.ports.store
            // The root row first; its entries follow with the next group commit, once the
            // answer is out.
            sets.rootRowStarted()
            storeWork {
                try store.addRoot(stored)
            }.assumeIsolated().whenComplete { result in
                self.sets.rootRowStored()
                self.pushRoot(path)
                if let c = pending.client, self.clients.isActive(c) {
                    switch result {
                    case .success: self.outbox.ok(c, pending.tag)
                    case .failure(let e): self.outbox.error(c, pending.tag, "internal", message: Array("cannot store the root: \(e)".utf8))
                    }
                    // Out before the requests queued behind it run (a SET there would start
                    // the commit first).
                    self.deliver()
                    self.resume(c)
                }
                self.deliver()
                self.scheduleCommit()
            }
        case .failure(let error):
            let (code, message): (String, String)
            switch error {
            // A stored root that is missing is watched for (WatcherLoop+Commands).
            case .notFound: (code, message) = ("not-found", pending.isNew ? "no such directory" : "no such directory; it is watched again when it comes back")
            case .notADirectory: (code, message) = ("not-a-directory", "not a directory")
            case .failed(let why): (code, message) = ("internal", why)
            }
            roots.scanFailed(path, scan: pending, message: message)
            if pending.isNew {
                sets.forgetRoot(path)
                tree.removeRoot(path: path)
                // Observers of the empty root (OBSERVE during its scan) hear it go; other
                // roots' changes drained with it are pushed as usual.
                publishChanges()
                // A group commit may have stored the empty root meanwhile.
                let store = self.ports.store
                storeWork { try store.removeRoot(path) }.whenComplete { _ in }
                pushRootRemoved(path)
                if let c = pending.client, clients.isActive(c) {
                    outbox.error(c, pending.tag, code, message: Array("\(PathBytes.display(path)): \(message)".utf8))
                    resume(c)
                }
            } else {
                tree.setRootError(path, message: Self.rootErrorPrefix(path) + message)
                logger.error("cannot watch stored root", metadata: ["root": "\(PathBytes.display(path))", "reason": "\(message)"])
                pushRoot(path)
            }
        }
    }

    func removeRoot(_ req: WireRequest, _ c: Clients.ID) -> Bool {
        guard let p = paths(req, c)?.first else { return true }
        let claimant = roots.claimant(of: p)
        switch roots.remove(p) {
        case .notARoot:
            outbox.error(c, req.tag, "not-found", message: Array("\(PathBytes.display(p)) is not a root".utf8))
            return true
        case .scanning:
            outbox.error(c, req.tag, "busy", message: Array("\(PathBytes.display(p)) is being scanned".utf8))
            return true
        case .removed:
            break
        }
        watcher?.removeRoot(p)
        tree.removeRoot(path: p)
        // What held its `syncing` entries goes with them (their lease rows with the root's row).
        held.rootRemoved(p, tree: &tree)
        armReleaseTimer()
        if let owner = claimant, let push = menus.toolbars.unclaimed(owner) { pushToolbar(push) }
        sets.forgetRoot(p)
        feed.rootRemoved(p)
        publishChanges()
        pushRootRemoved(p)
        let store = self.ports.store
        storeWork {
            try store.removeRoot(p)
        }.assumeIsolated().whenComplete { result in
            guard self.clients.isActive(c) else { return }
            switch result {
            case .success: self.outbox.ok(c, req.tag)
            case .failure(let e): self.outbox.error(c, req.tag, "internal", message: Array("cannot store the change: \(e)".utf8))
            }
            self.resume(c)
        }
        return false
    }

    // MARK: While watched

    /// How the daemon's own `error` on a root begins (a provider's message on the root is its
    /// own): the error it clears once the directory is back.
    static func rootErrorPrefix(_ root: [UInt8]) -> String {
        "\(PathBytes.display(root)): "
    }

    /// The root directory itself was deleted, moved away or unmounted: it turns `error`, its
    /// entries keep what they had, and the watcher watches for it to come back.
    func rootVanished(_ root: [UInt8], reason: String) {
        let message = "the root directory was \(reason); it is watched again when it comes back"
        guard roots.vanished(root, message: message) else { return }
        tree.setRootError(root, message: Self.rootErrorPrefix(root) + message)
        pushRoot(root)
    }

    /// The root's ignore file changed: new rules; entries they stop ignoring are created anew.
    func ignoreFileChanged(_ root: [UInt8], _ contents: [UInt8]?) {
        guard let info = roots.ignoreFileChanged(root, contents: contents) else { return }
        let unignored = tree.setRules(root: root, rules: rules(for: root, file: contents, defaults: info.ignoreDefaults))
        for id in unignored where tree.record(id).kind != .gone {
            emitChanged(tree.path(id), what: .create)
        }
    }

    /// After lost events: make the root match the scan, then tell every observer of a directory
    /// in it to list again, and every change subscriber to ask for `CHANGES` again.
    func rootRescanned(_ root: [UInt8], _ scan: RootScan) {
        guard reconcile(root, scan) != nil else { return }
        publishChanges()
        for node in clients.observers.observedNodes where tree.record(node).kind == .dir {
            guard let observers = clients.observers.observers(of: node) else { continue }
            let p = tree.path(node)
            guard PathBytes.relativeComponents(p, under: root) != nil else { continue }
            for c in observers {
                writeReset(node, to: c)
            }
        }
        resetChanges(root)
    }

    /// A fresh scan with nothing lost elsewhere (a periodic rescan of a root over the watch
    /// limit, or a root that came back): what differs is pushed like any change, and the change
    /// feed is reset only when something did.
    func rootRefreshed(_ root: [UInt8], _ scan: RootScan) {
        guard let info = roots[root], !info.scanning else { return }
        let before = tree.lastGen
        if info.error != nil { tree.clearRootError(root) }
        guard let was = reconcile(root, scan) else { return }
        if tree.lastGen != before { resetChanges(root) }
        if tree.lastGen != before || was.wasDegraded != scan.degraded { pushRoot(root) }
    }

    /// Makes a watched root match a fresh scan: its ignore file, its rules, its entries, whether
    /// it is fully watched. Nil while the root is still being scanned.
    @discardableResult
    func reconcile(_ root: [UInt8], _ scan: RootScan) -> (wasInError: Bool, wasDegraded: String?)? {
        guard let was = roots.refreshed(root, ignoreFile: scan.ignoreFile, degraded: scan.degraded),
              let info = roots[root] else { return nil }
        tree.setRules(root: root, rules: rules(for: root, file: scan.ignoreFile, defaults: info.ignoreDefaults))
        tree.reconcile(root: root, scan: scan.scan)
        return was
    }

    // MARK: Providers

    /// The root at exactly `path`, or nil with the error sent (`not-found` under a root,
    /// `outside` under none).
    func exactRoot(_ req: WireRequest, _ c: Clients.ID) -> [UInt8]? {
        guard let p = paths(req, c)?.first else { return nil }
        guard tree.root(at: p) != nil, roots[p] != nil else {
            outbox.error(c, req.tag, tree.root(containing: p) != nil ? "not-found" : "outside", message: p)
            return nil
        }
        return p
    }

    func claim(_ req: WireRequest, _ c: Clients.ID) {
        guard let root = exactRoot(req, c) else { return }
        let before = roots.claimant(of: root)
        if case .heldBy(let owner) = roots.claim(root, by: c) {
            outbox.error(c, req.tag, "busy", message: Array("claimed by \(clients[owner]?.name ?? "")".utf8))
            return
        }
        outbox.ok(c, req.tag)
        pushRoot(root)
        // A second CLAIM of the same root is no new claim.
        if before == nil, let push = menus.toolbars.claimed(c) { pushToolbar(push) }
    }

    // MARK: ROOT lines

    func roots(_ req: WireRequest, _ c: Clients.ID) {
        for root in roots.roots { outbox.write(c, rootLine(root).wireLine(head: req.tag)) }
        outbox.ok(c, req.tag)
    }

    /// A root's `ROOT` line as it is now.
    func rootLine(_ root: RootRegistry.Root) -> Root {
        let reported = tree.root(at: root.path).map { r in
            let own = tree.record(r.node)
            return RootRegistry.Reported(state: tree.reportedState(r.node), ownState: own.state, ownMessage: own.message,
                                         entriesInError: tree.counts(r.node)[.error])
        }
        return roots.line(root, reported: reported, provider: roots.claimant(of: root.path).flatMap { clients[$0]?.name },
                          watches: watcher?.watches(of: root.path) ?? 0)
    }

    /// `* ROOT ...` to every client past `HELLO`.
    func pushRoot(_ path: [UInt8]) {
        guard let root = roots[path] else { return }
        let line = rootLine(root).wireLine(head: "*")
        for c in clients.all where clients.hasSaidHello(c) { push(line, .root(path), to: c) }
    }

    func pushRootRemoved(_ path: [UInt8]) {
        let line = currentRootLine(path).wireLine(head: "*")
        for c in clients.all where clients.hasSaidHello(c) { push(line, .root(path), to: c) }
    }

    /// `ROOT` as the root is now: its state, or `removed` once it is no root any more.
    func currentRootLine(_ path: [UInt8]) -> Root {
        roots[path].map(rootLine) ?? .removed(path)
    }
}

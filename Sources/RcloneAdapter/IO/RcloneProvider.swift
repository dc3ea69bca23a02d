import Foundation
import Logging
import SyncBadgeClient
import SyncBadgeProtocol
import SyncthingAdapter

/// Everything that reaches the loop.
enum Input: Sendable {
    case daemon(DaemonPush)
    case mount(Bool)
    /// A scheduled round; stale ones (a newer timer replaced them) carry an older number.
    case timer(Int)
}

/// The adapter's loop for one mount: the mount table, the daemon's change feed and actions in;
/// rc rounds (only while uploads are left), `SET`s, the toolbar and answers out. It owns every
/// piece of state and runs in one task.
public final class RcloneProvider {
    public static let menus = [
        MenuDefinition(kind: "items", id: "rclone.upload-now", title: "Upload now", states: [.pending, .error]),
        MenuDefinition(kind: "items", id: "rclone.free-space", title: "Free up space", states: [.synced]),
        MenuDefinition(kind: "items", id: "rclone.log", title: "Show rclone's log line"),
    ]
    public static let badges: [(id: String, label: String, glyph: String, ascii: String, color: String)] = [
        (Residence.local.badge, "Uploaded, kept on this computer", "●", "L", "32"),
        (Residence.cloud.badge, "Uploaded, in the cloud only", "☁", "C", "36"),
    ]

    /// The images the file managers draw, installed beside this executable (../share/syncbadge):
    /// a file kept here gets the default set's `synced` check, one only in the cloud the
    /// package's cloud (Badges/rclone). Without an image Nautilus, Nemo and Caja draw no emblem at
    /// all; the glyphs (● and ☁) tell the two apart in the terminal clients.
    static func badgeImage(_ id: String) -> String? {
        let share = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("share/syncbadge")
        let file = id == Residence.cloud.badge ? "rclone/cloud.svg" : "badges/synced.svg"
        let image = share.appendingPathComponent(file).standardizedFileURL.path
        return FileManager.default.fileExists(atPath: image) ? image : nil
    }

    let rc: any RcloneRC
    /// Its blocking socket calls run on a thread of their own: this loop runs on Concurrency's
    /// shared threads, which must not wait on the daemon (a commit, a restart).
    let daemon: ThreadedBadgeDaemon
    let mountPoint: String
    let logger: Logger
    let stream: AsyncStream<Input>
    let continuation: AsyncStream<Input>.Continuation
    var channel: ProviderChannel!
    var mountWatch: MountWatch!
    var machine = PollMachine()
    var tracker = Tracker()
    var facts: LocalFacts?
    var remote: String
    var snapshot: RcloneSnapshot?
    /// Whether rclone answers `vfs/queue` (1.68 and later); asked once per mount.
    var hasQueue: Bool?
    var needsRebuild = true
    var timerNumber = 0
    var timer: Task<Void, Never>?
    var toolbar: ToolbarItem?
    var saidUnreachable = false
    var badgesDefined = false

    public init(rc: any RcloneRC, socketPath: String, mountPoint: String, logger: Logger) {
        self.rc = rc
        self.mountPoint = mountPoint
        self.logger = logger
        remote = mountPoint
        daemon = ThreadedBadgeDaemon(socketPath: socketPath, name: "rclone")
        (stream, continuation) = AsyncStream.makeStream(of: Input.self)
        let c = continuation
        channel = ProviderChannel(socketPath: socketPath, name: "rclone", menus: Self.menus, toolbar: nil, addingRoots: true, logger: logger) {
            c.yield(.daemon($0))
        }
        mountWatch = MountWatch(mountPoint: mountPoint) { c.yield(.mount($0)) }
    }

    public func run() async {
        channel.start()
        mountWatch.start()
        for await input in stream {
            switch input {
            case .mount(let present):
                if !present { logger.notice("\(mountPoint) is not an rclone mount (any more): waiting for it") }
                await perform(present ? machine.mounted() : machine.unmounted())
            case .timer(let n):
                if n == timerNumber { await perform(machine.timerFired()) }
            case .daemon(let push):
                await daemonPush(push)
            }
        }
    }

    func daemonPush(_ push: DaemonPush) async {
        switch push {
        case .connected:
            // A new connection (the daemon may have restarted): every state is reported again.
            needsRebuild = true
            badgesDefined = false
            toolbar = nil
            await perform(machine.changed())
        case .changed(let path, let gen, let from):
            guard let name = relative(path) else { return }
            if let from, let old = relative(from) { tracker.changed(old, gen: 0) }
            tracker.changed(name, gen: gen, at: .now)
            await perform(machine.changed())
        case .resetChanges:
            needsRebuild = true
            await perform(machine.changed())
        case .action(let id, let paths, _, let reply):
            await action(id, paths.compactMap(relative), reply: reply)
        case .lost:
            break
        }
    }

    func relative(_ path: String) -> String? {
        if path == mountPoint { return "" }
        guard path.hasPrefix(mountPoint + "/") else { return nil }
        return String(path.dropFirst(mountPoint.count + 1))
    }

    func absolute(_ name: String) -> String { name.isEmpty ? mountPoint : mountPoint + "/" + name }

    func perform(_ action: PollMachine.Action) async {
        switch action {
        case .none:
            break
        case .poll:
            await round()
        case .pollAfter(let d):
            schedule(after: d)
        case .claimAndPoll:
            logger.info("\(mountPoint) is mounted: claiming it")
            // Added here, before the claim, so that the claim never meets the root's first scan
            // (`ERR busy`). A daemon that is down now gets it from the channel, which adds the
            // root where the daemon does not know it, on each connection.
            do { try await daemon.addRoot(mountPoint) } catch { logger.debug("cannot add \(mountPoint) as a root yet: \(error)") }
            channel.follow(roots: [mountPoint])
            hasQueue = nil
            needsRebuild = true
            await round()
        case .unclaim:
            timer?.cancel()
            timerNumber += 1
            // `syncing` was set on the state connection, which the UNCLAIM does not release:
            // rclone stopped, so those uploads wait for its next start.
            let uploading = tracker.entries.filter { if case .syncing = $0.value.shown { true } else { false } }.keys.sorted()
            if !uploading.isEmpty {
                let sets = uploading.map { SetRequest(.pending, Array(absolute($0).utf8), message: "rclone stopped during the upload: it goes on when rclone mounts again") }
                do { _ = try await daemon.call { try $0.set(sets) } } catch { logger.warning("syncbadged: \(error)") }
            }
            channel.follow(roots: [])
            tracker.removeAll()
            snapshot = nil
            facts = nil
        }
    }

    func schedule(after d: Duration) {
        timer?.cancel()
        timerNumber += 1
        let n = timerNumber
        let c = continuation
        timer = Task {
            try? await Task.sleep(for: d)
            if !Task.isCancelled { c.yield(.timer(n)) }
        }
    }

    /// One round of rc calls, and the `SET`s for every path not settled.
    func round() async {
        let s: RcloneSnapshot
        do {
            s = try await fetchSnapshot()
        } catch {
            if !saidUnreachable { logger.warning("\(error); retrying while \(mountPoint) is mounted") }
            saidUnreachable = true
            snapshot = nil
            updateToolbar()
            await perform(machine.pollFailed())
            return
        }
        if saidUnreachable { logger.notice("rclone's remote control answers again") }
        saidUnreachable = false
        snapshot = s
        guard let cache = s.stats.diskCache else {
            logger.error("\(mountPoint): rclone runs without a VFS cache (--vfs-cache-mode off): nothing waits for upload, so there is nothing to show")
            await perform(machine.polled(busy: false))
            return
        }
        let local = LocalFacts(mountPoint: mountPoint, dataRoot: cache.path, metaRoot: cache.pathMeta)
        facts = local
        remote = s.stats.fs
        do {
            if !badgesDefined {
                for b in Self.badges {
                    var define = Request.defineBadge(id: b.id, label: b.label, glyph: b.glyph, ascii: b.ascii, color: b.color)
                    if let image = Self.badgeImage(b.id) { define.fields.append(.option("image", image)) }
                    let request = define
                    _ = try await daemon.call { try $0.request(request) }
                }
                badgesDefined = true
            }
            if needsRebuild { try await rebuild(local) }
            var verdicts: [String: Verdict] = [:]
            let now = ContinuousClock.now
            var wall = timespec()
            clock_gettime(CLOCK_REALTIME, &wall)
            let wallNowNs = Int64(wall.tv_sec) * 1_000_000_000 + Int64(wall.tv_nsec)
            for name in tracker.names {
                var f = local.facts(name)
                f.sinceChange = RcloneMapper.sinceChange(reported: tracker.entries[name]?.changedAt.map { now - $0 },
                                                         mtime: f.mtime, wallNowNs: wallNowNs)
                verdicts[name] = RcloneMapper.verdict(f, s)
            }
            let sets = tracker.apply(verdicts)
            if !sets.isEmpty {
                let requests = sets.map { Self.setRequest(absolute($0.name), $0.gen, $0.verdict) }
                let outcomes = try await daemon.call { try $0.set(requests) }
                for (set, outcome) in zip(sets, outcomes) {
                    switch outcome {
                    case .applied: break
                    // A newer write is on its way in the feed, which tracks the path again.
                    case .stale: tracker.stale(set.name)
                    case .notFound: tracker.forget(set.name)
                    }
                }
            }
        } catch {
            // The daemon went away, or the channel has not added the root yet: tried again,
            // with backoff, until the daemon takes the states.
            logger.warning("syncbadged: \(error)")
            needsRebuild = true
            updateToolbar()
            await perform(machine.pollFailed())
            return
        }
        updateToolbar()
        let unsettled = tracker.entries.values.contains { e in
            if case .error = e.shown { return false }
            return true
        }
        let errored = tracker.entries.values.filter { if case .error = $0.shown { return true } else { return false } }.count
        // A file still open for writing is not queued yet: looked at again, less often.
        await perform(machine.polled(busy: s.busy || unsettled, onlyRetries: !s.busy || s.onlyRetries(errored: errored)))
    }

    func fetchSnapshot() async throws -> RcloneSnapshot {
        let stats = try await rc.vfsStats()
        if hasQueue == nil {
            let q = try await rc.queue()
            hasQueue = q != nil
            machine.perFileQueue = q != nil
            logger.info(q != nil ? "rclone has vfs/queue: per-file queue, and Upload now" : "rclone has no vfs/queue (before 1.68): the cache's metadata tells what waits for upload")
        }
        let queue = hasQueue == true ? try await rc.queue()?.queue : nil
        let core = try await rc.coreStats()
        let done = try await rc.transferred()
        return RcloneSnapshot(stats: stats, transferring: core.transferring ?? [], finished: done.transferred, queue: queue)
    }

    /// Every path the daemon holds pending, and every entry of the mount (for the badges of
    /// files nobody changed), judged afresh.
    func rebuild(_ local: LocalFacts) async throws {
        tracker.removeAll()
        // Pending in the daemon: written through the mount, maybe a moment ago (this rebuild may
        // come after a change it already reported), so judged as just changed.
        let now = ContinuousClock.now
        for (path, gen) in try await daemon.pending(root: mountPoint) {
            if let name = relative(path) { tracker.changed(name, gen: gen, at: now) }
        }
        tracker.changed("", gen: 0)
        for name in local.walk() { tracker.changed(name, gen: 0) }
        needsRebuild = false
        logger.debug("\(mountPoint): \(tracker.entries.count) paths to report")
    }

    static func setRequest(_ path: String, _ gen: UInt64, _ v: Verdict) -> SetRequest {
        let g = gen == 0 ? nil : gen
        let p = Array(path.utf8)
        switch v {
        case .pending(let m): return SetRequest(.pending, p, gen: g, message: m)
        case .syncing(let progress, let m): return SetRequest(.syncing, p, gen: g, progress: UInt8(clamping: progress), message: m)
        case .synced(let r): return SetRequest(.synced, p, gen: g, badge: r?.badge)
        case .error(let m): return SetRequest(.error, p, gen: g, message: m)
        }
    }

    func updateToolbar() {
        let pendingBytes = tracker.entries.compactMap { name, e -> Int64? in
            if case .pending = e.shown { return facts?.facts(name).meta?.size } else { return nil }
        }.reduce(0, +)
        let t = RcloneToolbar.text(remote: remote, snapshot, pendingBytes: pendingBytes)
        let def = ToolbarItem(name: t.name, tooltip: t.tooltip)
        if def != toolbar {
            toolbar = def
            channel.define(toolbar: def)
        }
    }

    // MARK: Actions

    func action(_ id: String, _ names: [String], reply: String?) async {
        var message: String
        var failed = false
        switch id {
        case "rclone.upload-now":
            (message, failed) = await uploadNow(names)
        case "rclone.free-space":
            (message, failed) = await freeSpace(names)
        case "rclone.log":
            // The newest list, not the one of the last round, which may be long ago at idle.
            if let s = try? await fetchSnapshot() { snapshot = s }
            message = names.map(logLine).joined(separator: "\n")
        default:
            return
        }
        logger.info("\(id): \(message)")
        if let reply { channel.answer(token: reply, message: message, failed: failed) }
        for n in names { tracker.changed(n, gen: 0) }
        await perform(machine.changed())
    }

    func uploadNow(_ names: [String]) async -> (String, Bool) {
        guard hasQueue == true else {
            return ("this rclone has no vfs/queue-set-expiry (it came with 1.68): it uploads after --vfs-write-back", true)
        }
        do {
            let queue = try await rc.queue()?.queue ?? []
            var started = 0
            for n in names {
                guard let q = queue.first(where: { $0.name == n }), !q.uploading else { continue }
                try await rc.queueSetExpiry(id: q.id, expiry: -1_000_000_000)
                started += 1
            }
            return started == 0 ? ("nothing of this waits in rclone's queue", false)
                : ("\(started) \(started == 1 ? "file goes" : "files go") up now", false)
        } catch {
            return ("\(error)", true)
        }
    }

    func freeSpace(_ names: [String]) async -> (String, Bool) {
        guard let facts else { return ("rclone's remote control does not answer", true) }
        var kept: [String] = []
        for n in names {
            let f = facts.facts(n)
            guard f.kind == .file, let meta = f.meta, !meta.dirty else { continue }
            do { try await rc.forget(file: n) } catch { return ("\(error)", true) }
            if facts.facts(n).dataCached { kept.append(n) }
        }
        guard kept.isEmpty else {
            return ("rclone forgot \(kept.count == 1 ? kept[0] : "\(kept.count) files") in its directory cache but keeps the cached copy until --vfs-cache-max-age or --vfs-cache-max-size removes it", true)
        }
        return ("the cached copies are gone: the files are in the cloud only", false)
    }

    func logLine(_ name: String) -> String {
        guard let s = snapshot else { return "\(name): rclone's remote control does not answer" }
        if let t = s.transferring.first(where: { $0.name == name }) {
            return "\(name): uploading, \(ByteCount(t.bytes)) of \(ByteCount(t.size))"
        }
        guard let f = s.finished.last(where: { $0.name == name }) else {
            return "\(name): nothing in rclone's list of recent transfers"
        }
        return "\(f.completedAt) \(name): " + (f.error.isEmpty ? "transferred \(ByteCount(f.bytes))" : "failed: \(f.error)")
    }
}

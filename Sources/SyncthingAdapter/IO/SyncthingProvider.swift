#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import SyncBadgeProtocol

/// A conflict copy that could not be renamed over its original.
struct ResolveError: Error, CustomStringConvertible {
    var path: String
    var errno: Int32
    var description: String { "cannot rename \(path): \(String(cString: strerror(errno)))" }
}

/// Everything that reaches the loop, from Syncthing's event streams and from the daemon.
enum Input: Sendable {
    case events(contact: Int, disk: Bool, [SyncthingEvent], EventCursor.Verdict)
    case lost(contact: Int, String)
    case daemon(DaemonPush)
}

/// The adapter's loop: Syncthing's events and the daemon's pushes in, through the mapper,
/// actions out. It owns every piece of state and runs in one task.
public final class SyncthingProvider {
    /// The events the loop follows; ids are counted per such mask, so it never changes.
    static let mask = ["ItemStarted", "ItemFinished", "DownloadProgress", "RemoteDownloadProgress", "LocalIndexUpdated",
                       "RemoteIndexUpdated", "FolderCompletion", "FolderErrors", "StateChanged", "ConfigSaved",
                       "DeviceConnected", "DeviceDisconnected"]
    static let menus = [
        MenuDefinition(kind: "items", id: "syncthing.rescan", title: "Rescan now"),
        MenuDefinition(kind: "container", id: "syncthing.rescan", title: "Rescan now"),
        MenuDefinition(kind: "items", id: "syncthing.keep-this", title: "Keep this copy", states: [.conflict]),
        MenuDefinition(kind: "items", id: "syncthing.keep-other", title: "Keep the other copy", states: [.conflict]),
        MenuDefinition(kind: "items", id: "syncthing.view", title: "Show Syncthing's view"),
    ] + toolbarMenus(paused: false)

    /// The toolbar's two items, the one that does nothing now disabled.
    static func toolbarMenus(paused: Bool) -> [MenuDefinition] {
        [MenuDefinition(kind: "toolbar", id: "syncthing.pause", title: "Pause syncing", enabled: !paused),
         MenuDefinition(kind: "toolbar", id: "syncthing.resume", title: "Resume syncing", enabled: paused)]
    }

    /// The toolbar item says what a click does: resume when every folder is paused.
    static func toolbar(paused: Bool) -> ToolbarItem {
        paused ? ToolbarItem(name: "Resume syncing", tooltip: "Every Syncthing folder is paused: resume them")
            : ToolbarItem(name: "Pause syncing", tooltip: "Pause every Syncthing folder")
    }

    let api: any SyncthingAPI
    let daemon: any BadgeDaemon
    let logger: Logger
    let only: [String]
    let home: String
    /// Names the failure for exit 78: the address and where it came from, never the key.
    let origin: String
    let fs = LocalFileSystem()
    var mapper = SyncthingMapper()
    var myID = ""
    var epoch: String?
    var contact = 0
    let stream: AsyncStream<Input>
    let continuation: AsyncStream<Input>.Continuation
    var channel: ProviderChannel!
    /// Whether every followed folder is paused, as the toolbar shows it.
    var paused = false
    /// Paths last reported `syncing`: they are set on the state connection, not the one that
    /// claims, so an UNCLAIM does not release them (a removed folder's are released here).
    var syncingPaths: Set<String> = []

    public init(api: any SyncthingAPI, daemon: any BadgeDaemon, socketPath: String, folders: [String], origin: String, logger: Logger) {
        self.api = api
        self.daemon = daemon
        self.logger = logger
        self.only = folders
        self.origin = origin
        home = ProcessInfo.processInfo.environment["HOME"] ?? "/"
        (stream, continuation) = AsyncStream.makeStream(of: Input.self)
        let c = continuation
        channel = ProviderChannel(socketPath: socketPath, name: "syncthing", menus: Self.menus,
                                  toolbar: Self.toolbar(paused: false),
                                  logger: logger) { c.yield(.daemon($0)) }
    }

    public func run() async throws {
        channel.start()
        defer { channel.stop() }
        var events = stream.makeAsyncIterator()
        // Syncthing opens its GUI (and writes its certificate) a few seconds after its first
        // start: a service started beside it waits that long before an address that does not
        // answer counts as wrong.
        let firstContactDeadline = ContinuousClock.now + .seconds(10)
        var firstContact = true
        var backoff = 0.25
        var saidLost = false
        while !Task.isCancelled {
            let status: SystemStatus
            do {
                status = try await api.status()
            } catch SyncthingAPIError.unauthorized {
                throw AdapterFailure.configuration("\(origin): Syncthing refused the API key")
            } catch SyncthingAPIError.untrusted(let why) {
                throw AdapterFailure.configuration("\(origin): \(why)")
            } catch {
                if firstContact {
                    guard ContinuousClock.now < firstContactDeadline else {
                        throw AdapterFailure.configuration("\(origin): Syncthing does not answer (\(error))")
                    }
                    try await Task.sleep(for: .milliseconds(250))
                    continue
                }
                if !saidLost {
                    logger.warning("Syncthing went away (\(error)); retrying")
                    saidLost = true
                    for f in mapper.folders.values.sorted(by: { $0.id < $1.id }) {
                        _ = try? await daemon.set(SetRequest(.error, f.path, message: "Syncthing is not running; the adapter retries"))
                    }
                }
                try await Task.sleep(for: .seconds(backoff))
                backoff = min(backoff * 2, 5)
                continue
            }
            if saidLost { logger.notice("Syncthing is back: rebuilding every state") }
            firstContact = false
            saidLost = false
            backoff = 0.25
            myID = status.myID
            contact += 1
            do {
                let heads = try await heads()
                try await applyConfig(try await api.config(), rebuildAll: true)
                await pollAndHandle(&events, from: heads)
            } catch let f as AdapterFailure {
                throw f
            } catch {
                logger.warning("lost Syncthing: \(error)")
            }
        }
    }

    /// Where each event stream stands now: what came before is covered by the rebuild that
    /// follows, and what comes during it is applied after it.
    func heads() async throws -> (Int, Int) {
        let events = try await api.events(disk: false, since: 0, mask: Self.mask, timeout: 0, limit: 1)
        let disk = try await api.events(disk: true, since: 0, mask: [], timeout: 0, limit: 1)
        return (events.last?.id ?? 0, disk.last?.id ?? 0)
    }

    /// Runs the two event streams until Syncthing is lost; handles every input meanwhile.
    func pollAndHandle(_ events: inout AsyncStream<Input>.Iterator, from heads: (Int, Int)) async {
        let s = contact
        let pollers = [(false, heads.0), (true, heads.1)].map { disk, head in
            Task { [api, continuation] in
                var cursor = EventCursor()
                cursor.skip(to: head)
                while !Task.isCancelled {
                    do {
                        let batch = try await api.events(disk: disk, since: cursor.lastID, mask: disk ? [] : Self.mask, timeout: 60, limit: nil)
                        let verdict = cursor.received(ids: batch.map(\.id))
                        continuation.yield(.events(contact: s, disk: disk, batch, verdict))
                    } catch {
                        if Task.isCancelled { return }
                        continuation.yield(.lost(contact: s, "\(error)"))
                        return
                    }
                }
            }
        }
        defer { pollers.forEach { $0.cancel() } }
        while let input = await events.next() {
            switch input {
            case .events(let from, _, let batch, let verdict):
                guard from == s else { continue }
                if verdict != .inOrder {
                    logger.notice("Syncthing's events were \(verdict == .restarted ? "restarted" : "cut short"): rebuilding")
                    await rebuildAll()
                    continue
                }
                for e in batch { await handle(e) }
            case .lost(let from, let why):
                guard from == s else { continue }
                logger.debug("event stream ended: \(why)")
                return
            case .daemon(let push):
                await handle(push)
            }
        }
    }

    func applyConfig(_ config: SyncthingConfig, rebuildAll all: Bool) async throws {
        let folders = WatchedFolder.from(config, myID: myID, home: home, only: only)
        // A pause made here or in Syncthing's own GUI: the toolbar follows (ConfigSaved).
        let allPaused = !folders.isEmpty && folders.allSatisfy(\.paused)
        if allPaused != paused {
            paused = allPaused
            channel.define(menus: Self.toolbarMenus(paused: allPaused), toolbar: Self.toolbar(paused: allPaused))
        }
        let actions = mapper.configured(folders, devices: config.devices)
        await perform(actions)
        if all {
            let rebuilt = Set(actions.compactMap { if case .rebuild(let id) = $0 { id } else { nil } })
            for id in mapper.folders.keys.sorted() where !rebuilt.contains(id) { await perform([.rebuild(folder: id)]) }
        }
    }

    func rebuildAll() async {
        for id in mapper.folders.keys.sorted() { await perform([.rebuild(folder: id)]) }
    }

    func handle(_ e: SyncthingEvent) async {
        logger.debug("event \(e.id) \(e.type) \(e.payload)")
        if case .configSaved(let config) = e.payload {
            try? await applyConfig(config, rebuildAll: false)
            return
        }
        await perform(mapper.event(e.payload, fs: fs))
    }

    func handle(_ push: DaemonPush) async {
        logger.debug("daemon \(push)")
        switch push {
        case .connected(let e):
            defer { epoch = e }
            guard let old = epoch, old != e else { return }
            logger.notice("syncbadged restarted: claiming and rebuilding every root")
            try? await daemon.reconnect()
            let roots = mapper.claimedRoots
            for root in roots { try? await daemon.addRoot(root) }
            channel.follow(roots: roots)
            await rebuildAll()
        case .changed(let path, let gen, let from):
            if let from { await perform(mapper.changed(path: from, gen: nil, fs: fs)) }
            await perform(mapper.changed(path: path, gen: gen, fs: fs))
        case .resetChanges(let root):
            for (p, g) in (try? await daemon.pending(root: root)) ?? [] { await perform(mapper.changed(path: p, gen: g, fs: fs)) }
        case .action(let id, let paths, let target, let reply):
            // A folder's background menu names the folder as its target.
            let (message, failed) = await action(id, paths.isEmpty ? target.map { [$0] } ?? [] : paths)
            if let reply { channel.answer(token: reply, message: message, failed: failed) }
        case .lost:
            break
        }
    }

    // MARK: Performing actions

    func perform(_ actions: [AdapterAction]) async {
        for a in actions {
            do {
                switch a {
                case .set(let s):
                    let outcome = try await daemon.set(s)
                    logger.debug("\(s) → \(outcome)")
                    let path = s.pathString
                    if s.state == .syncing {
                        syncingPaths.insert(path)
                    } else if s.recursive {
                        syncingPaths = syncingPaths.filter { $0 != path && !$0.hasPrefix(path + "/") }
                    } else {
                        syncingPaths.remove(path)
                    }
                case .check(let folder, let names):
                    try await check(folder, names)
                case .rebuild(let folder):
                    try await rebuild(folder)
                case .follow(let added, let removed):
                    for f in added {
                        do { try await daemon.addRoot(f.path) } catch { logger.warning("cannot add \(f.path) as a root: \(error)") }
                    }
                    // No transfer goes on in a folder Syncthing no longer shares.
                    for f in removed {
                        for p in syncingPaths.filter({ $0 == f.path || $0.hasPrefix(f.path + "/") }).sorted() {
                            await perform([.set(SetRequest(.pending, p, message: "Syncthing no longer shares this folder"))])
                        }
                    }
                    channel.follow(roots: mapper.claimedRoots)
                case .refreshErrors(let folder):
                    let errors = try await api.folderErrors(folder: folder).errors ?? []
                    await perform(mapper.errorsLeft(folder: folder, errors))
                case .reloadIgnores(let folder):
                    guard let f = mapper.folders[folder] else { continue }
                    let ignores = try await api.ignores(folder: folder)
                    mapper.ignores(folder: folder, lines: ignores.expanded ?? ignores.ignore ?? [])
                    await perform(mapper.walked(folder: folder, entries: walk(f)))
                case .lookUpBlocks(let folder, let name, let done):
                    let blocks = try await api.file(folder: folder, name: name).global?.numBlocks ?? 0
                    await perform(mapper.remoteProgress(folder: folder, name: name, blocksDone: done, numBlocks: blocks))
                }
            } catch {
                logger.warning("\(a): \(error)")
            }
        }
    }

    func connectedDevices() async -> Set<String> {
        guard let c = try? await api.connections() else { return mapper.connected }
        return Set(c.connections.filter { $0.value.connected }.map(\.key))
    }

    /// Asks the daemon for each path's generation first, then Syncthing: a write in between
    /// makes the `SET` stale, so the path stays `pending`.
    func check(_ id: String, _ names: [String]) async throws {
        guard let f = mapper.folders[id] else { return }
        let needHere = Set(try await api.need(folder: id).names)
        var neededBy: [String: Set<String>] = [:]
        for peer in f.peers { neededBy[peer] = Set(try await api.remoteNeed(folder: id, device: peer).names) }
        mapper.devices(connected: await connectedDevices())
        for name in names {
            let path = f.absolute(name)
            let gen = try await daemon.generation(of: path)
            if name.isEmpty {
                // The root itself (it carried a transfer or an error of a file inside).
                let complete = needHere.isEmpty && neededBy.values.allSatisfy(\.isEmpty)
                await perform([.set(SetRequest(complete ? .synced : .pending, path, gen: gen))])
                continue
            }
            let disk = fs.identity(path)
            let db = try await api.file(folder: id, name: name)
            let c = FileCheck(folder: id, name: name, gen: gen, disk: disk, db: db, neededHere: needHere.contains(name),
                              neededBy: f.peers.filter { neededBy[$0]?.contains(name) == true }, peers: f.peers)
            await perform(mapper.checked(c))
        }
    }

    func rebuild(_ id: String) async throws {
        guard let f = mapper.folders[id] else { return }
        let ignores = try await api.ignores(folder: id)
        mapper.ignores(folder: id, lines: ignores.expanded ?? ignores.ignore ?? [])
        let completion = try await api.completion(folder: id, device: nil)
        let need = try await api.need(folder: id).names
        var byPeer: [String: [String]] = [:]
        for peer in f.peers { byPeer[peer] = try await api.remoteNeed(folder: id, device: peer).names }
        let errors = try await api.folderErrors(folder: id).errors ?? []
        let status = try await api.folderStatus(folder: id)
        let pending = try await daemon.pending(root: f.path)
        for (p, g) in pending { _ = mapper.changed(path: p, gen: g, fs: fs) }
        let complete = completion.completion >= 100 && need.isEmpty && byPeer.values.allSatisfy(\.isEmpty)
        let actions = mapper.rebuilt(folder: id, complete: complete, neededHere: need, neededByPeers: byPeer, errors: errors,
                                     folderError: status.state == "error" ? (status.error ?? "folder error") : nil,
                                     daemonPending: pending.map(\.0), fs: fs)
        // The tree's ignored entries and conflict copies right after the recursive synced,
        // before the checks, so that nothing ignored is ever checked.
        await perform(Array(actions.prefix(1)))
        await perform(mapper.walked(folder: id, entries: walk(f)))
        await perform(Array(actions.dropFirst()))
    }

    func walk(_ f: WatchedFolder) -> [(name: String, isDirectory: Bool)] {
        var out: [(String, Bool)] = []
        guard let e = FileManager.default.enumerator(atPath: f.path) else { return out }
        while let name = e.nextObject() as? String {
            let isDir = (e.fileAttributes?[.type] as? FileAttributeType) == .typeDirectory
            let ignored = mapper.isIgnored(folder: f.id, name: name)
            if ignored || ConflictName.original(of: name) != nil { out.append((name, isDir)) }
            if ignored && isDir { e.skipDescendants() }
        }
        return out
    }

    // MARK: Menu actions

    /// Performs a menu action; what it did (or why it failed), for a client that asked for the
    /// answer (1.2).
    func action(_ id: String, _ paths: [String]) async -> (message: String?, failed: Bool) {
        let located = paths.compactMap { mapper.locate($0) }
        let onPaths: Set = ["syncthing.rescan", "syncthing.keep-this", "syncthing.keep-other", "syncthing.view"]
        if onPaths.contains(id) && located.isEmpty { return ("not in a folder Syncthing shares", true) }
        do {
            switch id {
            case "syncthing.rescan":
                for (f, name) in located { try await api.scan(folder: f.id, sub: name.isEmpty ? nil : name) }
                return ("Syncthing rescans \(located.count == 1 ? "it" : "\(located.count) paths") now", false)
            case "syncthing.keep-this", "syncthing.keep-other":
                for (f, name) in located {
                    let dir = (name as NSString).deletingLastPathComponent
                    // Syncthing pulls and scans in turn in one loop per folder, so this scan
                    // returns only after a pull still finishing there: one that has moved the
                    // losing version to its copy but not yet put the winner in place would
                    // otherwise rename the winner over the copy the user just kept.
                    try await api.scan(folder: f.id, sub: dir.isEmpty ? nil : dir)
                    try resolve(f, name, keepSelected: id == "syncthing.keep-this")
                    // Syncthing would see the rename or removal only when its watcher's delay
                    // runs out: a scan of the directory now lets the badges settle while the
                    // user who chose is still looking.
                    try await api.scan(folder: f.id, sub: dir.isEmpty ? nil : dir)
                }
                return (id == "syncthing.keep-this" ? "Kept this copy" : "Kept the other copy", false)
            case "syncthing.pause", "syncthing.resume":
                let pause = id == "syncthing.pause"
                let folders = try await api.config().folders.filter { only.isEmpty || only.contains($0.id) }
                for f in folders { try await api.setPaused(folder: f.id, paused: pause) }
                return ("\(pause ? "Paused" : "Resumed") \(folders.count) Syncthing folder\(folders.count == 1 ? "" : "s")", false)
            case "syncthing.view":
                var views: [String] = []
                for (f, name) in located { views.append(try await view(f, name)) }
                return (views.joined(separator: "\n\n"), false)
            default:
                logger.debug("unknown action \(id)")
                return ("the Syncthing adapter has no action \(id)", true)
            }
        } catch {
            logger.warning("action \(id) failed: \(error)")
            return ("\(error)", true)
        }
    }

    /// "Show Syncthing's view" of one file: its versions, and which devices have it or need it.
    func view(_ f: WatchedFolder, _ name: String) async throws -> String {
        guard !name.isEmpty else {
            let need = try await api.need(folder: f.id).names
            return "Syncthing folder \(f.label): \(need.isEmpty ? "up to date here" : "\(need.count) item\(need.count == 1 ? "" : "s") still to download")"
        }
        // One lookup: the devices that announce the global version are its `availability`;
        // this device has it when its own version is the global one. (The need lists would
        // cost a download of each device's whole list per file.)
        let db = try await api.file(folder: f.id, name: name)
        let have = Set((db.availability ?? []).map(\.id))
        let neededBy = Set(f.peers.filter { !have.contains($0) })
        let neededHere = db.local?.version != db.global?.version || db.local == nil
        return SyncthingView.describe(name: name, folderLabel: f.label, db: db, peers: f.peers, neededBy: neededBy,
                                      neededHere: neededHere, myID: myID, deviceNames: mapper.deviceNames)
    }

    /// Resolves a conflict by renaming the copy over the original, or deleting the copy.
    func resolve(_ f: WatchedFolder, _ name: String, keepSelected: Bool) throws {
        let fm = FileManager.default
        if let original = ConflictName.original(of: name) {
            let copy = f.absolute(name), orig = f.absolute(original)
            if keepSelected {
                guard rename(copy, orig) == 0 else { throw ResolveError(path: copy, errno: errno) }
            } else {
                try fm.removeItem(atPath: copy)
            }
            return
        }
        // The original was selected: its copies are beside it.
        let dir = (f.absolute(name) as NSString).deletingLastPathComponent
        let copies = ((try? fm.contentsOfDirectory(atPath: dir)) ?? []).filter {
            let rel = (name as NSString).deletingLastPathComponent
            return ConflictName.original(of: rel.isEmpty ? $0 : rel + "/" + $0) == name
        }.sorted()
        if keepSelected {
            for c in copies { try fm.removeItem(atPath: dir + "/" + c) }
        } else if let newest = copies.last {
            guard rename(dir + "/" + newest, f.absolute(name)) == 0 else { throw ResolveError(path: dir + "/" + newest, errno: errno) }
            for c in copies.dropLast() { try fm.removeItem(atPath: dir + "/" + c) }
        }
    }
}

import SyncBadgeProtocol

/// What the adapter's edge does next: report to the daemon, or look something up.
public enum AdapterAction: Sendable, Equatable {
    case set(SetRequest)
    /// Confirm these folder-relative names against Syncthing's database, then `checked`.
    case check(folder: String, names: [String])
    /// Re-read the whole folder from `/rest/db/*` (start, restart, lost events).
    case rebuild(folder: String)
    /// Folders to add as roots and claim, and roots no longer followed.
    case follow(added: [WatchedFolder], removed: [WatchedFolder])
    /// Ask `/rest/folder/errors` which failures are left, then `errorsLeft`.
    case refreshErrors(folder: String)
    /// The folder's `.stignore` changed: read the patterns again and mark what they match.
    case reloadIgnores(folder: String)
    /// A peer downloads `name`: look up its block count, then `remoteProgress`.
    case lookUpBlocks(folder: String, name: String, blocksDone: Int)
}

/// The pure mapping of Syncthing's model to badge states: one `mutating func` per thing that
/// happens (a Syncthing event, a daemon change, the answer of a check), each returning what
/// to do. It does no I/O; what it needs of the file system comes through `FileSystemView`.
public struct SyncthingMapper: Sendable {
    struct Folder: Sendable {
        var folder: WatchedFolder
        var ignores = IgnorePatterns(lines: [])
        /// Names whose `synced` is not confirmed yet: changed here, or received.
        var unconfirmed: Set<String> = []
        /// Names being received → the existing ancestor that carries their `syncing`
        /// (nil: the file itself does).
        var receiving: [String: String?] = [:]
        /// Names that failed → the ancestor that carries their `error` (nil: the file itself).
        var failed: [String: String?] = [:]
        /// Names a peer is downloading from us.
        var uploading: Set<String> = []
        var inError = false
        /// Originals → their conflict copies that still exist.
        var conflicts: [String: Set<String>] = [:]

        /// Whether `path` carries a transfer or a failure of a name inside it.
        func carries(_ path: String) -> Bool {
            receiving.values.contains { $0 == path } || failed.values.contains { $0 == path }
        }

        /// Of the ancestors an item no longer puts its state on, those that carry nothing
        /// else: their last `syncing` or `error` was the item's, and no event will replace it.
        func released(_ old: [String?], now: String?) -> [String] {
            Set(old.compactMap { $0 }).filter { $0 != now && !carries($0) }.map { folder.relative($0) ?? "" }.sorted()
        }

        /// Asks Syncthing again about the names (none: nothing to do).
        mutating func recheck(_ names: [String]) -> [AdapterAction] {
            guard !names.isEmpty else { return [] }
            // The root ("") is answered from the need lists, never by `checked`.
            unconfirmed.formUnion(names.filter { !$0.isEmpty })
            return [.check(folder: folder.id, names: names)]
        }
    }

    public private(set) var folders: [String: WatchedFolder] = [:]
    var state: [String: Folder] = [:]
    /// The latest generation the daemon announced per absolute path.
    public private(set) var gens: [String: UInt64] = [:]
    public private(set) var connected: Set<String> = []
    public private(set) var deviceNames: [String: String] = [:]
    /// Paths of folders paused after they were followed: not followed, but still claimed. A claim has no undo but a new
    /// provider connection, and the toolbar's Resume must find the adapter's right after Pause.
    public private(set) var pausedPaths: Set<String> = []

    /// The roots the adapter claims: every folder followed or paused.
    public var claimedRoots: [String] { Set(folders.values.map(\.path)).union(pausedPaths).sorted() }

    public init() {}

    // MARK: Configuration

    /// Syncthing's configuration as it is now (at start and at each `ConfigSaved`).
    public mutating func configured(_ next: [WatchedFolder], devices: [SyncthingConfig.Device]) -> [AdapterAction] {
        for d in devices { deviceNames[d.deviceID] = d.name }
        // Only a folder followed (so a root, claimed) before it was paused stays claimed.
        let wasClaimed = Set(folders.values.map(\.path)).union(pausedPaths)
        pausedPaths = Set(next.filter(\.paused).map(\.path)).intersection(wasClaimed)
        let active = next.filter { !$0.paused }
        var added: [WatchedFolder] = [], removed: [WatchedFolder] = []
        var actions: [AdapterAction] = []
        for f in active {
            if let old = folders[f.id], old.path == f.path {
                if old.peers != f.peers {
                    folders[f.id] = f
                    state[f.id]?.folder = f
                    actions.append(.rebuild(folder: f.id))
                }
                continue
            }
            if let old = folders[f.id] { removed.append(old) }
            folders[f.id] = f
            state[f.id] = Folder(folder: f)
            added.append(f)
        }
        for (id, old) in folders where !active.contains(where: { $0.id == id }) {
            removed.append(old)
            folders[id] = nil
            state[id] = nil
        }
        var out: [AdapterAction] = []
        if !added.isEmpty || !removed.isEmpty { out.append(.follow(added: added, removed: removed)) }
        out += added.map { .rebuild(folder: $0.id) }
        return out + actions
    }

    /// A folder's `.stignore` patterns (expanded), read at each rebuild.
    public mutating func ignores(folder: String, lines: [String]) {
        state[folder]?.ignores = IgnorePatterns(lines: lines)
    }

    public func isIgnored(folder: String, name: String) -> Bool {
        state[folder]?.ignores.isIgnored(name) ?? false
    }

    public mutating func devices(connected: Set<String>) { self.connected = connected }

    /// The folder and its relative name for an absolute path.
    public func locate(_ path: String) -> (WatchedFolder, String)? {
        for f in folders.values { if let r = f.relative(path) { return (f, r) } }
        return nil
    }

    // MARK: The daemon

    /// `* CHANGED <path> gen=<n>`: a local change the daemon saw (it is `pending` now).
    public mutating func changed(path: String, gen: UInt64?, fs: some FileSystemView) -> [AdapterAction] {
        if let gen { gens[path] = gen }
        guard let (f, name) = locate(path), !name.isEmpty else { return [] }
        if name == ".stignore" {
            return [.set(SetRequest(fs.exists(path) ? .ignored : .synced, path, gen: gen)), .reloadIgnores(folder: f.id)]
        }
        if let s = state[f.id], s.ignores.isIgnored(name) {
            // Syncthing's temporary files are renamed over the real one: their tombstone
            // has nothing left to sync.
            return [.set(SetRequest(fs.exists(path) ? .ignored : .synced, path, gen: gen))]
        }
        if let original = ConflictName.original(of: name) {
            if fs.exists(path) { return conflict(f, copy: name, original: original) }
            // Resolved (renamed over the original, or deleted): both go back to Syncthing's view.
            resolved(f, copy: name, original: original)
        }
        // Syncthing has not indexed it yet: its LocalIndexUpdated triggers the check.
        state[f.id]?.unconfirmed.insert(name)
        return []
    }

    // MARK: Syncthing's events

    public mutating func event(_ e: SyncthingEvent.Payload, fs: some FileSystemView) -> [AdapterAction] {
        switch e {
        case .itemStarted(let id, let item):
            guard let f = folders[id], var s = state[id], !s.ignores.isIgnored(item) else { return [] }
            let path = f.absolute(item)
            let old = s.receiving[item] ?? nil
            let exists = fs.exists(path)
            let carrier = exists ? nil : fs.nearestExistingAncestor(of: path, root: f.path)
            s.receiving[item] = .some(carrier)
            // Syncthing pairs ItemStarted with ItemFinished; a start without the previous
            // attempt's finish must still not leave that attempt's carrier `syncing`.
            let recheck = s.recheck(s.released([old], now: carrier))
            state[id] = s
            if let carrier {
                return [.set(SetRequest(.syncing, carrier, progress: 0, message: "receiving \(item)"))] + recheck
            }
            return [.set(SetRequest(.syncing, path, gen: gens[path], progress: 0))] + recheck

        case .downloadProgress(let byFolder):
            var out: [AdapterAction] = []
            for (id, files) in byFolder {
                guard let f = folders[id], let s = state[id] else { continue }
                for (item, p) in files.sorted(by: { $0.key < $1.key }) {
                    guard let carrier = s.receiving[item], p.bytesTotal > 0 else { continue }
                    let pct = Int(min(99, p.bytesDone * 100 / p.bytesTotal))
                    let path = f.absolute(item)
                    if let carrier {
                        out.append(.set(SetRequest(.syncing, carrier, progress: pct, message: "receiving \(item)")))
                    } else {
                        out.append(.set(SetRequest(.syncing, path, gen: gens[path], progress: pct)))
                    }
                }
            }
            return out

        case .itemFinished(let id, let item, let error):
            guard let f = folders[id], var s = state[id] else { return [] }
            var out: [AdapterAction] = []
            let carrier = s.receiving.removeValue(forKey: item) ?? nil
            let path = f.absolute(item)
            if let error, !error.isEmpty {
                let exists = fs.exists(path)
                let target = exists ? path : (carrier ?? fs.nearestExistingAncestor(of: path, root: f.path))
                let old = s.failed[item] ?? nil
                s.failed[item] = exists ? .some(nil) : .some(target)
                // Handled behind Syncthing, a failed attempt can find the file put in place by a
                // later one: the error goes on the file, and the directory that carried the
                // attempt (and its previous error) carries nothing now.
                let recheck = s.recheck(s.released([carrier, old], now: exists ? nil : target))
                state[id] = s
                return [.set(SetRequest(.error, target, gen: exists ? gens[path] : nil, message: exists ? error : "\(item): \(error)"))]
                    + recheck
            }
            var recheck: Set<String> = [item]
            if let old = s.failed.removeValue(forKey: item), let onAncestor = old { recheck.insert(f.relative(onAncestor) ?? "") }
            if let carrier { recheck.insert(f.relative(carrier) ?? "") }
            s.unconfirmed.formUnion(recheck)
            state[id] = s
            out.append(.check(folder: id, names: recheck.sorted()))
            return out

        case .folderErrors(let id, let errors):
            guard let f = folders[id], var s = state[id] else { return [] }
            var out: [AdapterAction] = []
            var moved: [String?] = []
            for e in errors {
                let e = FolderErrorList.Entry(path: e.path, error: e.error.trimmingWhitespace())
                let path = f.absolute(e.path)
                let exists = fs.exists(path)
                let target = exists ? path : fs.nearestExistingAncestor(of: path, root: f.path)
                if let old = s.failed[e.path] ?? nil, old != (exists ? nil : target) { moved.append(old) }
                s.failed[e.path] = exists ? .some(nil) : .some(target)
                out.append(.set(SetRequest(.error, target, gen: exists ? gens[path] : nil, message: exists ? e.error : "\(e.path): \(e.error)")))
            }
            // An error that moved (the file exists now, or a nearer ancestor does) leaves its
            // old ancestor showing it: ask again about those that carry nothing else.
            out += s.recheck(s.released(moved, now: nil))
            state[id] = s
            return out

        case .stateChanged(let id, let to, let error):
            guard let f = folders[id] else { return [] }
            if to == "error" {
                state[id]?.inError = true
                return [.set(SetRequest(.error, f.path, message: error ?? "Syncthing stopped this folder"))]
            }
            if state[id]?.inError == true && to == "idle" {
                state[id]?.inError = false
                return [.rebuild(folder: id)]
            }
            // Errors that cleared are not announced (no empty FolderErrors): once the folder
            // is idle, ask which are left.
            if to == "idle", state[id]?.failed.isEmpty == false { return [.refreshErrors(folder: id)] }
            return []

        case .localIndexUpdated(let id, let names):
            guard var s = state[id] else { return [] }
            s.unconfirmed.formUnion(names.filter { !s.ignores.isIgnored($0) })
            state[id] = s
            return s.unconfirmed.isEmpty ? [] : [.check(folder: id, names: s.unconfirmed.sorted())]

        case .remoteIndexUpdated(_, let id), .folderCompletion(_, let id, _):
            guard var s = state[id], !(s.unconfirmed.isEmpty && s.uploading.isEmpty) else { return [] }
            // A peer's index moved on: what it was downloading from us may be done.
            s.unconfirmed.formUnion(s.uploading)
            s.uploading.removeAll()
            state[id] = s
            return [.check(folder: id, names: s.unconfirmed.sorted())]

        case .remoteDownloadProgress(_, let id, let blocks):
            guard state[id] != nil else { return [] }
            return blocks.sorted(by: { $0.key < $1.key }).map { .lookUpBlocks(folder: id, name: $0.key, blocksDone: $0.value) }

        case .configSaved:
            // Applied by the edge through `configured`, which needs this device's id.
            return []

        case .deviceConnected(let d):
            connected.insert(d)
            return recheckAll()

        case .deviceDisconnected(let d):
            connected.remove(d)
            return recheckAll()

        case .localChangeDetected(let id, let name, _, _), .remoteChangeDetected(let id, let name, _, _):
            guard let f = folders[id], state[id] != nil else { return [] }
            if state[id]?.ignores.isIgnored(name) == true { return [] }
            // Disk events come late: the copy may be resolved already.
            if let original = ConflictName.original(of: name) {
                if fs.exists(f.absolute(name)) { return conflict(f, copy: name, original: original) }
                resolved(f, copy: name, original: original)
            }
            guard var s = state[id] else { return [] }
            s.unconfirmed.insert(name)
            state[id] = s
            return [.check(folder: id, names: [name])]

        case .other:
            return []
        }
    }

    /// The folder's errors as they are now: failures no longer listed are checked again.
    public mutating func errorsLeft(folder id: String, _ errors: [FolderErrorList.Entry]) -> [AdapterAction] {
        guard var s = state[id], let f = folders[id] else { return [] }
        let left = Set(errors.map(\.path))
        var recheck: Set<String> = []
        for (name, carrier) in s.failed where !left.contains(name) {
            s.failed[name] = nil
            recheck.insert(name)
            if let carrier { recheck.insert(f.relative(carrier) ?? "") }
        }
        s.unconfirmed.formUnion(recheck.filter { !$0.isEmpty })
        state[id] = s
        return recheck.isEmpty ? [] : [.check(folder: id, names: recheck.sorted())]
    }

    /// A peer downloading `name` from us, with the file's block count looked up.
    public mutating func remoteProgress(folder id: String, name: String, blocksDone: Int, numBlocks: Int) -> [AdapterAction] {
        guard let f = folders[id], numBlocks > 0 else { return [] }
        state[id]?.uploading.insert(name)
        let path = f.absolute(name)
        let pct = min(99, blocksDone * 100 / numBlocks)
        return [.set(SetRequest(.syncing, path, gen: gens[path], progress: pct, message: "sending"))]
    }

    func recheckAll() -> [AdapterAction] {
        state.keys.sorted().compactMap { id in
            guard let s = state[id], !s.unconfirmed.isEmpty else { return nil }
            return .check(folder: id, names: s.unconfirmed.sorted())
        }
    }

    mutating func conflict(_ f: WatchedFolder, copy: String, original: String) -> [AdapterAction] {
        state[f.id]?.unconfirmed.remove(copy)
        state[f.id]?.unconfirmed.remove(original)
        state[f.id]?.conflicts[original, default: []].insert(copy)
        let message = "conflicts with \(copy)"
        return [.set(SetRequest(.conflict, f.absolute(copy), message: "conflict copy of \(original)")),
                .set(SetRequest(.conflict, f.absolute(original), message: message))]
    }

    /// The folder's tree as found on disk (relative names): ignored entries and conflict
    /// copies, which no event announces at start.
    public mutating func walked(folder id: String, entries: [(name: String, isDirectory: Bool)]) -> [AdapterAction] {
        guard let f = folders[id], let s = state[id] else { return [] }
        var out: [AdapterAction] = []
        for e in entries {
            if s.ignores.isIgnored(e.name) {
                out.append(.set(SetRequest(.ignored, f.absolute(e.name), recursive: e.isDirectory)))
            } else if let original = ConflictName.original(of: e.name) {
                out += conflict(f, copy: e.name, original: original)
            }
        }
        return out
    }

    mutating func resolved(_ f: WatchedFolder, copy: String, original: String) {
        state[f.id]?.conflicts[original]?.remove(copy)
        if state[f.id]?.conflicts[original]?.isEmpty == true { state[f.id]?.conflicts[original] = nil }
        state[f.id]?.unconfirmed.formUnion([copy, original])
    }

    // MARK: Answers

    /// The answer to a `.check`: the state the path has in Syncthing's view.
    public mutating func checked(_ c: FileCheck) -> [AdapterAction] {
        guard let f = folders[c.folder], var s = state[c.folder] else { return [] }
        let path = f.absolute(c.name)
        if let g = c.gen { gens[path] = max(gens[path] ?? 0, g) }
        if !c.name.isEmpty && s.ignores.isIgnored(c.name) {
            s.unconfirmed.remove(c.name)
            state[c.folder] = s
            return [.set(SetRequest(.ignored, path))]
        }
        // A conflict stays until the copy is resolved, whatever Syncthing says of either file.
        if let original = ConflictName.original(of: c.name), s.conflicts[original]?.contains(c.name) == true { return [] }
        if s.conflicts[c.name] != nil { return [] }
        // Still arriving, or failed: ItemFinished decides.
        if s.receiving[c.name] != nil || s.failed[c.name] != nil { return [] }
        // A directory that still carries a descendant's transfer or error keeps it.
        if s.carries(path) { return [] }
        switch FileVerdict.evaluate(c, names: deviceNames, connected: connected) {
        case .synced:
            s.unconfirmed.remove(c.name)
            state[c.folder] = s
            return [.set(SetRequest(.synced, path, gen: c.gen))]
        case .pending(let why):
            state[c.folder] = s
            return [.set(SetRequest(.pending, path, gen: c.gen, message: why))]
        }
    }

    /// The whole folder re-read: its need lists, errors and the daemon's pending paths.
    public mutating func rebuilt(folder id: String, complete: Bool, neededHere: [String], neededByPeers: [String: [String]],
                                 errors: [FolderErrorList.Entry], folderError: String?, daemonPending: [String],
                                 fs: some FileSystemView) -> [AdapterAction] {
        guard let f = folders[id], var s = state[id] else { return [] }
        s.receiving.removeAll()
        s.failed.removeAll()
        s.uploading.removeAll()
        s.conflicts.removeAll()
        var out: [AdapterAction] = [.set(SetRequest(.synced, f.path, recursive: true))]
        var names = Set(daemonPending.compactMap { f.relative($0) }.filter { !$0.isEmpty })
        if !complete {
            names.formUnion(neededHere.filter { fs.exists(f.absolute($0)) })
            for list in neededByPeers.values { names.formUnion(list) }
        }
        names = names.filter { !s.ignores.isIgnored($0) }
        s.unconfirmed = names
        s.inError = folderError != nil
        state[id] = s
        if let folderError { out.append(.set(SetRequest(.error, f.path, message: folderError))) }
        out += event(.folderErrors(folder: id, errors: errors), fs: fs)
        if !names.isEmpty { out.append(.check(folder: id, names: names.sorted())) }
        return out
    }
}

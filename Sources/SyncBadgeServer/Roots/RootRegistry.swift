import SyncBadgeCore

/// The daemon's roots (PROTOCOL.md, "Roots"): the one place a root's own life is kept — being
/// scanned, degraded, in error, its ignore settings, the `ADD-ROOT` waiting for its scan, and
/// the provider that claimed it. The state tree holds each root's entries; the hub keeps
/// the two in step by performing what these transitions return. No I/O.
///
/// Who asks is a client id (Clients).
struct RootRegistry {
    /// The protocol's `ROOT` line (a root's own type here is `RootRegistry.Root`).
    typealias RootLine = SyncBadgeProtocol.Root

    typealias Client = Int

    struct Root {
        var path: [UInt8]
        var scanning = true
        var degraded: String?
        /// Why the root is in `error` (its directory vanished, or could not be watched).
        var error: String?
        var ignoreDefaults: Bool
        /// `<root>/.syncbadgeignore` as last read.
        var ignoreFile: [UInt8]?
    }

    /// A scan asked of the watcher: for an `ADD-ROOT` (its client and tag) or a root reloaded
    /// at start (no client).
    struct Scan {
        var client: Client?
        var tag: String
        /// Reloaded with stored entries: the scan reconciles instead of filling.
        var restored: Bool
        var isNew: Bool { !tag.isEmpty }
    }

    private(set) var roots: [Root] = []
    /// The stored root being restored at start, between its chunks (`Roots.restore`).
    var restoring: StateTree.Restore?
    private var scans: [UInt64: Scan] = [:]
    private var nextToken: UInt64 = 1
    private var claims: [[UInt8]: Client] = [:]

    subscript(path: [UInt8]) -> Root? { roots.first { $0.path == path } }

    var count: Int { roots.count }

    // MARK: Adding

    enum AddCheck: Equatable {
        case add
        /// Already a root, scanned: `OK`, nothing changes.
        case alreadyARoot
        case busy(String)
    }

    /// Whether `ADD-ROOT <path>` may go ahead. Nested roots, and the daemon's own state
    /// directory, are refused.
    func check(adding path: [UInt8], privatePaths: [[UInt8]]) -> AddCheck {
        if let root = self[path] {
            return root.scanning ? .busy("\(PathBytes.display(path)) is being scanned") : .alreadyARoot
        }
        if let other = roots.first(where: { PathBytes.overlaps($0.path, path) }) {
            return .busy("overlaps the root \(PathBytes.display(other.path))")
        }
        if privatePaths.contains(where: { PathBytes.relativeComponents(path, under: $0) != nil }) {
            return .busy("that is the daemon's own state directory")
        }
        return .add
    }

    /// A root starts, `scanning=1`; returns the token of the scan to ask the watcher for.
    mutating func begin(_ path: [UInt8], ignoreDefaults: Bool, scan: Scan) -> UInt64 {
        roots.append(Root(path: path, ignoreDefaults: ignoreDefaults))
        let token = nextToken
        nextToken += 1
        scans[token] = scan
        return token
    }

    /// The watcher answered the scan `token`: what it was for (nil if the root went meanwhile).
    mutating func scanAnswered(_ token: UInt64, path: [UInt8]) -> Scan? {
        guard let scan = scans.removeValue(forKey: token), self[path] != nil else { return nil }
        return scan
    }

    /// Watched and scanned: no longer scanning, not in error.
    mutating func watched(_ path: [UInt8], ignoreFile: [UInt8]?, degraded: String?) {
        update(path) {
            $0.scanning = false
            $0.ignoreFile = ignoreFile
            $0.degraded = degraded
            $0.error = nil
        }
    }

    /// A stored root that cannot be watched stays, in error; a new one goes.
    mutating func scanFailed(_ path: [UInt8], scan: Scan, message: String) {
        if scan.isNew {
            roots.removeAll { $0.path == path }
            claims.removeValue(forKey: path)
        } else {
            update(path) {
                $0.scanning = false
                $0.error = message
            }
        }
    }

    // MARK: Removing

    enum Removal: Equatable { case removed, notARoot, scanning }

    /// `REMOVE-ROOT`: the root and its claim go.
    mutating func remove(_ path: [UInt8]) -> Removal {
        guard let root = self[path] else { return .notARoot }
        if root.scanning { return .scanning }
        roots.removeAll { $0.path == path }
        claims.removeValue(forKey: path)
        return .removed
    }

    // MARK: While watched

    /// The root directory vanished (deleted, moved, unmounted): in error, saying why.
    mutating func vanished(_ path: [UInt8], message: String) -> Bool {
        update(path) { $0.error = message }
    }

    /// A fresh scan of a watched root (a periodic one, or the root came back). Returns whether
    /// it had been in error, and its `degraded` before; nil while it is still being scanned.
    mutating func refreshed(_ path: [UInt8], ignoreFile: [UInt8]?, degraded: String?) -> (wasInError: Bool, wasDegraded: String?)? {
        guard let root = self[path], !root.scanning else { return nil }
        update(path) {
            $0.error = nil
            $0.ignoreFile = ignoreFile
            $0.degraded = degraded
        }
        return (root.error != nil, root.degraded)
    }

    /// The root's ignore file changed (read by the watcher, or written by an action). Returns
    /// the root, or nil while it is scanned (the scan reads the file).
    mutating func ignoreFileChanged(_ path: [UInt8], contents: [UInt8]?) -> Root? {
        guard let root = self[path], !root.scanning else { return nil }
        update(path) { $0.ignoreFile = contents }
        return self[path]
    }

    // MARK: Clients

    enum ClaimResult { case claimed; case heldBy(Client) }

    /// `CLAIM`: the root's provider is `client`, unless another holds it.
    mutating func claim(_ path: [UInt8], by client: Client) -> ClaimResult {
        if let owner = claims[path], owner != client { return .heldBy(owner) }
        claims[path] = client
        return .claimed
    }

    func claimant(of path: [UInt8]) -> Client? { claims[path] }

    /// `UNCLAIM` (1.2): whether `client` held the root's claim (it no longer does).
    mutating func unclaim(_ path: [UInt8], by client: Client) -> Bool {
        guard let owner = claims[path], owner == client else { return false }
        claims.removeValue(forKey: path)
        return true
    }

    /// The client's connection closed: its claims go (returned, for their `* ROOT`), and the
    /// scans it waits for will answer no one.
    mutating func closed(_ client: Client) -> [[UInt8]] {
        for (token, scan) in scans where scan.client == client { scans[token]?.client = nil }
        let released = claims.filter { $0.value == client }.map(\.key)
        for path in released { claims.removeValue(forKey: path) }
        return released.sorted { $0.lexicographicallyPrecedes($1) }
    }

    // MARK: ROOT lines

    /// What the tree says of a root, for its line: its roll-up, its own state and message, and
    /// how many entries below it are in error.
    struct Reported {
        var state: SyncState
        var ownState: SyncState
        var ownMessage: String?
        var entriesInError: Int
    }

    /// The root's `ROOT` line. A root in error always says why (1.1): its own error, else the
    /// message a provider set on it, else how many entries are in error.
    func line(_ root: Root, reported: Reported?, provider: String?, watches: Int) -> RootLine {
        let state: SyncState = root.error != nil ? .error : reported?.state ?? .unknown
        var line = RootLine(path: root.path, state: state, provider: provider, watches: watches, scanning: root.scanning,
                            degraded: root.degraded, message: root.error)
        if root.error == nil, state == .error, let reported {
            if reported.ownState == .error, let m = reported.ownMessage {
                line.message = m
            } else {
                let n = reported.entriesInError
                line.message = n == 1 ? "1 entry in error" : "\(n) entries in error"
            }
        }
        return line
    }

    @discardableResult
    private mutating func update(_ path: [UInt8], _ change: (inout Root) -> Void) -> Bool {
        guard let i = roots.firstIndex(where: { $0.path == path }) else { return false }
        change(&roots[i])
        return true
    }
}

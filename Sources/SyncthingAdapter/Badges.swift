/// One `SET` for the daemon, in the adapter's terms.
public struct BadgeSet: Sendable, Equatable, CustomStringConvertible {
    public var state: String
    public var path: String
    public var gen: UInt64?
    public var progress: Int?
    public var message: String?
    public var recursive: Bool

    public init(_ state: String, _ path: String, gen: UInt64? = nil, progress: Int? = nil, message: String? = nil, recursive: Bool = false) {
        self.state = state; self.path = path; self.gen = gen; self.progress = progress; self.message = message; self.recursive = recursive
    }

    public var description: String {
        "SET \(state) \(path)" + (gen.map { " gen=\($0)" } ?? "") + (progress.map { " progress=\($0)" } ?? "")
            + (message.map { " message=\($0)" } ?? "") + (recursive ? " recursive=1" : "")
    }
}

/// A Syncthing folder the adapter follows: one SyncBadge root.
public struct WatchedFolder: Sendable, Equatable {
    public var id: String
    public var label: String
    /// Absolute, without a trailing slash: the root's path.
    public var path: String
    /// The other devices the folder is shared with.
    public var peers: [String]
    public var paused: Bool

    public init(id: String, label: String, path: String, peers: [String], paused: Bool = false) {
        self.id = id; self.label = label; self.path = path; self.peers = peers; self.paused = paused
    }

    /// The folders of a configuration, as this device (`myID`) shares them; `only` limits
    /// them to some ids (empty: all). `~` is expanded with `home`.
    public static func from(_ config: SyncthingConfig, myID: String, home: String, only: [String] = []) -> [WatchedFolder] {
        config.folders.filter { only.isEmpty || only.contains($0.id) }.map { f in
            var path = f.path
            if path == "~" { path = home } else if path.hasPrefix("~/") { path = home + path.dropFirst(1) }
            while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
            return WatchedFolder(id: f.id, label: f.label.flatMap { $0.isEmpty ? nil : $0 } ?? f.id, path: path,
                                 peers: f.devices.map(\.deviceID).filter { $0 != myID }, paused: f.paused ?? false)
        }
    }

    public func absolute(_ relative: String) -> String { relative.isEmpty ? path : path + "/" + relative }

    /// The folder-relative name of an absolute path inside it, "" for the root; nil outside.
    public func relative(_ absolute: String) -> String? {
        if absolute == path { return "" }
        let prefix = path == "/" ? "/" : path + "/"
        guard absolute.hasPrefix(prefix) else { return nil }
        return String(absolute.dropFirst(prefix.count))
    }
}

/// What the adapter knows of the file system, for paths that may not exist yet.
public protocol FileSystemView {
    func exists(_ path: String) -> Bool
}

extension FileSystemView {
    /// The nearest existing directory above `path`, never above `root`.
    public func nearestExistingAncestor(of path: String, root: String) -> String {
        var p = path
        while p != root, let slash = p.lastIndex(of: "/") {
            p = slash == p.startIndex ? "/" : String(p[..<slash])
            if p == root || exists(p) { return p }
        }
        return root
    }
}

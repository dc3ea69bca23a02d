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

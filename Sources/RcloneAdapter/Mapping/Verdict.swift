/// Where a synced file's bytes are: the `local` and `cloud` badges ("available offline").
public enum Residence: String, Sendable, Equatable {
    /// Every byte is in the VFS cache.
    case local
    /// Not (wholly) in the cache: reading it downloads it.
    case cloud

    /// The badge's id, defined by the adapter.
    public var badge: String { "rclone-" + rawValue }
}

/// What one path shows.
public enum Verdict: Sendable, Equatable {
    case pending(String)
    case syncing(progress: Int, String)
    case synced(Residence?)
    case error(String)
}

/// What the adapter found out about one path, in one piece, so that the verdict is a pure
/// function of it.
public struct FileFacts: Sendable, Equatable {
    public enum Kind: Sendable, Equatable { case file, directory, other, gone }
    /// Relative to the mount point: rclone's name for it.
    public var name: String
    public var kind: Kind
    public var size: Int64
    /// The modification time through the mount, in ns since the epoch.
    public var mtime: Int64
    /// Its metadata in the VFS cache; nil when the cache holds nothing of it.
    public var meta: CacheMeta?
    /// Whether the cache's data file exists.
    public var dataCached: Bool
    /// How long ago the daemon reported the path changed; nil when it did not (a path listed
    /// at start).
    public var sinceChange: Duration?

    public init(name: String, kind: Kind, size: Int64 = 0, mtime: Int64 = 0, meta: CacheMeta? = nil, dataCached: Bool = false,
                sinceChange: Duration? = nil) {
        self.name = name; self.kind = kind; self.size = size; self.mtime = mtime; self.meta = meta; self.dataCached = dataCached
        self.sinceChange = sinceChange
    }
}

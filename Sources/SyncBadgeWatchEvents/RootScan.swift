import SyncBadgeCore

/// A root as the watcher found it when it started watching it.
public struct RootScan: Sendable {
    public var scan: ScanTree
    /// Contents of `<root>/.syncbadgeignore`, if there is one.
    public var ignoreFile: [UInt8]?
    public var watches: Int
    /// Set when not every directory could be watched (e.g. `watch-limit`).
    public var degraded: String?

    public init(scan: ScanTree, ignoreFile: [UInt8]? = nil, watches: Int, degraded: String? = nil) {
        self.scan = scan
        self.ignoreFile = ignoreFile
        self.watches = watches
        self.degraded = degraded
    }
}

/// Why a root could not be watched.
public enum RootError: Error, Sendable, Equatable {
    case notFound
    case notADirectory
    case failed(String)
}

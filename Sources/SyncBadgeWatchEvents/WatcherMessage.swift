import SyncBadgeCore

/// What the watcher thread tells the hub, in order: the file events the kernel reported,
/// and the answers to the hub's commands (a root's scan, a barrier) in their place among
/// them, so that an answer is applied after every event that came before it.
public enum WatcherMessage: Sendable {
    /// A file, link or other entry was created or changed, or a directory's attributes changed.
    case changed(path: [UInt8], kind: EntryKind, what: ChangeKind)
    /// A directory appeared (created or moved in); `subtree` is what it held once watched.
    case directoryAppeared(path: [UInt8], subtree: ScanTree)
    /// A path was deleted or moved out of every root.
    case deleted(path: [UInt8], wasDirectory: Bool)
    /// A rename from one watched place to another.
    case moved(from: [UInt8], to: [UInt8], kind: EntryKind)
    /// `<root>/.syncbadgeignore` changed; nil contents when it is gone.
    case ignoreFileChanged(root: [UInt8], contents: [UInt8]?)
    /// Answer to `addRoot`.
    case rootAdded(root: [UInt8], token: UInt64, result: Result<RootScan, RootError>)
    /// Events were lost (kernel queue overflow): this is a fresh scan of the root.
    case rootRescanned(root: [UInt8], scan: RootScan)
    /// A periodic rescan of a root that is not fully watched (`degraded`), or of a root that
    /// came back after it vanished: a fresh scan, but no events were lost elsewhere.
    case rootRefreshed(root: [UInt8], scan: RootScan)
    /// The root directory itself was deleted, moved or unmounted.
    case rootVanished(root: [UInt8], reason: String)
    /// Every event queued before `barrier(token)` was asked for has been delivered.
    case barrier(token: UInt64)
    /// The kernel queue overflowed; rescans follow.
    case overflow
    /// First in each batch the watcher sends: the identities of the paths its writes,
    /// attribute changes and renames name (`moved`'s destination), nil for a path gone, read
    /// on the watcher's thread once it had read the batch's events. The hub compares a synced
    /// file's identity with these instead of reading the file on its event loop or sending
    /// the read to another thread and waiting. They hold until the next `identities`.
    case identities([[UInt8]: FileIdentity?])
}

/// What kind of local change a `changed` event is.
public enum ChangeKind: String, Sendable {
    case create, modify, attrib
}

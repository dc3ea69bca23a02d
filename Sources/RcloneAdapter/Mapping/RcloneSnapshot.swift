/// What one round of rc calls returned: the VFS's counters, the transfers running and those
/// finished, and, on rclone 1.68 and later, the upload queue.
public struct RcloneSnapshot: Sendable, Equatable {
    public var stats: VFSStats
    public var transferring: [Transfer]
    /// Oldest first, as rclone lists them.
    public var finished: [Finished]
    /// nil where rclone has no `vfs/queue` (before 1.68).
    public var queue: [QueueItem]?

    public init(stats: VFSStats, transferring: [Transfer], finished: [Finished], queue: [QueueItem]?) {
        self.stats = stats; self.transferring = transferring; self.finished = finished; self.queue = queue
    }

    /// Anything left to upload: the adapter polls again only while this is true.
    public var busy: Bool {
        stats.busy || !transferring.isEmpty || !(queue ?? []).isEmpty
    }

    /// Only uploads that failed and wait for their retry are left: polled less often.
    public func onlyRetries(errored: Int) -> Bool {
        guard transferring.isEmpty else { return false }
        if let queue { return !queue.isEmpty && queue.allSatisfy { $0.tries > 0 && !$0.uploading } }
        let waiting = (stats.diskCache?.uploadsQueued ?? 0) + (stats.diskCache?.uploadsInProgress ?? 0)
        return waiting > 0 && waiting <= errored
    }

    /// The last failure rclone listed for the file, unless a later transfer of it succeeded
    /// or was cancelled by a new write.
    public func lastError(of name: String) -> String? {
        guard let last = finished.last(where: { $0.name == name }) else { return nil }
        return last.error.isEmpty || last.canceled ? nil : last.error
    }
}

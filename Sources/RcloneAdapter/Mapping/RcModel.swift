import Foundation

/// `vfs/stats`: what the adapter reads of it. The VFS cache's directories name where each
/// file's data and metadata live.
public struct VFSStats: Decodable, Sendable, Equatable {
    public struct DiskCache: Decodable, Sendable, Equatable {
        public var path: String
        public var pathMeta: String
        public var uploadsQueued: Int
        public var uploadsInProgress: Int
        public var erroredFiles: Int
        public init(path: String, pathMeta: String, uploadsQueued: Int, uploadsInProgress: Int, erroredFiles: Int) {
            self.path = path; self.pathMeta = pathMeta; self.uploadsQueued = uploadsQueued
            self.uploadsInProgress = uploadsInProgress; self.erroredFiles = erroredFiles
        }
    }
    /// Absent when the mount runs without a VFS cache (`--vfs-cache-mode off`).
    public var diskCache: DiskCache?
    /// The remote as rclone names it (`gdrive:`, `/srv/data`, `:union{2ewNv}:`).
    public var fs: String

    /// Uploads waiting or running: the adapter polls only while this is true.
    public var busy: Bool { (diskCache?.uploadsQueued ?? 0) + (diskCache?.uploadsInProgress ?? 0) > 0 }
}

/// One entry of `core/stats` `transferring`.
public struct Transfer: Decodable, Sendable, Equatable {
    public var name: String
    public var size: Int64
    public var bytes: Int64
    public var percentage: Int?
    public init(name: String, size: Int64, bytes: Int64, percentage: Int?) {
        self.name = name; self.size = size; self.bytes = bytes; self.percentage = percentage
    }
}

public struct CoreStats: Decodable, Sendable, Equatable {
    /// Left out by rclone when nothing is transferring.
    public var transferring: [Transfer]?
    public var lastError: String?
}

/// One entry of `core/transferred`: a finished transfer, either way (a file read into the cache
/// is listed as well as an upload), with its error text, empty on success.
public struct Finished: Decodable, Sendable, Equatable {
    public var name: String
    public var size: Int64
    public var bytes: Int64
    public var error: String
    public var completedAt: String

    enum CodingKeys: String, CodingKey {
        case name, size, bytes, error
        case completedAt = "completed_at"
    }

    public init(name: String, size: Int64, bytes: Int64, error: String, completedAt: String) {
        self.name = name; self.size = size; self.bytes = bytes; self.error = error; self.completedAt = completedAt
    }

    /// rclone cancels an upload when the file is written again and queues it anew: no failure.
    public var canceled: Bool { error == "context canceled" }
}

public struct CoreTransferred: Decodable, Sendable, Equatable {
    public var transferred: [Finished]
}

/// One entry of `vfs/queue` (rclone 1.68 and later).
public struct QueueItem: Decodable, Sendable, Equatable {
    public var name: String
    public var id: Int64
    public var size: Int64
    public var expiry: Double
    public var tries: Int
    public var delay: Double
    public var uploading: Bool
    public init(name: String, id: Int64, size: Int64, expiry: Double, tries: Int, delay: Double, uploading: Bool) {
        self.name = name; self.id = id; self.size = size; self.expiry = expiry; self.tries = tries
        self.delay = delay; self.uploading = uploading
    }
}

public struct VFSQueue: Decodable, Sendable, Equatable {
    public var queue: [QueueItem]
    enum CodingKeys: String, CodingKey { case queue }
    public init(queue: [QueueItem]) { self.queue = queue }
    /// An rclone without a cache answers an empty object, or `null` items.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        queue = try c.decodeIfPresent([QueueItem].self, forKey: .queue) ?? []
    }
}

/// A file's metadata in the VFS cache (`<pathMeta>/<path>`): whether it still has to be
/// uploaded, and which byte ranges are held locally.
public struct CacheMeta: Decodable, Sendable, Equatable {
    public struct Range: Decodable, Sendable, Equatable {
        public var pos: Int64
        public var size: Int64
        enum CodingKeys: String, CodingKey { case pos = "Pos", size = "Size" }
        public init(pos: Int64, size: Int64) { self.pos = pos; self.size = size }
    }
    public var size: Int64
    public var modTime: String
    public var ranges: [Range]
    public var dirty: Bool
    /// `size,modtime,hash` of what was uploaded; empty before the first upload.
    public var fingerprint: String

    enum CodingKeys: String, CodingKey {
        case size = "Size", modTime = "ModTime", ranges = "Rs", dirty = "Dirty", fingerprint = "Fingerprint"
    }

    public init(size: Int64, modTime: String, ranges: [Range], dirty: Bool, fingerprint: String) {
        self.size = size; self.modTime = modTime; self.ranges = ranges; self.dirty = dirty; self.fingerprint = fingerprint
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        size = try c.decode(Int64.self, forKey: .size)
        modTime = try c.decodeIfPresent(String.self, forKey: .modTime) ?? ""
        ranges = try c.decodeIfPresent([Range].self, forKey: .ranges) ?? []
        dirty = try c.decodeIfPresent(Bool.self, forKey: .dirty) ?? false
        fingerprint = try c.decodeIfPresent(String.self, forKey: .fingerprint) ?? ""
    }

    /// Every byte of the file is in the cache.
    public var wholeFileCached: Bool {
        var covered: Int64 = 0
        for r in ranges.sorted(by: { $0.pos < $1.pos }) {
            if r.pos > covered { return false }
            covered = max(covered, r.pos + r.size)
        }
        return covered >= size
    }

    /// The size in the fingerprint of the last upload, nil before one.
    public var uploadedSize: Int64? {
        fingerprint.split(separator: ",", maxSplits: 1).first.flatMap { Int64($0) }
    }
}

/// rclone's model of one path to its badge state. Pure: every input is in the facts and the
/// snapshot, so the rules are tested with JSON recorded from real rclone.
public enum RcloneMapper {
    /// rclone writes a file's cache metadata as it opens it for writing; a file created through
    /// the mount may still be without it for a moment (the daemon reports the creation first).
    public static let metadataSettle = Duration.seconds(2)

    /// How long ago the path changed: as the daemon reported it, or, for a path it has not
    /// reported (found by the walk after a restart or a lost connection, which can come before
    /// the daemon's report of a write made a moment ago), from the file's own modification time
    /// when that is within `metadataSettle` of `wallNowNs`. Without the second, a file written a
    /// moment ago, whose cache metadata rclone had not written yet, was judged in the cloud
    /// only, and said so until it next changed. An mtime ahead of the clock by less than
    /// `metadataSettle` (a clock stepped back) is just written; one further ahead (a file dated
    /// by a device with a wrong clock, or `touch -d`) says nothing of when it was written, and
    /// taken as recent it would wait for rclone, and be polled for, until that date.
    public static func sinceChange(reported: Duration?, mtime: Int64, wallNowNs: Int64) -> Duration? {
        if let reported { return reported }
        guard mtime > 0 else { return nil }
        let age = Duration.nanoseconds(wallNowNs - mtime)
        guard age > .zero - metadataSettle, age < metadataSettle else { return nil }
        return max(.zero, age)
    }

    public static func verdict(_ f: FileFacts, _ s: RcloneSnapshot) -> Verdict {
        switch f.kind {
        // rclone makes directories and removes files on the remote before the call through the
        // mount returns: nothing of them waits in the queue.
        case .directory, .gone, .other: return .synced(nil)
        case .file: break
        }
        if let t = s.transferring.first(where: { $0.name == f.name }) {
            let p = t.percentage ?? (t.size > 0 ? Int(t.bytes * 100 / t.size) : 0)
            return .syncing(progress: min(100, max(0, p)), "uploading: \(ByteCount(t.bytes)) of \(ByteCount(t.size))")
        }
        if let queue = s.queue, let q = queue.first(where: { $0.name == f.name }) {
            if q.uploading { return .syncing(progress: 0, "uploading") }
            if q.tries > 0 {
                let why = s.lastError(of: f.name) ?? "the upload failed"
                return .error("\(why) (tried \(q.tries) \(q.tries == 1 ? "time" : "times"); rclone retries in \(seconds(q.expiry)))")
            }
            return .pending(q.expiry > 0 ? "queued for upload in \(seconds(q.expiry))" : "queued for upload")
        }
        guard let meta = f.meta else {
            // Nothing in the cache: the file is the remote's, unless it was just written and
            // rclone has not got to it yet.
            if let since = f.sinceChange, since < metadataSettle { return .pending("waiting for rclone") }
            return s.busy && s.queue == nil && f.sinceChange != nil ? .pending("waiting for rclone") : .synced(.cloud)
        }
        if meta.dirty {
            if let e = s.lastError(of: f.name) { return .error(e) }
            // The transfer of this very content ended a moment ago: rclone marks the file clean
            // in its cache right after. Not pending again in between.
            if let last = s.finished.last(where: { $0.name == f.name }), last.error.isEmpty, last.size == f.size,
               let done = RFC3339.nanoseconds(last.completedAt), let written = RFC3339.nanoseconds(meta.modTime), done >= written {
                return .syncing(progress: 100, "finishing the upload")
            }
            return .pending("waiting for upload")
        }
        // Uploaded: what was uploaded must be what the mount shows now.
        guard meta.uploadedSize.map({ $0 == f.size }) ?? (meta.size == f.size),
              meta.size == f.size, RFC3339.nanoseconds(meta.modTime).map({ $0 == f.mtime }) ?? true else {
            return .pending("changed since its upload")
        }
        return .synced(meta.wholeFileCached && f.dataCached ? .local : .cloud)
    }

    static func seconds(_ s: Double) -> String {
        s <= 0 ? "now" : s < 10 ? "\(Double(Int(s * 10)) / 10) s" : "\(Int(s)) s"
    }
}

/// Bytes as people read them: 12 MB, 640 kB, 3 B (decimal units, as rclone's own stats).
public struct ByteCount: CustomStringConvertible, Sendable {
    public var bytes: Int64
    public init(_ bytes: Int64) { self.bytes = bytes }
    public var description: String {
        let units = ["B", "kB", "MB", "GB", "TB"]
        var v = Double(bytes)
        var i = 0
        while v >= 1000 && i < units.count - 1 {
            v /= 1000
            i += 1
        }
        if i == 0 { return "\(bytes) B" }
        let rounded = v < 10 ? Double(Int(v * 10 + 0.5)) / 10 : Double(Int(v + 0.5))
        let text = rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
        return "\(text) \(units[i])"
    }
}

/// rclone's times (`2026-11-27T19:31:57.115332457Z`, or with an offset) as ns since the epoch.
public enum RFC3339 {
    public static func nanoseconds(_ s: String) -> Int64? {
        let b = Array(s.utf8)
        func num(_ r: Range<Int>) -> Int64? {
            guard r.upperBound <= b.count else { return nil }
            var v: Int64 = 0
            for c in b[r] {
                guard c >= 48 && c <= 57 else { return nil }
                v = v * 10 + Int64(c - 48)
            }
            return v
        }
        guard b.count >= 20, let y = num(0..<4), let mo = num(5..<7), let d = num(8..<10), let h = num(11..<13),
              let mi = num(14..<16), let se = num(17..<19) else { return nil }
        var i = 19
        var frac: Int64 = 0
        var digits = 0
        if i < b.count && b[i] == UInt8(ascii: ".") {
            i += 1
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                if digits < 9 { frac = frac * 10 + Int64(b[i] - 48); digits += 1 }
                i += 1
            }
        }
        while digits < 9 { frac *= 10; digits += 1 }
        var offset: Int64 = 0
        guard i < b.count else { return nil }
        if b[i] == UInt8(ascii: "Z") {
            offset = 0
        } else if b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-"), let oh = num(i + 1..<i + 3), let om = num(i + 4..<i + 6) {
            offset = (oh * 3600 + om * 60) * (b[i] == UInt8(ascii: "+") ? 1 : -1)
        } else {
            return nil
        }
        // Days since 1970-01-01 (Howard Hinnant's days_from_civil).
        let yy = mo <= 2 ? y - 1 : y
        let era = (yy >= 0 ? yy : yy - 399) / 400
        let yoe = yy - era * 400
        let doy = (153 * (mo > 2 ? mo - 3 : mo + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146097 + doe - 719468
        let secs = days * 86400 + h * 3600 + mi * 60 + se - offset
        return secs * 1_000_000_000 + frac
    }
}

/// The toolbar item: the remote's name, and what is left to upload.
public enum RcloneToolbar {
    public static func text(remote: String, _ s: RcloneSnapshot?, pendingBytes: Int64) -> (name: String, tooltip: String) {
        guard let s else { return (remote, "rclone's remote control does not answer") }
        let files: Int
        var bytes = s.transferring.reduce(Int64(0)) { $0 + max(0, $1.size - $1.bytes) }
        if let queue = s.queue {
            files = queue.count
            let running = Set(s.transferring.map(\.name))
            bytes += queue.filter { !$0.uploading && !running.contains($0.name) }.reduce(0) { $0 + $1.size }
        } else {
            files = (s.stats.diskCache?.uploadsQueued ?? 0) + (s.stats.diskCache?.uploadsInProgress ?? 0)
            bytes += pendingBytes
        }
        guard files > 0 else { return (remote, "\(remote): everything is uploaded") }
        let line = "↑ \(files) \(files == 1 ? "file" : "files"), \(ByteCount(bytes))"
        return ("\(remote) \(line)", "\(remote): \(line) left to upload")
    }
}

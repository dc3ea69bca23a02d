/// "Show Syncthing's view" (`syncthing.view`): what Syncthing knows of one file, in words, as
/// the action's answer. Pure: the loop reads `/rest/db/file` and each peer's need list first.
public enum SyncthingView {
    /// - Parameters:
    ///   - db: `/rest/db/file` for the file.
    ///   - peers: the devices the folder is shared with (not this one).
    ///   - neededBy: the peers whose need list holds the file.
    ///   - neededHere: whether this device's need list holds it.
    public static func describe(name: String, folderLabel: String, db: DBFile, peers: [String], neededBy: Set<String>,
                                neededHere: Bool, myID: String, deviceNames: [String: String]) -> String {
        func device(_ id: String) -> String {
            let n = deviceNames[id].flatMap { $0.isEmpty ? nil : $0 } ?? String(id.prefix(7))
            return id == myID ? "\(n) (this device)" : n
        }
        // A version vector's counters are keyed by each device's short id, the first
        // characters of its id.
        func version(_ record: FileRecord?) -> String {
            guard let record else { return "none" }
            if record.deleted == true && (record.version ?? []).isEmpty { return "deleted" }
            let parts = (record.version ?? []).map { counter -> String in
                let pieces = counter.split(separator: ":", maxSplits: 1)
                guard pieces.count == 2 else { return counter }
                let short = String(pieces[0])
                let who = ([myID] + peers + Array(deviceNames.keys)).first { $0.hasPrefix(short) }.map { device($0) } ?? short
                return "\(who) \(pieces[1])"
            }
            var text = parts.isEmpty ? "none" : parts.joined(separator: ", ")
            if record.deleted == true { text += " (deleted)" }
            if let m = record.modified { text += " (modified \(m))" }
            return text
        }
        let everyone = [myID] + peers.sorted { device($0) < device($1) }
        let needing = everyone.filter { $0 == myID ? neededHere : neededBy.contains($0) }
        let upToDate = everyone.filter { !needing.contains($0) }
        return [
            "\(name) in Syncthing folder \(folderLabel)",
            "Local version: \(version(db.local))",
            "Global version: \(version(db.global))",
            "Up to date: " + (upToDate.isEmpty ? "no device" : upToDate.map(device).joined(separator: ", ")),
            "Still needs it: " + (needing.isEmpty ? "no device" : needing.map(device).joined(separator: ", ")),
        ].joined(separator: "\n")
    }
}

/// Everything the adapter learnt about one path when it asked, in one piece so that the
/// decision is a pure function of it.
public struct FileCheck: Sendable, Equatable {
    public var folder: String
    public var name: String
    /// The daemon's generation when the check began: a write after that makes the `SET` stale.
    public var gen: UInt64?
    /// What `lstat` said just before Syncthing was asked (nil: the path does not exist).
    public var disk: DiskIdentity?
    public var db: DBFile?
    /// In this device's need list (a newer version elsewhere, not here yet).
    public var neededHere: Bool
    /// The peers whose remoteneed lists it.
    public var neededBy: [String]
    /// Every peer the folder is shared with: each must have announced this version.
    public var peers: [String]

    public init(folder: String, name: String, gen: UInt64?, disk: DiskIdentity?, db: DBFile?, neededHere: Bool = false,
                neededBy: [String] = [], peers: [String] = []) {
        self.folder = folder; self.name = name; self.gen = gen; self.disk = disk; self.db = db
        self.neededHere = neededHere; self.neededBy = neededBy; self.peers = peers
    }
}

public struct DiskIdentity: Sendable, Equatable {
    public var size: Int64
    public var mtimeNanoseconds: Int64
    public var isDirectory: Bool
    public init(size: Int64, mtimeNanoseconds: Int64, isDirectory: Bool) {
        self.size = size; self.mtimeNanoseconds = mtimeNanoseconds; self.isDirectory = isDirectory
    }
}

public enum FileVerdict: Sendable, Equatable {
    case synced
    case pending(String)

    /// Whether Syncthing's view of the file says it is in sync everywhere it is shared.
    /// `names` gives devices their names for messages; `connected` tells which are online.
    public static func evaluate(_ c: FileCheck, names: [String: String] = [:], connected: Set<String> = []) -> FileVerdict {
        let local = c.db?.local
        if let disk = c.disk {
            guard let local, local.deleted != true else { return .pending("not yet scanned by Syncthing") }
            // Syncthing does not index a directory's own time and size the way it does a
            // file's: a directory it knows is what it has.
            if !disk.isDirectory {
                guard local.size == disk.size,
                      let m = local.modified.flatMap(Timestamp.nanoseconds), m == disk.mtimeNanoseconds else {
                    return .pending("changed since Syncthing last scanned it")
                }
            }
        } else if let local, local.deleted != true {
            return .pending("deletion not yet scanned by Syncthing")
        }
        if c.neededHere || (local != nil && c.db?.global?.version != local?.version) {
            return .pending("a newer version on another device is not here yet")
        }
        // remoteneed is empty for a peer whose index Syncthing does not hold at the moment
        // (its folder paused, or just resumed): a version counts as there only where the peer
        // announced it, complete. Deletions are not announced that way: their need lists decide.
        var missing = Set(c.neededBy)
        if local != nil, c.db?.global != nil, c.db?.global?.deleted != true {
            let complete = Set((c.db?.availability ?? []).filter { $0.fromTemporary != true }.map(\.id))
            missing.formUnion(c.peers.filter { !complete.contains($0) })
        }
        if !missing.isEmpty {
            let who = missing.map { id in
                let n = names[id].flatMap { $0.isEmpty ? nil : $0 } ?? String(id.prefix(7))
                return connected.contains(id) ? n : "\(n) (disconnected)"
            }
            return .pending("waiting for " + who.sorted().joined(separator: ", "))
        }
        return .synced
    }
}

/// RFC 3339 times as Syncthing writes them (Go's `time.Time`, nanoseconds, any offset).
public enum Timestamp {
    public static func nanoseconds(_ s: String) -> Int64? {
        let b = Array(s.utf8)
        func num(_ from: Int, _ n: Int) -> Int64? {
            guard from + n <= b.count else { return nil }
            var v: Int64 = 0
            for i in from..<from + n {
                guard b[i] >= 48 && b[i] <= 57 else { return nil }
                v = v * 10 + Int64(b[i] - 48)
            }
            return v
        }
        guard b.count >= 20, let y = num(0, 4), let mo = num(5, 2), let d = num(8, 2),
              let h = num(11, 2), let mi = num(14, 2), let se = num(17, 2) else { return nil }
        var i = 19
        var frac: Int64 = 0
        if i < b.count && b[i] == UInt8(ascii: ".") {
            i += 1
            var digits = 0
            while i < b.count, b[i] >= 48 && b[i] <= 57 {
                if digits < 9 { frac = frac * 10 + Int64(b[i] - 48); digits += 1 }
                i += 1
            }
            while digits < 9 { frac *= 10; digits += 1 }
        }
        guard i < b.count else { return nil }
        var offset: Int64 = 0
        if b[i] == UInt8(ascii: "Z") {
            offset = 0
        } else if b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-"), let oh = num(i + 1, 2), let om = num(i + 4, 2) {
            offset = (oh * 3600 + om * 60) * (b[i] == UInt8(ascii: "-") ? -1 : 1)
        } else {
            return nil
        }
        // Days from the civil date (Howard Hinnant's algorithm).
        let yy = mo <= 2 ? y - 1 : y
        let era = (yy >= 0 ? yy : yy - 399) / 400
        let yoe = yy - era * 400
        let doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146097 + doe - 719468
        let seconds = days * 86400 + h * 3600 + mi * 60 + se - offset
        return seconds * 1_000_000_000 + frac
    }
}

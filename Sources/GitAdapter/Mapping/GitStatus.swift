/// What `git status --porcelain=v2 -z --branch` says, parsed without interpretation.
///
/// Paths are raw bytes, relative to the working tree's top level (the adapter runs git there):
/// git writes every file name as it is with `-z`, and any Linux name must survive.
public struct BranchInfo: Sendable, Equatable {
    /// The commit HEAD names; nil before the first commit (`(initial)`).
    public var oid: String?
    /// The branch; nil when HEAD is detached.
    public var head: String?
    /// `origin/main`, when the branch has one configured.
    public var upstream: String?
    /// Commits HEAD has that the upstream lacks, and the other way; nil when there is no
    /// upstream, or it is configured but its ref is gone.
    public var ahead: Int?
    public var behind: Int?

    public init(oid: String? = nil, head: String? = nil, upstream: String? = nil, ahead: Int? = nil, behind: Int? = nil) {
        self.oid = oid; self.head = head; self.upstream = upstream; self.ahead = ahead; self.behind = behind
    }

    /// An upstream whose ref exists: only then is anything "safe elsewhere".
    public var hasUpstream: Bool { upstream != nil && ahead != nil }
}

public struct StatusEntry: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// `1 XY ...`: a tracked path changed in the index (X) and/or the working tree (Y);
        /// `.` means unchanged.
        case changed(index: UInt8, worktree: UInt8)
        /// `2 XY ...`: renamed or copied in the index, from `from`.
        case renamed(index: UInt8, worktree: UInt8, from: [UInt8])
        /// `u XY ...`: unmerged, XY as git writes it (`UU`, `AA`, `DU`...).
        case unmerged(String)
        case untracked
        /// A directory when its path ends in `/` (git writes it so): then everything below it.
        case ignored
    }
    /// Without the trailing `/` git writes after an ignored or untracked directory.
    public var path: [UInt8]
    public var kind: Kind
    /// git wrote a trailing `/`: the path is a directory.
    public var isDirectory: Bool

    public init(path: [UInt8], kind: Kind, isDirectory: Bool = false) {
        self.path = path; self.kind = kind; self.isDirectory = isDirectory
    }
}

public struct GitStatus: Sendable, Equatable {
    public var branch = BranchInfo()
    public var entries: [StatusEntry] = []

    public init(branch: BranchInfo = BranchInfo(), entries: [StatusEntry] = []) {
        self.branch = branch
        self.entries = entries
    }

    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public var record: String
        public var description: String { "unexpected line in git status output: \(record)" }
    }

    /// Parses the NUL-separated records of `git status --porcelain=v2 -z --branch`.
    public static func parse(_ output: [UInt8]) throws -> GitStatus {
        var status = GitStatus()
        let records = output.split(separator: 0, omittingEmptySubsequences: false)
        var i = 0
        while i < records.count {
            let r = records[i]
            i += 1
            guard let first = r.first else { continue }
            switch first {
            case UInt8(ascii: "#"):
                parseHeader(Array(r), into: &status.branch)
            case UInt8(ascii: "1"):
                guard let (fields, path) = split(r, fields: 8), let xy = fields[1].xy else { throw ParseError(record: text(r)) }
                status.entries.append(StatusEntry(path: path, kind: .changed(index: xy.0, worktree: xy.1)))
            case UInt8(ascii: "2"):
                // The original path is the next record.
                guard let (fields, path) = split(r, fields: 9), let xy = fields[1].xy, i < records.count, !records[i].isEmpty else {
                    throw ParseError(record: text(r))
                }
                let from = Array(records[i])
                i += 1
                status.entries.append(StatusEntry(path: path, kind: .renamed(index: xy.0, worktree: xy.1, from: from)))
            case UInt8(ascii: "u"):
                guard let (fields, path) = split(r, fields: 10), fields[1].count == 2 else { throw ParseError(record: text(r)) }
                status.entries.append(StatusEntry(path: path, kind: .unmerged(text(fields[1]))))
            case UInt8(ascii: "?"), UInt8(ascii: "!"):
                guard r.count > 2 else { throw ParseError(record: text(r)) }
                var path = Array(r.dropFirst(2))
                let dir = path.last == UInt8(ascii: "/")
                if dir { path.removeLast() }
                status.entries.append(StatusEntry(path: path, kind: first == UInt8(ascii: "?") ? .untracked : .ignored, isDirectory: dir))
            default:
                throw ParseError(record: text(r))
            }
        }
        return status
    }

    static func parseHeader(_ r: [UInt8], into b: inout BranchInfo) {
        let parts = r.split(separator: UInt8(ascii: " "), maxSplits: 2).map { String(decoding: $0, as: UTF8.self) }
        guard parts.count == 3 else { return }
        let value = parts[2]
        switch parts[1] {
        case "branch.oid": b.oid = value == "(initial)" ? nil : value
        case "branch.head": b.head = value == "(detached)" ? nil : value
        case "branch.upstream": b.upstream = value
        case "branch.ab":
            let ab = value.split(separator: " ")
            guard ab.count == 2, ab[0].hasPrefix("+"), ab[1].hasPrefix("-") else { return }
            b.ahead = Int(ab[0].dropFirst())
            b.behind = Int(ab[1].dropFirst())
        default: break
        }
    }

    /// `n` space-separated fields, then the path (which may hold spaces).
    static func split(_ r: ArraySlice<UInt8>, fields n: Int) -> ([ArraySlice<UInt8>], [UInt8])? {
        let parts = r.split(separator: UInt8(ascii: " "), maxSplits: n, omittingEmptySubsequences: false)
        guard parts.count == n + 1, !parts[n].isEmpty else { return nil }
        return (Array(parts[0..<n]), Array(parts[n]))
    }

    static func text(_ r: ArraySlice<UInt8>) -> String { String(decoding: r, as: UTF8.self) }
}

extension ArraySlice where Element == UInt8 {
    var xy: (UInt8, UInt8)? { count == 2 ? (self[startIndex], self[startIndex + 1]) : nil }
}

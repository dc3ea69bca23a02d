import SyncBadgeProtocol

/// What git says about one path, gathered from every status record that names it.
public struct PathFlags: Sendable, Equatable {
    public var conflict: String?
    public var worktreeModified = false
    public var worktreeDeleted = false
    public var staged = false
    public var untracked = false
    public var ignored = false

    public init() {}
}

/// One repository as git sees it at one moment: the status (of the whole tree, or of some
/// paths), the branch, and the commits not yet pushed. Turns a path into its `Verdict`.
public struct GitView: Sendable, Equatable {
    public var branch: BranchInfo
    public var flags: [[UInt8]: PathFlags] = [:]
    /// Directories git reports ignored as a whole (no trailing slash).
    public var ignoredDirectories: Set<[UInt8]> = []
    /// Directories git reports untracked as a whole even with `--untracked-files=all`: another
    /// repository inside this working tree. Everything below them is untracked.
    public var untrackedDirectories: Set<[UInt8]> = []
    /// Paths changed by commits the upstream lacks, and by how many of them.
    public var unpushed: [[UInt8]: Int]

    public init(status: GitStatus, unpushed: [[UInt8]: Int] = [:]) {
        branch = status.branch
        self.unpushed = unpushed
        for e in status.entries {
            switch e.kind {
            case .changed(let x, let y):
                mark(e.path, index: x, worktree: y)
            case .renamed(let x, let y, let from):
                mark(e.path, index: x, worktree: y)
                // The old name is gone from the index: a staged deletion.
                flags[from, default: PathFlags()].staged = true
            case .unmerged(let xy):
                flags[e.path, default: PathFlags()].conflict = Self.describeConflict(xy)
            case .untracked:
                flags[e.path, default: PathFlags()].untracked = true
                if e.isDirectory { untrackedDirectories.insert(e.path) }
            case .ignored:
                if e.isDirectory { ignoredDirectories.insert(e.path) } else { flags[e.path, default: PathFlags()].ignored = true }
            }
        }
    }

    mutating func mark(_ path: [UInt8], index x: UInt8, worktree y: UInt8) {
        var f = flags[path, default: PathFlags()]
        if x != UInt8(ascii: ".") { f.staged = true }
        if y == UInt8(ascii: "D") { f.worktreeDeleted = true } else if y != UInt8(ascii: ".") { f.worktreeModified = true }
        flags[path] = f
    }

    /// git's own words for the unmerged kinds (`git status` long format).
    public static func describeConflict(_ xy: String) -> String {
        switch xy {
        case "DD": "both deleted"
        case "AU": "added by us"
        case "UD": "deleted by them"
        case "UA": "added by them"
        case "DU": "deleted by us"
        case "AA": "both added"
        case "UU": "both modified"
        default: "unmerged (\(xy))"
        }
    }

    /// A clean tracked file: `synced` when the branch has an upstream, else `pending`, since
    /// nothing is safe anywhere else.
    public var baseline: Verdict { branch.hasUpstream ? .synced : .noUpstream }

    /// The verdict for a path (relative to the top level, "" for the top level itself).
    /// `ancestorIgnored`: a directory above it is ignored as a whole (the caller walks the
    /// tree top-down, so it knows). `gone`: the daemon holds a tombstone for it.
    public func verdict(_ rel: [UInt8], isDirectory: Bool, gone: Bool, ancestorIgnored: Bool) -> Verdict {
        if ancestorIgnored || Self.isGitDirectory(rel) { return .ignored }
        if isDirectory && ignoredDirectories.contains(rel) { return .ignored }
        if let f = flags[rel] {
            if let c = f.conflict { return Verdict(.conflict, c) }
            if f.worktreeDeleted { return Verdict(.pending, "deleted") }
            if f.worktreeModified { return Verdict(.pending, "modified") }
            if f.staged { return Verdict(.pending, "staged") }
            if f.untracked { return Verdict(.pending, "untracked") }
            if f.ignored { return .ignored }
        }
        if let n = unpushed[rel] { return Verdict(.pending, "not pushed: \(n) commit\(n == 1 ? "" : "s")") }
        if !untrackedDirectories.isEmpty {
            var p = rel
            while let slash = p.lastIndex(of: UInt8(ascii: "/")) {
                p.removeSubrange(slash...)
                if untrackedDirectories.contains(p) { return Verdict(.pending, "untracked") }
            }
        }
        if gone {
            // A deleted or moved-away directory leaves one tombstone, for itself: git names the
            // files that were in it.
            if let v = goneDirectory(rel) { return v }
            // A deletion that git no longer reports is done with: the tombstone goes, even
            // without an upstream (there is no file left to keep safe).
            return .synced
        }
        return baseline
    }

    /// What git says of the files below a path that is gone: the first of "deleted", "staged"
    /// and "not pushed" that applies to any of them; nil when it names none.
    func goneDirectory(_ rel: [UInt8]) -> Verdict? {
        let prefix = rel + [UInt8(ascii: "/")]
        var staged = false
        for (path, f) in flags where path.starts(with: prefix) {
            if f.worktreeDeleted { return Verdict(.pending, "deleted") }
            if f.staged { staged = true }
        }
        if staged { return Verdict(.pending, "staged") }
        var most = 0
        for (path, n) in unpushed where path.starts(with: prefix) { most = max(most, n) }
        return most > 0 ? Verdict(.pending, "not pushed: \(most) commit\(most == 1 ? "" : "s")") : nil
    }

    /// `.git` at the top level (a directory, or the file of a linked worktree or submodule).
    public static func isGitDirectory(_ rel: [UInt8]) -> Bool {
        // Called for every entry of every pass: no allocation.
        guard rel.count >= 4, rel[0] == UInt8(ascii: "."), rel[1] == UInt8(ascii: "g"), rel[2] == UInt8(ascii: "i"),
              rel[3] == UInt8(ascii: "t") else { return false }
        return rel.count == 4 || rel[4] == UInt8(ascii: "/")
    }
}

extension StringProtocol {
    var trimmingSpaces: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}

import SyncBadgeProtocol

/// The toolbar's text for a set of repositories: `main ↑2 ↓1` (zero counts left out).
public enum ToolbarText {
    public static func branch(_ b: BranchInfo) -> String {
        var s = b.head ?? "detached at \(b.oid.map { String($0.prefix(7)) } ?? "nothing")"
        if b.oid == nil && b.head != nil { s += " (no commits)" }
        guard b.upstream != nil else { return s + " (no upstream)" }
        guard let ahead = b.ahead, let behind = b.behind else { return s + " (upstream gone)" }
        if ahead > 0 { s += " ↑\(ahead)" }
        if behind > 0 { s += " ↓\(behind)" }
        return s
    }

    /// One repository: its branch alone. Several: each prefixed with its directory's name.
    public static func name(_ repos: [(name: String, branch: BranchInfo?)]) -> String {
        if repos.isEmpty { return "git" }
        if repos.count == 1 { return repos[0].branch.map(branch) ?? "git" }
        return repos.map { "\($0.name): \($0.branch.map(branch) ?? "?")" }.joined(separator: "  ")
    }
}

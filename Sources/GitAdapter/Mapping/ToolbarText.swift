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

extension ToolbarText {
    /// The toolbar item for the working trees followed (by top level, with the branch of their
    /// last full pass): the branches, and a tooltip naming each tree with its upstream.
    public static func item(_ repos: [(top: String, branch: BranchInfo?)]) -> ToolbarItem {
        let named = repos.map { (name: String($0.top.split(separator: "/").last ?? "/"), branch: $0.branch) }
        let tooltip = repos.isEmpty ? "git: no working tree followed"
            : "git: " + repos.map { "\($0.top) (\($0.branch.map(branch) ?? "?")\($0.branch?.upstream.map { ", upstream \($0)" } ?? ""))" }
                .joined(separator: "; ")
        return ToolbarItem(name: name(named), tooltip: tooltip)
    }
}

import SyncBadgeCore

/// The built-in menu items every root offers (PROTOCOL.md, "Built-in menu items": Ignore, Stop
/// ignoring, Show details), as what they read and write, on the tree and a root's ignore
/// settings. No I/O: the hub writes the ignore file (off the loop) and answers.
enum BuiltinActions {
    /// `syncbadge.details`: each entry's state, gen, progress and message; with several
    /// entries, each named by its path.
    static func details(_ nodes: [StateTree.NodeID], tree: inout StateTree) -> String {
        var parts: [String] = []
        for n in nodes {
            let r = tree.record(n)
            let details = "state=\(tree.reportedState(n).name) gen=\(r.gen) progress=\(r.progress.map(String.init) ?? "-") message=\(r.message ?? "-")"
            parts.append(nodes.count > 1 ? "\(PathBytes.display(tree.path(n))): \(details)" : details)
        }
        return parts.joined(separator: "; ")
    }

    /// Whether the root's `.syncbadgeignore` (not the built-in patterns) ignores the entry or
    /// one of its ancestors: what shows `syncbadge.unignore`.
    static func ignoredByFile(_ id: StateTree.NodeID, root: RootRegistry.Root, tree: inout StateTree) -> Bool {
        guard let file = root.ignoreFile else { return false }
        let rules = IgnoreRules(fileContents: file, defaults: false)
        let rel = PathBytes.relativeComponents(tree.path(id), under: root.path) ?? []
        for n in 1...max(1, rel.count) where n <= rel.count {
            let isDir = n < rel.count || tree.record(id).kind == .dir
            if rules.matches(Array(rel.prefix(n)), isDir: isDir) { return true }
        }
        return false
    }

    /// `syncbadge.ignore` (`ignore`) or `syncbadge.unignore`: the root's ignore file as it is to
    /// be written; `ERR bad-request` for a selection holding the root itself.
    static func editedIgnoreFile(_ nodes: [StateTree.NodeID], root: RootRegistry.Root, ignore: Bool,
                                 tree: inout StateTree) -> Result<[UInt8], Err> {
        var rels: [[UInt8]] = []
        var kinds: [[UInt8]: EntryKind] = [:]
        for n in nodes {
            let rel = tree.relativePath(n)
            guard !rel.isEmpty else { return .failure(Err("bad-request", message: "a root cannot ignore itself")) }
            rels.append(rel)
            kinds[rel] = tree.record(n).kind
        }
        let current = root.ignoreFile ?? []
        guard !ignore else { return .success(IgnoreFileEdit.ignore(current, paths: rels)) }
        let defaults = root.ignoreDefaults
        return .success(IgnoreFileEdit.unignore(current, paths: rels) { text, rel in
            IgnoreRules(fileContents: text, defaults: defaults).matches(rel.split(separator: PathBytes.slash), isDir: kinds[rel] == .dir)
        })
    }
}

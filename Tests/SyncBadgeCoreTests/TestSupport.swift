@testable import SyncBadgeCore

/// The UTF-8 bytes of a string.
func b(_ s: String) -> [UInt8] { Array(s.utf8) }

/// Text for byte arrays in failure messages.
func text(_ bytes: [UInt8]) -> String { PathBytes.display(bytes) }

/// A scan of relative paths: a trailing `/` marks a directory. Parents must be listed
/// before their children (as a real scan finds them).
func scan(_ spec: [String]) -> ScanTree {
    var tree = ScanTree()
    var index: [String: Int32] = [:]
    for raw in spec {
        let isDir = raw.hasSuffix("/")
        let rel = isDir ? String(raw.dropLast()) : raw
        let parts = rel.split(separator: "/")
        let parentPath = parts.dropLast().joined(separator: "/")
        let parent: Int32 = parentPath.isEmpty ? -1 : index[parentPath]!
        index[rel] = tree.append(parent: parent, name: b(String(parts.last!)), kind: isDir ? .dir : .file)
    }
    return tree
}

extension StateTree {
    /// The node at a path given as text.
    func id(_ path: String) -> NodeID? { find(b(path)) }

    func state(_ path: String) -> SyncState? { id(path).map { record($0).state } }

    func reported(_ path: String) -> SyncState? { id(path).map { reportedState($0) } }

    /// Sets a node's own state as a provider's `SET` would (internal API).
    mutating func force(_ path: String, _ state: SyncState) {
        let id = find(b(path))!
        var rec = record(id)
        rec.state = state
        update(id, rec)
    }
}

/// Counts built from `(state, n)` pairs.
func counts(_ pairs: [(SyncState, Int)]) -> StateCounts {
    var c = StateCounts()
    for (s, n) in pairs { c[s] += n }
    return c
}


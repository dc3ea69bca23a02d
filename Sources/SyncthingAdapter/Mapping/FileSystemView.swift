/// What the adapter knows of the file system, for paths that may not exist yet.
public protocol FileSystemView {
    func exists(_ path: String) -> Bool
}

extension FileSystemView {
    /// The nearest existing directory above `path`, never above `root`.
    public func nearestExistingAncestor(of path: String, root: String) -> String {
        var p = path
        while p != root, let slash = p.lastIndex(of: "/") {
            p = slash == p.startIndex ? "/" : String(p[..<slash])
            if p == root || exists(p) { return p }
        }
        return root
    }
}

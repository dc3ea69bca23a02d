/// The `STATUS` hot path with no allocation: a lookup that walks the path's components in
/// place, and an `ITEM` line appended to a buffer the caller keeps (PERFORMANCE.md,
/// "Pipelined STATUS"). Each gives exactly what `find` and `view(_:path:).wireLine(head:)` do.
extension StateTree {
    /// The node at `path` (normalised, absolute), tombstones included; nil under no root or
    /// not in the tree. No array of components, no copy of the path.
    public func find(slice path: ArraySlice<UInt8>) -> NodeID? {
        for root in roots {
            let base = root.path
            var i: Int
            if path.count == base.count {
                if path.elementsEqual(base) { return root.node }
                continue
            } else if base.count == 1 {
                i = path.startIndex + 1  // the root is `/`
            } else {
                guard path.count > base.count, path[path.startIndex + base.count] == PathBytes.slash,
                      path[path.startIndex..<(path.startIndex + base.count)].elementsEqual(base) else { continue }
                i = path.startIndex + base.count + 1
            }
            var id = root.node
            while i < path.endIndex {
                var j = i
                while j < path.endIndex && path[j] != PathBytes.slash { j += 1 }
                if j > i {
                    guard let c = child(id, path[i..<j]) else { return nil }
                    id = c
                }
                i = j + 1
            }
            return id
        }
        return nil
    }

    /// Appends node `id`'s `ITEM` line and an LF, at `path` (its decoded bytes).
    public func appendItemLine(_ id: NodeID, path: ArraySlice<UInt8>, head: ArraySlice<UInt8>, into out: inout [UInt8]) {
        let rec = nodes[Int(id)].record
        let state = reportedState(id)
        ItemLine.append(head: head, path: path, state: state, badge: rec.badge ?? state.name, kind: rec.kind,
                        progress: rec.progress, message: rec.message, gen: rec.gen,
                        counts: rec.kind == .dir ? counts(id) : nil, into: &out)
        out.append(UInt8(ascii: "\n"))
    }

    /// Appends the node's name (its last path component) to `out`.
    public func appendName(_ id: NodeID, to out: inout [UInt8]) {
        out.append(contentsOf: nameSlice(id))
    }
}

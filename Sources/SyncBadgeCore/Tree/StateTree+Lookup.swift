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
                if PathBytes.same(path, base[...]) { return root.node }
                continue
            } else if base.count == 1 {
                i = path.startIndex + 1  // the root is `/`
            } else {
                guard path.count > base.count, path[path.startIndex + base.count] == PathBytes.slash,
                      PathBytes.same(path[path.startIndex..<(path.startIndex + base.count)], base[...]) else { continue }
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

    /// Appends node `id`'s `ITEM` line and an LF, at `path` (its decoded bytes; `pathIsPlain`:
    /// printable ASCII without `%`, its own encoding).
    public func appendItemLine(_ id: NodeID, path: ArraySlice<UInt8>, pathIsPlain: Bool = false,
                               head: ArraySlice<UInt8>, into out: inout [UInt8]) {
        let i = Int(id)
        let kind = nodes[i].record.kind
        let state = reportedState(id)
        ItemLine.append(head: head, path: path, pathIsPlain: pathIsPlain, state: state,
                        badge: nodes[i].record.badge ?? state.name, kind: kind,
                        progress: nodes[i].record.progress, message: nodes[i].record.message, gen: nodes[i].record.gen,
                        counts: kind == .dir ? counts(id) : nil, into: &out)
        out.append(UInt8(ascii: "\n"))
    }

    /// The `ITEM` lines of a plain `STATUS` (`line` without its LF: `<tag> STATUS <path>...`,
    /// the paths from `fieldsFrom`), appended to `out`: false, with `out` to be thrown away,
    /// when a field needs the general way (not a `PathBytes.plainPath`, or not in the tree).
    /// `found` is scratch space the caller keeps.
    ///
    /// `mutating` although it changes nothing: on a class's stored property (the hub's
    /// tree) a mutating call works on the tree in place, where a non-mutating one is handed a
    /// copy, a retain and a release of each of the tree's arrays per call (PERFORMANCE.md,
    /// "Pipelined STATUS").
    public mutating func appendPlainStatus(_ line: ArraySlice<UInt8>, tag: Range<Int>, fieldsFrom: Int,
                                           found: inout [(id: NodeID, start: Int, end: Int, ascii: Bool)],
                                           into out: inout [UInt8]) -> Bool {
        found.removeAll(keepingCapacity: true)
        var i = fieldsFrom
        while i <= line.endIndex {
            var j = i
            while j < line.endIndex && line[j] != UInt8(ascii: " ") { j += 1 }
            let field = line[i..<j]
            guard let form = PathBytes.plainPath(field), let id = find(slice: field) else { return false }
            found.append((id, i, j, form == .ascii))
            i = j + 1
        }
        let head = line[tag]
        for f in found {
            appendItemLine(f.id, path: line[f.start..<f.end], pathIsPlain: f.ascii, head: head, into: &out)
        }
        return true
    }

    /// Appends the node's name (its last path component) to `out`.
    public func appendName(_ id: NodeID, to out: inout [UInt8]) {
        out.append(contentsOf: nameSlice(id))
    }
}

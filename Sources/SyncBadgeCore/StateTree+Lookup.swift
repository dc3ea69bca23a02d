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

    /// Appends `<head> ITEM <path> <state> badge=… kind=… [progress=…] [message=…] gen=…
    /// [counts=…]` and an LF for node `id` at `path` (its decoded bytes).
    public func appendItemLine(_ id: NodeID, path: ArraySlice<UInt8>, head: ArraySlice<UInt8>, into out: inout [UInt8]) {
        let n = nodes[Int(id)]
        let rec = n.record
        let state = reportedState(id)
        out.append(contentsOf: head)
        Self.append(" ITEM ", &out)
        PercentEncoding.encode(path, into: &out)
        out.append(UInt8(ascii: " "))
        Self.append(state.name, &out)
        Self.append(" badge=", &out)
        if let badge = rec.badge { Self.appendEncoded(badge, &out) } else { Self.append(state.name, &out) }
        Self.append(" kind=", &out)
        Self.append(rec.kind.name, &out)
        if let progress = rec.progress {
            Self.append(" progress=", &out)
            Self.appendDecimal(UInt64(progress), &out)
        }
        if let message = rec.message {
            Self.append(" message=", &out)
            Self.appendEncoded(message, &out)
        }
        Self.append(" gen=", &out)
        Self.appendDecimal(rec.gen, &out)
        if rec.kind == .dir {
            Self.append(" counts=", &out)
            let c = counts(id)
            var first = true
            for s in SyncState.allCases where c[s] != 0 {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                Self.append(s.name, &out)
                out.append(UInt8(ascii: ":"))
                Self.appendDecimal(UInt64(c[s]), &out)
            }
        }
        out.append(UInt8(ascii: "\n"))
    }

    /// Appends the node's name (its last path component) to `out`.
    public func appendName(_ id: NodeID, to out: inout [UInt8]) {
        out.append(contentsOf: nameSlice(id))
    }

    @inline(__always)
    static func append(_ s: String, _ out: inout [UInt8]) {
        var s = s
        s.withUTF8 { out.append(contentsOf: $0) }
    }

    @inline(__always)
    static func appendEncoded(_ s: String, _ out: inout [UInt8]) {
        var s = s
        s.withUTF8 { PercentEncoding.encode($0, into: &out) }
    }

    static func appendDecimal(_ v: UInt64, _ out: inout [UInt8]) {
        if v < 10 {
            out.append(UInt8(ascii: "0") + UInt8(v))
            return
        }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var n = 0
        var v = v
        withUnsafeMutableBytes(of: &digits) { d in
            while v > 0 {
                d[n] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
                n += 1
            }
            for k in stride(from: n - 1, through: 0, by: -1) { out.append(d[k]) }
        }
    }
}

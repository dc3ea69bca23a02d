/// Absolute file paths as raw bytes: Linux names are any bytes but `/` and NUL, not text.
public enum PathBytes {
    // Inlinable, not a stored `static let`: other modules reach a stored one through an
    // addressor call, and the state tree's lookup made one per path component, which also
    // made it retain the arrays it was reading around each call (two retains and releases
    // a pipelined STATUS line; PERFORMANCE.md, "Session 13").
    @inlinable public static var slash: UInt8 { UInt8(ascii: "/") }

    /// Whether two runs of bytes are the same, eight at a time over their storage. The
    /// generic `elementsEqual` steps an iterator a byte at a time with a bounds check each:
    /// comparing a root's path and the names on the way took 9 % of a pipelined STATUS
    /// (PERFORMANCE.md, "Session 17").
    public static func same(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { pa in
            b.withUnsafeBytes { pb in
                let n = pa.count
                var i = 0
                while i + 8 <= n {
                    guard pa.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                        == pb.loadUnaligned(fromByteOffset: i, as: UInt64.self) else { return false }
                    i += 8
                }
                while i < n {
                    guard pa[i] == pb[i] else { return false }
                    i += 1
                }
                return true
            }
        }
    }

    /// True for an absolute, normalised path: no empty, `.` or `..` component and no trailing
    /// `/` other than the root itself (PROTOCOL.md, `bad-path`).
    public static func isNormalizedAbsolute(_ p: [UInt8]) -> Bool {
        isNormalizedAbsolute(p[...])
    }

    /// The same for a slice (of a received line, say), without copying it.
    public static func isNormalizedAbsolute(_ p: ArraySlice<UInt8>) -> Bool {
        guard p.first == slash else { return false }
        if p.count == 1 { return true }
        if p.last == slash { return false }
        if p.contains(0) { return false }
        var start = p.startIndex + 1
        for i in (p.startIndex + 1)...p.endIndex where i == p.endIndex || p[i] == slash {
            let len = i - start
            if len == 0 { return false }
            if len == 1 && p[start] == UInt8(ascii: ".") { return false }
            if len == 2 && p[start] == UInt8(ascii: ".") && p[start + 1] == UInt8(ascii: ".") { return false }
            start = i + 1
        }
        return true
    }

    /// What a request's field is on the daemon's `STATUS` path (PERFORMANCE.md, "Pipelined
    /// STATUS"): nil when it needs the general way (not a normalised absolute path, or with a
    /// byte an encoder escapes: a control, a space, `%`, DEL); `.ascii` when it is also its own
    /// encoding, so an answer can repeat it as it came.
    public enum PlainPath { case ascii, nonASCII }

    /// One pass over the field, for `PlainPath`.
    public static func plainPath(_ field: ArraySlice<UInt8>) -> PlainPath? {
        field.withUnsafeBufferPointer { f in
            guard f.first == slash else { return nil }
            var ascii = true
            var componentStart = 1
            var i = 1
            while true {
                if i == f.count || f[i] == slash {
                    let length = i - componentStart
                    // An empty component: `//`, or a trailing `/` (the root `/` itself is fine).
                    if length == 0 { return f.count == 1 ? .ascii : nil }
                    if length <= 2 && f[componentStart] == dot && (length == 1 || f[componentStart + 1] == dot) { return nil }
                    if i == f.count { break }
                    componentStart = i + 1
                } else {
                    let b = f[i]
                    if b <= 0x20 || b == 0x25 || b == 0x7F { return nil }
                    if b >= 0x80 { ascii = false }
                }
                i += 1
            }
            return ascii ? .ascii : .nonASCII
        }
    }

    private static let dot = UInt8(ascii: ".")

    /// Components of a normalised absolute path (`/` has none).
    public static func components(_ p: [UInt8]) -> [ArraySlice<UInt8>] {
        p.split(separator: slash, omittingEmptySubsequences: true)
    }

    /// If `path` is `base` or below it, the components of `path` after `base`.
    public static func relativeComponents(_ path: [UInt8], under base: [UInt8]) -> [ArraySlice<UInt8>]? {
        if path == base { return [] }
        if base == [slash] { return components(path) }
        guard path.count > base.count, path[base.count] == slash, path.starts(with: base) else { return nil }
        return path[(base.count + 1)...].split(separator: slash, omittingEmptySubsequences: true)
    }

    /// True when `path` is `base` or lies below it: `relativeComponents(path, under: base) != nil`
    /// without splitting the components out (the daemon asks it of every root for a path).
    public static func isAtOrBelow(_ path: [UInt8], _ base: [UInt8]) -> Bool {
        if base.count == 1 && base[0] == slash { return true }
        if path.count == base.count { return path == base }
        return path.count > base.count && path[base.count] == slash && path.starts(with: base)
    }

    /// True when `a` is `b`, or one lies below the other.
    public static func overlaps(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        isAtOrBelow(a, b) || isAtOrBelow(b, a)
    }

    // Inlinable: the state tree (in Core) builds paths with it, and a generic call across the
    // module boundary would go unspecialized.
    @inlinable
    public static func join(_ base: [UInt8], _ name: some Collection<UInt8>) -> [UInt8] {
        var out = base
        if out.last != slash { out.append(slash) }
        out.append(contentsOf: name)
        return out
    }

    /// The parent of a normalised absolute path (`/` for top-level names and for `/`).
    public static func parent(_ p: [UInt8]) -> [UInt8] {
        guard let i = p.lastIndex(of: slash), i > 0 else { return [slash] }
        return Array(p[..<i])
    }

    public static func lastComponent(_ p: [UInt8]) -> ArraySlice<UInt8> {
        guard let i = p.lastIndex(of: slash) else { return p[...] }
        return p[(i + 1)...]
    }

    /// Resolves `path` (absolute or relative to `cwd`) lexically into a normalised absolute path.
    /// `..` is taken lexically, like `realpath -s`: the daemon never follows links.
    public static func absolute(_ path: [UInt8], cwd: [UInt8]) -> [UInt8] {
        let full = path.first == slash ? path : cwd + [slash] + path
        var parts: [ArraySlice<UInt8>] = []
        for c in full.split(separator: slash, omittingEmptySubsequences: true) {
            if c.elementsEqual([UInt8(ascii: ".")]) { continue }
            if c.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")]) {
                if !parts.isEmpty { parts.removeLast() }
                continue
            }
            parts.append(c)
        }
        if parts.isEmpty { return [slash] }
        var out: [UInt8] = []
        for c in parts {
            out.append(slash)
            out.append(contentsOf: c)
        }
        return out
    }

    /// A path for humans: valid UTF-8 shown as text, other bytes as `\xNN`.
    public static func display(_ p: some Collection<UInt8>) -> String {
        if let s = String(validating: Array(p), as: UTF8.self) { return s }
        var out = ""
        let bytes = Array(p)
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b < 0x80 {
                out.unicodeScalars.append(Unicode.Scalar(b))
                i += 1
            } else {
                let n = PercentEncoding.validSequenceLength(bytes, at: i)
                if n == 0 {
                    out += "\\x" + String(b, radix: 16, uppercase: true)
                    i += 1
                } else {
                    out += String(decoding: bytes[i..<(i + n)], as: UTF8.self)
                    i += n
                }
            }
        }
        return out
    }
}

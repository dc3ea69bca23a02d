/// The ignore rules of one root: built-in defaults, then `<root>/.syncbadgeignore` in gitignore
/// syntax. The last matching rule wins; `!` re-includes. Pure: the caller reads the file.
public struct IgnoreRules: Sendable, Equatable {
    public static let fileName: [UInt8] = Array(".syncbadgeignore".utf8)
    /// Editor swap and backup files.
    public static let defaultPatterns = ["*.swp", "*~", ".#*"]

    struct Rule: Sendable, Equatable {
        var segments: [[UInt8]]
        var negated: Bool
        var dirOnly: Bool
        /// Anchored rules match the whole path from the root; the others match the last name.
        var anchored: Bool
    }

    var rules: [Rule] = []

    public static let none = IgnoreRules()

    public init() {}

    public init(fileContents: [UInt8]?, defaults: Bool) {
        if defaults {
            for p in Self.defaultPatterns { Self.parseLine(Array(p.utf8)[...]).map { rules.append($0) } }
        }
        if let text = fileContents {
            for line in text.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
                if let r = Self.parseLine(line) { rules.append(r) }
            }
        }
    }

    public var isEmpty: Bool { rules.isEmpty }

    /// Adds a rule ignoring one path below the root (components), e.g. the daemon's own state
    /// directory when it lies inside a root. It comes last, so no `!` rule re-includes it.
    public mutating func ignoreExactly(_ components: [[UInt8]]) {
        guard !components.isEmpty else { return }
        let escaped = components.map { c in c.flatMap { b -> [UInt8] in
            [UInt8(ascii: "*"), UInt8(ascii: "?"), UInt8(ascii: "["), UInt8(ascii: "\\")].contains(b) ? [UInt8(ascii: "\\"), b] : [b]
        } }
        rules.append(Rule(segments: escaped, negated: false, dirOnly: false, anchored: true))
    }

    static func parseLine(_ raw: ArraySlice<UInt8>) -> Rule? {
        var line = Array(raw)
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        // Trailing spaces are dropped unless escaped with a backslash.
        while line.last == UInt8(ascii: " "), !(line.count >= 2 && line[line.count - 2] == UInt8(ascii: "\\")) {
            line.removeLast()
        }
        guard let first = line.first, first != UInt8(ascii: "#") else { return nil }
        var negated = false
        if first == UInt8(ascii: "!") {
            negated = true
            line.removeFirst()
        } else if first == UInt8(ascii: "\\"), line.count > 1, line[1] == UInt8(ascii: "#") || line[1] == UInt8(ascii: "!") {
            line.removeFirst()
        }
        var dirOnly = false
        if line.last == PathBytes.slash {
            dirOnly = true
            while line.last == PathBytes.slash { line.removeLast() }
        }
        guard !line.isEmpty else { return nil }
        var anchored = line.contains(PathBytes.slash)
        if line.first == PathBytes.slash {
            anchored = true
            line.removeFirst()
        }
        let segments = line.split(separator: PathBytes.slash, omittingEmptySubsequences: true).map(Array.init)
        guard !segments.isEmpty else { return nil }
        return Rule(segments: segments, negated: negated, dirOnly: dirOnly, anchored: anchored)
    }

    /// Whether the entry at `path` (components below the root) is ignored by its own name.
    /// Ancestors are the caller's business: below an ignored directory everything is ignored.
    public func matches(_ path: [ArraySlice<UInt8>], isDir: Bool) -> Bool {
        guard let last = path.last else { return false }
        return matches(name: last, isDir: isDir) { path }
    }

    /// The same for an entry named `name`, whose path is only built (by `path`) when an
    /// anchored rule needs it: most rules match names alone, and registering a big tree asks
    /// this once per entry.
    public func matches(name last: ArraySlice<UInt8>, isDir: Bool, path: () -> [ArraySlice<UInt8>]) -> Bool {
        var ignored = false
        var components: [ArraySlice<UInt8>]? = nil
        for rule in rules {
            if rule.dirOnly && !isDir { continue }
            if rule.negated != ignored { continue }  // cannot change the outcome
            let hit: Bool
            if rule.anchored {
                if components == nil { components = path() }
                hit = Self.matchSegments(rule.segments[...], components![...])
            } else {
                hit = rule.segments.count == 1 && Self.glob(rule.segments[0][...], last)
            }
            if hit { ignored = !rule.negated }
        }
        return ignored
    }

    static let doubleStar: [UInt8] = [UInt8(ascii: "*"), UInt8(ascii: "*")]

    static func matchSegments(_ pattern: ArraySlice<[UInt8]>, _ path: ArraySlice<ArraySlice<UInt8>>) -> Bool {
        guard let p = pattern.first else { return path.isEmpty }
        if p == doubleStar {
            let rest = pattern.dropFirst()
            // A trailing `**` matches everything inside, not the directory itself.
            if rest.isEmpty { return !path.isEmpty }
            var tail = path
            while true {
                if matchSegments(rest, tail) { return true }
                if tail.isEmpty { return false }
                tail = tail.dropFirst()
            }
        }
        guard let s = path.first, glob(p[...], s) else { return false }
        return matchSegments(pattern.dropFirst(), path.dropFirst())
    }

    /// fnmatch for one name: `*`, `?`, `[...]` (with `!`/`^` negation and ranges) and `\` escapes.
    static func glob(_ p: ArraySlice<UInt8>, _ s: ArraySlice<UInt8>) -> Bool {
        var pi = p.startIndex, si = s.startIndex
        var starP: Int? = nil, starS = 0
        while si < s.endIndex {
            if pi < p.endIndex {
                let c = p[pi]
                if c == UInt8(ascii: "*") {
                    while pi < p.endIndex && p[pi] == UInt8(ascii: "*") { pi += 1 }
                    starP = pi
                    starS = si
                    continue
                }
                if let next = matchOne(p, pi, s[si]) {
                    pi = next
                    si += 1
                    continue
                }
            }
            guard let sp = starP else { return false }
            starS += 1
            si = starS
            pi = sp
        }
        while pi < p.endIndex && p[pi] == UInt8(ascii: "*") { pi += 1 }
        return pi == p.endIndex
    }

    /// Matches one byte against the pattern item at `pi`; the index after the item, or nil.
    static func matchOne(_ p: ArraySlice<UInt8>, _ pi: Int, _ b: UInt8) -> Int? {
        let c = p[pi]
        switch c {
        case UInt8(ascii: "?"):
            return pi + 1
        case UInt8(ascii: "\\") where pi + 1 < p.endIndex:
            return p[pi + 1] == b ? pi + 2 : nil
        case UInt8(ascii: "["):
            var i = pi + 1
            var negate = false
            if i < p.endIndex && (p[i] == UInt8(ascii: "!") || p[i] == UInt8(ascii: "^")) {
                negate = true
                i += 1
            }
            var hit = false
            var first = true
            while i < p.endIndex && (first || p[i] != UInt8(ascii: "]")) {
                first = false
                var lo = p[i]
                if lo == UInt8(ascii: "\\") && i + 1 < p.endIndex {
                    i += 1
                    lo = p[i]
                }
                var hi = lo
                if i + 2 < p.endIndex && p[i + 1] == UInt8(ascii: "-") && p[i + 2] != UInt8(ascii: "]") {
                    hi = p[i + 2]
                    i += 2
                }
                if b >= lo && b <= hi { hit = true }
                i += 1
            }
            // An unclosed `[` is a literal.
            guard i < p.endIndex else { return b == c ? pi + 1 : nil }
            return hit != negate ? i + 1 : nil
        default:
            return c == b ? pi + 1 : nil
        }
    }
}

import Foundation

/// Syncthing's `.stignore` patterns, as `GET /rest/db/ignores` returns them expanded
/// (`#include` resolved): the first pattern that matches a path decides, `!` un-ignores,
/// `(?i)` is case-insensitive, `(?d)` (may delete) does not change what is ignored, `//` is a
/// comment. A pattern with a leading `/` matches from the folder root; any other matches at
/// any depth; a match on a directory covers everything in it. `*` and `?` stay within one
/// path component, `**` crosses them. Syncthing's own files (`.stfolder`, `.stversions`,
/// `.stignore`, `.syncthing.*.tmp`, `~syncthing~*.tmp`) are always ignored.
public struct IgnorePatterns: Sendable, Equatable {
    struct Rule: Sendable, Equatable {
        var globs: [[UInt8]]
        var negated: Bool
        var caseInsensitive: Bool
    }
    var rules: [Rule] = []

    public init(lines: [String]) {
        for raw in lines {
            var line = raw.trimmingWhitespace()
            if line.isEmpty || line.hasPrefix("//") || line.hasPrefix("#include") { continue }
            var negated = false, folded = false
            while true {
                if line.hasPrefix("!") { negated = true; line.removeFirst() }
                else if line.hasPrefix("(?i)") { folded = true; line.removeFirst(4) }
                else if line.hasPrefix("(?d)") { line.removeFirst(4) }
                else { break }
            }
            if line.isEmpty { continue }
            var globs: [String]
            if line.hasPrefix("/") {
                let p = String(line.dropFirst())
                globs = [p, p + "/**"]
            } else if line.hasPrefix("**/") {
                globs = [line, line + "/**", String(line.dropFirst(3)), String(line.dropFirst(3)) + "/**"]
            } else {
                globs = [line, line + "/**", "**/" + line, "**/" + line + "/**"]
            }
            if folded { globs = globs.map { $0.lowercased() } }
            rules.append(Rule(globs: globs.map { Array($0.utf8) }, negated: negated, caseInsensitive: folded))
        }
    }

    /// Whether Syncthing ignores this folder-relative path (`a/b.txt`, no leading slash).
    public func isIgnored(_ relative: String) -> Bool {
        if Self.isSyncthingInternal(relative) { return true }
        let bytes = Array(relative.utf8)
        let lower = Array(relative.lowercased().utf8)
        for rule in rules {
            let subject = rule.caseInsensitive ? lower : bytes
            if rule.globs.contains(where: { Self.glob($0[...], subject[...]) }) { return !rule.negated }
        }
        return false
    }

    public static func isSyncthingInternal(_ relative: String) -> Bool {
        let first = relative.split(separator: "/", maxSplits: 1).first.map(String.init) ?? relative
        // .stignore is this device's own: Syncthing never sends it.
        if first == ".stfolder" || first == ".stversions" || relative == ".stignore" { return true }
        let name = relative.split(separator: "/").last.map(String.init) ?? relative
        return (name.hasPrefix(".syncthing.") || name.hasPrefix("~syncthing~")) && name.hasSuffix(".tmp")
    }

    /// Glob match with `*` and `?` inside one component, `**` across components, `\` escaping.
    static func glob(_ p: ArraySlice<UInt8>, _ s: ArraySlice<UInt8>) -> Bool {
        let slash = UInt8(ascii: "/"), star = UInt8(ascii: "*")
        guard let c = p.first else { return s.isEmpty }
        if c == star {
            let doubled = p.dropFirst().first == star
            let rest = p.dropFirst(doubled ? 2 : 1)
            var i = s.startIndex
            while true {
                if glob(rest, s[i...]) { return true }
                guard i < s.endIndex, doubled || s[i] != slash else { return false }
                i += 1
            }
        }
        guard let h = s.first else { return false }
        if c == UInt8(ascii: "?") { return h != slash && glob(p.dropFirst(), s.dropFirst()) }
        if c == UInt8(ascii: "\\"), let e = p.dropFirst().first { return h == e && glob(p.dropFirst(2), s.dropFirst()) }
        return h == c && glob(p.dropFirst(), s.dropFirst())
    }
}

/// Editing a root's `.syncbadgeignore` for the built-in actions. Pure: text in, text out.
public enum IgnoreFileEdit {
    /// The anchored pattern naming exactly one path below the root (glob characters escaped).
    public static func pattern(for relative: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [PathBytes.slash]
        for b in relative {
            if [UInt8(ascii: "*"), UInt8(ascii: "?"), UInt8(ascii: "["), UInt8(ascii: "\\"), UInt8(ascii: "!"), UInt8(ascii: "#")].contains(b) {
                out.append(UInt8(ascii: "\\"))
            }
            out.append(b)
        }
        return out
    }

    /// Adds a line ignoring each path (unless the file already has it).
    public static func ignore(_ text: [UInt8], paths: [[UInt8]]) -> [UInt8] {
        var lines = text.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map(Array.init)
        if lines.last == [] { lines.removeLast() }
        for p in paths {
            let pat = pattern(for: p)
            lines.removeAll { $0 == [UInt8(ascii: "!")] + pat }
            if !lines.contains(pat) { lines.append(pat) }
        }
        return lines.flatMap { $0 + [UInt8(ascii: "\n")] }
    }

    /// Removes the lines that name exactly these paths; where other rules still ignore one,
    /// `stillIgnored` says so and a `!` line re-includes it.
    public static func unignore(_ text: [UInt8], paths: [[UInt8]], stillIgnored: ([UInt8], [UInt8]) -> Bool) -> [UInt8] {
        var lines = text.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map(Array.init)
        if lines.last == [] { lines.removeLast() }
        for p in paths {
            let pat = pattern(for: p)
            lines.removeAll { $0 == pat }
            let candidate = lines.flatMap { $0 + [UInt8(ascii: "\n")] }
            if stillIgnored(candidate, p) { lines.append([UInt8(ascii: "!")] + pat) }
        }
        return lines.flatMap { $0 + [UInt8(ascii: "\n")] }
    }
}

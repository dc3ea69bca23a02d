public enum BadgeManifestError: Error, Equatable, CustomStringConvertible {
    case malformedLine(Int, String)
    case missing([String])

    public var description: String {
        switch self {
        case .malformedLine(let n, let why): "badge manifest line \(n): \(why)"
        case .missing(let ids): "badge manifest lacks badges for: \(ids.joined(separator: ", "))"
        }
    }
}

/// The badge set manifest `badges.tsv`: `#` comments, then one badge a line,
/// `id<TAB>label<TAB>glyph<TAB>ascii<TAB>color<TAB>image` (image relative to the manifest).
public enum BadgeManifest {
    /// Every state has a badge of the same id, and `outside` is for paths under no root.
    public static let requiredIDs = SyncState.allCases.map(\.name) + ["outside"]

    public static func parse(_ text: String, directory: [UInt8]) throws -> [Badge] {
        var badges: [Badge] = []
        // Split on scalars: "\r\n" is one Character, so a Character split would miss CRLF lines.
        for (n, rawLine) in text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var scalars = rawLine
            if scalars.last == "\r" { scalars = scalars.dropLast() }
            let line = Substring(String(String.UnicodeScalarView(scalars)))
            if line.isEmpty || line.hasPrefix("#") { continue }
            let cols = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard cols.count == 6 else { throw BadgeManifestError.malformedLine(n + 1, "expected 6 tab-separated columns, found \(cols.count)") }
            guard WireParser.isID(Array(cols[0].utf8)) else { throw BadgeManifestError.malformedLine(n + 1, "bad badge id '\(cols[0])'") }
            guard cols[1...4].allSatisfy({ !$0.isEmpty }) else { throw BadgeManifestError.malformedLine(n + 1, "empty column") }
            let image = cols[5].isEmpty ? nil : (cols[5].hasPrefix("/") ? Array(cols[5].utf8) : PathBytes.join(directory, Array(cols[5].utf8)))
            badges.append(Badge(id: cols[0], label: cols[1], glyph: cols[2], ascii: cols[3], color: cols[4], image: image))
        }
        let missing = requiredIDs.filter { id in !badges.contains { $0.id == id } }
        guard missing.isEmpty else { throw BadgeManifestError.missing(missing) }
        return badges
    }
}

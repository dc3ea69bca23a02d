/// One badge: what `BADGES` serves and clients draw.
public struct Badge: Sendable, Equatable {
    public var id: String
    public var label: String
    public var glyph: String
    public var ascii: String
    /// An ANSI SGR parameter string, as in `ESC[<color>m` (e.g. `32`, `1;31`).
    public var color: String
    /// Absolute path of the artwork, if any.
    public var image: [UInt8]?

    public init(id: String, label: String, glyph: String, ascii: String, color: String, image: [UInt8]? = nil) {
        self.id = id
        self.label = label
        self.glyph = glyph
        self.ascii = ascii
        self.color = color
        self.image = image
    }

    /// The `BADGE` data line's fields after the tag.
    public func wireLine(tag: String) -> WireLine {
        var line = WireLine(tag)
        line.word("BADGE")
        line.word(id)
        line.option("label", label)
        line.option("glyph", glyph)
        line.option("ascii", ascii)
        line.option("color", color)
        if let image { line.option("image", image) }
        return line
    }
}

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

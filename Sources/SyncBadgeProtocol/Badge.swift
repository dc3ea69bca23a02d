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

    /// Reads a `BADGE` line; nil for another kind, or one without its id.
    public init?(_ m: WireMessage) {
        guard m.messageKind == .badge, let id = m.fields.first, !id.isPath else { return nil }
        self.init(id: id.string, label: m.option("label") ?? "", glyph: m.option("glyph") ?? "?", ascii: m.option("ascii") ?? "?",
                  color: m.option("color") ?? "0", image: m.options["image"])
    }

    /// The `BADGE` data line's fields after the tag.
    public func wireLine(tag: String) -> WireLine {
        var line = WireLine(tag)
        line.word(MessageKind.badge.rawValue)
        line.word(id)
        line.option("label", label)
        line.option("glyph", glyph)
        line.option("ascii", ascii)
        line.option("color", color)
        if let image { line.option("image", image) }
        return line
    }
}

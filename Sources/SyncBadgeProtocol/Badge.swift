/// One badge: what `BADGES` serves and clients draw.
public struct Badge: MessageLine {
    public static let kind = MessageKind.badge

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

    /// `DEFINE-BADGE <id> label= glyph= ascii= color= [image=]`: a provider's badge.
    public var definition: Request {
        var f: [RequestField] = [.word(id), .option("label", label), .option("glyph", glyph), .option("ascii", ascii), .option("color", color)]
        if let image { f.append(.option("image", image)) }
        return Request(.defineBadge, f)
    }

    /// Reads `DEFINE-BADGE`; `ERR bad-request` for a missing id or field, `ERR bad-path` for an
    /// image that is not an absolute normalised path.
    public init(definition req: WireRequest) throws(Err) {
        guard req.fields.count == 1, let id = req.fields.first?.bytes, WireParser.isID(id) else {
            throw Err("bad-request", message: "usage: DEFINE-BADGE <id> label= glyph= ascii= color= [image=]")
        }
        guard let label = req.option("label"), let glyph = req.option("glyph"), let ascii = req.option("ascii"),
              let color = req.option("color"), !label.isEmpty, !glyph.isEmpty, !ascii.isEmpty, !color.isEmpty
        else { throw Err("bad-request", message: "label, glyph, ascii and color are required") }
        let image = req.options["image"]
        if let image, !PathBytes.isNormalizedAbsolute(image) { throw Err("bad-path", message: image) }
        self.init(id: String(decoding: id, as: UTF8.self), label: label, glyph: glyph, ascii: ascii, color: color, image: image)
    }

    /// The `BADGE` data line, or the `* BADGE` push.
    public func wireLine(head: String) -> WireLine {
        var line = Self.start(head)
        line.word(id)
        line.option("label", label)
        line.option("glyph", glyph)
        line.option("ascii", ascii)
        line.option("color", color)
        if let image { line.option("image", image) }
        return line
    }
}

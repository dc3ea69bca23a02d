/// A provider's toolbar item: what it defines (`DEFINE-TOOLBAR name= tooltip= [image=]`) and,
/// with the provider's name, what `TOOLBAR` shows (`ProviderToolbar`). The one toolbar type.
public struct ToolbarItem: Sendable, Equatable {
    public var name: String
    public var tooltip: String
    public var image: [UInt8]?

    public init(name: String, tooltip: String, image: [UInt8]? = nil) {
        self.name = name
        self.tooltip = tooltip
        self.image = image
    }

    public var request: Request {
        var f: [RequestField] = [.option("name", name), .option("tooltip", tooltip)]
        if let image { f.append(.option("image", image)) }
        return Request(.defineToolbar, f)
    }

    public static let usage = "usage: DEFINE-TOOLBAR name=<text> tooltip=<text> [image=<path>]"

    /// Reads `DEFINE-TOOLBAR`; `ERR bad-request` without a name or tooltip, `ERR bad-path` for an
    /// image that is not an absolute normalised path.
    public init(_ req: WireRequest) throws(Err) {
        guard let name = req.option("name"), let tooltip = req.option("tooltip"), !name.isEmpty else {
            throw Err("bad-request", message: Self.usage)
        }
        let image = req.options["image"]
        if let image, !PathBytes.isNormalizedAbsolute(image) { throw Err("bad-path", message: image) }
        self.init(name: name, tooltip: tooltip, image: image)
    }
}

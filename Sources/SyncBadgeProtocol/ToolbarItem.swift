/// A provider's toolbar item (`DEFINE-TOOLBAR`).
public struct ToolbarItem: Sendable, Equatable {
    public var name: String
    public var tooltip: String
    public var image: [UInt8]?

    public init(name: String, tooltip: String, image: [UInt8]? = nil) {
        self.name = name
        self.tooltip = tooltip
        self.image = image
    }
}

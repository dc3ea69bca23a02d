/// One `TOOLBAR` line: a provider's toolbar item (`TOOLBAR name= tooltip= provider= [image=]`),
/// or, pushed, its removal (`* TOOLBAR provider=<name> removed`).
public struct ProviderToolbar: MessageLine {
    public static let kind = MessageKind.toolbar

    /// The provider's name.
    public var provider: String
    /// Nil once the provider's item is gone.
    public var item: ToolbarItem?

    public static let removedWord = "removed"

    public init(provider: String, item: ToolbarItem?) {
        self.provider = provider
        self.item = item
    }

    public init?(_ m: WireMessage) {
        guard m.messageKind == .toolbar, let provider = m.option("provider") else { return nil }
        self.provider = provider
        if m.fields.contains(where: { $0.string == Self.removedWord }) {
            item = nil
        } else {
            guard let name = m.option("name") else { return nil }
            item = ToolbarItem(name: name, tooltip: m.option("tooltip") ?? "", image: m.options["image"])
        }
    }

    public func wireLine(head: String) -> WireLine {
        var line = Self.start(head)
        guard let item else {
            line.option("provider", provider)
            line.word(Self.removedWord)
            return line
        }
        line.option("name", item.name)
        line.option("tooltip", item.tooltip)
        line.option("provider", provider)
        if let image = item.image { line.option("image", image) }
        return line
    }
}

/// A context-menu item a provider defines (PROTOCOL.md, `DEFINE-MENU`).
public struct MenuItem: Sendable, Equatable {
    public static let kinds: Set<String> = ["items", "container", "sidebar", "toolbar"]

    public var id: String
    public var title: String
    /// Shown only for selections whose states are all listed; nil: always.
    public var states: Set<String>?
    public var enabled: Bool

    public init(id: String, title: String, states: Set<String>? = nil, enabled: Bool = true) {
        self.id = id
        self.title = title
        self.states = states
        self.enabled = enabled
    }

    /// Whether the item applies to a selection with these (reported) states.
    public func matches(_ selection: [String]) -> Bool {
        guard let states else { return true }
        return selection.allSatisfy { states.contains($0) }
    }

    /// Reads a `MENUITEM` line (the answer to `MENU`, which says no states).
    public init?(_ m: WireMessage) {
        guard m.messageKind == .menuItem, let id = m.fields.first, !id.isPath else { return nil }
        self.init(id: id.string, title: m.option("title") ?? "", enabled: m.option("enabled") != "0")
    }

    public func wireLine(tag: String) -> WireLine {
        var line = WireLine(tag)
        line.word(MessageKind.menuItem.rawValue)
        line.word(id)
        line.option("title", title)
        line.word(enabled ? "enabled=1" : "enabled=0")
        return line
    }
}

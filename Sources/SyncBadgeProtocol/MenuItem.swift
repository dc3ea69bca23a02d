/// A context-menu item (Finder Sync's): what a provider defines (`DEFINE-MENU`, as a
/// `MenuDefinition`) and what `MENU` answers (`MENUITEM`), the one menu type of the daemon and
/// every client.
public struct MenuItem: MessageLine {
    public static let kind = MessageKind.menuItem
    /// The menus an item may be in: selected items, a directory's background, the sidebar, the
    /// toolbar.
    public static let kinds: Set<String> = ["items", "container", "sidebar", "toolbar"]

    public var id: String
    public var title: String
    /// Shown only for selections whose states are all listed; empty: always. (A `MENUITEM`
    /// line says no states: the daemon has matched them already.)
    public var states: [SyncState]
    public var enabled: Bool

    public init(id: String, title: String, states: [SyncState] = [], enabled: Bool = true) {
        self.id = id
        self.title = title
        self.states = states
        self.enabled = enabled
    }

    /// Whether the item applies to a selection with these (reported) states.
    public func matches(_ selection: [SyncState]) -> Bool {
        states.isEmpty || selection.allSatisfy { states.contains($0) }
    }

    /// Reads a `MENUITEM` line (the answer to `MENU`, which says no states).
    public init?(_ m: WireMessage) {
        guard m.messageKind == .menuItem, let id = m.fields.first, !id.isPath else { return nil }
        self.init(id: id.string, title: m.option("title") ?? "", enabled: m.option("enabled") != "0")
    }

    public func wireLine(head: String) -> WireLine {
        var line = Self.start(head)
        line.word(id)
        line.option("title", title)
        line.option("enabled", enabled ? "1" : "0")
        return line
    }
}

/// `DEFINE-MENU <kind> <action-id> title=<text> [states=<state>,...] [enabled=0]`: a provider's
/// item for one kind of menu.
public struct MenuDefinition: Sendable, Equatable {
    /// One of `MenuItem.kinds`.
    public var kind: String
    public var item: MenuItem

    public init(kind: String, item: MenuItem) {
        self.kind = kind
        self.item = item
    }

    public init(kind: String, id: String, title: String, states: [SyncState] = [], enabled: Bool = true) {
        self.init(kind: kind, item: MenuItem(id: id, title: title, states: states, enabled: enabled))
    }

    public var request: Request {
        var f: [RequestField] = [.word(kind), .word(item.id), .option("title", item.title)]
        if !item.states.isEmpty { f.append(.option("states", item.states.map(\.name).joined(separator: ","))) }
        if !item.enabled { f.append(.option("enabled", "0")) }
        return Request(.defineMenu, f)
    }

    public static let usage = "usage: DEFINE-MENU items|container|sidebar|toolbar <action-id> title=<text> [states=<state>,...] [enabled=0]"

    /// Reads the request; `ERR bad-request` for one the contract does not allow.
    public init(_ req: WireRequest) throws(Err) {
        guard req.fields.count == 2, !req.fields[0].isPath, MenuItem.kinds.contains(req.fields[0].string),
              WireParser.isID(req.fields[1].bytes), let title = req.option("title"), !title.isEmpty
        else { throw Err("bad-request", message: Self.usage) }
        var states: [SyncState] = []
        if let list = req.option("states") {
            let parsed = list.split(separator: ",").map { SyncState(name: $0) }
            guard !parsed.isEmpty, parsed.allSatisfy({ $0 != nil }) else { throw Err("bad-request", message: "states= takes state names") }
            states = parsed.compactMap { $0 }
        }
        self.init(kind: req.fields[0].string, id: req.fields[1].string, title: title, states: states, enabled: req.option("enabled") != "0")
    }
}

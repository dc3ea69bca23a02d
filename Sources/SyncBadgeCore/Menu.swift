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

    public func wireLine(tag: String) -> WireLine {
        var line = WireLine(tag)
        line.word("MENUITEM")
        line.word(id)
        line.option("title", title)
        line.word(enabled ? "enabled=1" : "enabled=0")
        return line
    }
}

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

/// The menu items every root offers, claimed or not, after the provider's.
public enum BuiltinMenu {
    public static let ignore = "syncbadge.ignore"
    public static let unignore = "syncbadge.unignore"
    public static let details = "syncbadge.details"
    public static let ids: Set<String> = [ignore, unignore, details]

    /// For a selection: each item's state and whether the root's ignore file ignores it.
    public static func items(states: [SyncState], ignoredByFile: [Bool]) -> [MenuItem] {
        var out: [MenuItem] = []
        if !states.allSatisfy({ $0 == .ignored }) { out.append(MenuItem(id: ignore, title: "Ignore")) }
        if ignoredByFile.contains(true) { out.append(MenuItem(id: unignore, title: "Stop ignoring")) }
        out.append(MenuItem(id: details, title: "Show details"))
        return out
    }
}

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

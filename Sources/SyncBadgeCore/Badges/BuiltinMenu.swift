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

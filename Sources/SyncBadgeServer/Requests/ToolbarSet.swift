import SyncBadgeCore

/// The providers' toolbar items: what `TOOLBAR` lists (one line per provider that defined an
/// item, unchanged since 1.0, which addresses providers by name too), and which changes are
/// pushed (protocol 1.2, `toolbar-push`): a line when a provider defines or replaces its item
/// while it holds a claim, or claims its first root with an item defined;
/// `* TOOLBAR provider=<name> removed` when it disconnects, or unclaims or loses its last
/// claimed root. No I/O: the hub writes the pushes returned.
struct ToolbarSet {
    enum Push: Equatable {
        case show(ProviderToolbar)
        case removed(provider: String)

        /// The line that says it (`ProviderToolbar`, with no item for `removed`).
        var toolbar: ProviderToolbar {
            switch self {
            case .show(let line): line
            case .removed(let provider): ProviderToolbar(provider: provider, item: nil)
            }
        }
    }

    /// Each provider's line, its item always there, by connection id.
    private var items: [Int: ProviderToolbar] = [:]
    /// How many roots each provider connection has claimed.
    private var claims: [Int: Int] = [:]

    /// The lines in the order `TOOLBAR` lists them: by connection, oldest first.
    var lines: [ProviderToolbar] { items.keys.sorted().map { items[$0]! } }

    /// The connection whose line carries `provider=<name>` (the oldest, if two share a name).
    func provider(named name: String) -> Int? {
        items.keys.sorted().first { items[$0]!.provider == name }
    }

    /// The provider's last push as it stands now, for a client that missed pushes: its line
    /// while it holds a claim, else `removed`, as the others were told.
    func current(named name: String) -> Push {
        let pushed = items.keys.sorted().first { items[$0]!.provider == name && claims[$0, default: 0] > 0 }
        return pushed.map { .show(items[$0]!) } ?? .removed(provider: name)
    }

    /// `DEFINE-TOOLBAR`: pushed when it holds a claim and the line changed.
    mutating func defined(_ id: Int, provider: String, item: ToolbarItem) -> Push? {
        let line = ProviderToolbar(provider: provider, item: item)
        let before = items.updateValue(line, forKey: id)
        guard claims[id, default: 0] > 0, before != line else { return nil }
        return .show(line)
    }

    /// `CLAIM`: the first claim shows a defined item.
    mutating func claimed(_ id: Int) -> Push? {
        claims[id, default: 0] += 1
        guard claims[id] == 1, let line = items[id] else { return nil }
        return .show(line)
    }

    /// `UNCLAIM`, or a claimed root removed: the last claim gone removes the item's line from
    /// the pushes' point of view.
    mutating func unclaimed(_ id: Int) -> Push? {
        guard let n = claims[id], n > 0 else { return nil }
        claims[id] = n - 1 == 0 ? nil : n - 1
        guard n == 1, let line = items[id] else { return nil }
        return .removed(provider: line.provider)
    }

    /// The provider's connection closed: its line goes.
    mutating func closed(_ id: Int) -> Push? {
        claims.removeValue(forKey: id)
        return items.removeValue(forKey: id).map { .removed(provider: $0.provider) }
    }
}

/// A client's role, from `HELLO`.
public enum Role: String, Sendable, CaseIterable {
    case viewer, provider, admin
}

/// Every verb of the protocol (PROTOCOL.md), with who may use it and, for the verbs whose
/// fields are only paths, how many: the one verb table.
public enum Verb: String, Sendable, CaseIterable {
    case hello = "HELLO"
    // Every role.
    case ping = "PING", bye = "BYE", roots = "ROOTS", badges = "BADGES", status = "STATUS", list = "LIST"
    case observe = "OBSERVE", unobserve = "UNOBSERVE", menu = "MENU", action = "ACTION", toolbar = "TOOLBAR"
    case stats = "STATS"
    // Admins.
    case addRoot = "ADD-ROOT", removeRoot = "REMOVE-ROOT"
    // Providers.
    case claim = "CLAIM", set = "SET", changes = "CHANGES", subscribeChanges = "SUBSCRIBE-CHANGES"
    case defineBadge = "DEFINE-BADGE", defineMenu = "DEFINE-MENU", defineToolbar = "DEFINE-TOOLBAR"
    // Providers, 1.2.
    case answer = "ANSWER", unclaim = "UNCLAIM"

    /// The role a verb belongs to: nil for the verbs of every role (and `HELLO`).
    public var role: Role? {
        switch self {
        case .hello, .ping, .bye, .roots, .badges, .status, .list, .observe, .unobserve, .menu, .action, .toolbar, .stats:
            nil
        case .addRoot, .removeRoot:
            .admin
        case .claim, .set, .changes, .subscribeChanges, .defineBadge, .defineMenu, .defineToolbar, .answer, .unclaim:
            .provider
        }
    }

    /// A viewer's verbs are everyone's; an admin's and a provider's are their own besides.
    public func allowed(for role: Role) -> Bool {
        self.role == nil || self.role == role
    }

    /// How many path fields a verb takes, for the verbs that take paths and nothing else; nil
    /// for those whose fields have other shapes (SET, MENU, ACTION, the DEFINEs) and for those
    /// that read no field (extra ones are ignored, as unknown options are).
    public var pathCount: ClosedRange<Int>? {
        switch self {
        case .status: 1...Int.max
        case .list, .observe, .unobserve, .addRoot, .removeRoot, .claim, .unclaim, .changes, .subscribeChanges: 1...1
        case .hello, .ping, .bye, .roots, .badges, .stats, .toolbar, .set, .menu, .action, .answer, .defineBadge, .defineMenu,
             .defineToolbar: nil
        }
    }
}

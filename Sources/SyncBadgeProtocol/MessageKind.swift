/// The second word of an answer or push line (PROTOCOL.md, "Responses" and "Pushes"): what a
/// client switches on.
public enum MessageKind: String, Sendable, CaseIterable {
    // The final line of an answer.
    case ok = "OK", err = "ERR"
    // Data lines.
    case item = "ITEM", root = "ROOT", badge = "BADGE", menuItem = "MENUITEM", toolbar = "TOOLBAR", stat = "STAT"
    // Pushes besides `ITEM`, `ROOT`, `BADGE` and `TOOLBAR`.
    case gone = "GONE", reset = "RESET", changed = "CHANGED", resetChanges = "RESET-CHANGES", action = "ACTION", bye = "BYE"

    /// The one type that reads and writes lines of this kind.
    public var type: any MessageLine.Type {
        switch self {
        case .ok: Ok.self
        case .err: Err.self
        case .item: Item.self
        case .root: Root.self
        case .badge: Badge.self
        case .menuItem: MenuItem.self
        case .toolbar: ProviderToolbar.self
        case .stat: Stat.self
        case .gone: Gone.self
        case .reset: Reset.self
        case .changed: Changed.self
        case .resetChanges: ResetChanges.self
        case .action: ActionCall.self
        case .bye: Bye.self
        }
    }
}

/// A line the daemon sends and a client reads, as a value: one type per `MessageKind`, which
/// both the daemon (writing) and every Swift client (reading) use, so that no side spells a
/// line by hand.
public protocol MessageLine: Sendable, Equatable {
    static var kind: MessageKind { get }
    /// Reads a line of this kind; nil for another kind, or a line the protocol does not allow.
    init?(_ m: WireMessage)
    /// The line, after `head`: a request's tag, or `*` for a push.
    func wireLine(head: String) -> WireLine
}

extension MessageLine {
    /// The line's first two words, `<head> <KIND>`, for a writer to go on from.
    static func start(_ head: String) -> WireLine {
        var line = WireLine(head)
        line.append(kind)
        return line
    }
}

extension WireLine {
    mutating func append(_ kind: MessageKind) {
        word(kind.rawValue)
    }
}

extension WireMessage {
    /// Nil for a kind this protocol version does not know (a client ignores those).
    public var messageKind: MessageKind? { MessageKind(rawValue: kind) }
}

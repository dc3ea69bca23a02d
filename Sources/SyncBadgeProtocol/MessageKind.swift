/// The second word of an answer or push line (PROTOCOL.md, "Responses" and "Pushes"): what a
/// client switches on.
public enum MessageKind: String, Sendable, CaseIterable {
    // The final line of an answer.
    case ok = "OK", err = "ERR"
    // Data lines.
    case item = "ITEM", root = "ROOT", badge = "BADGE", menuItem = "MENUITEM", toolbar = "TOOLBAR", stat = "STAT"
    // Pushes besides `ITEM`, `ROOT`, `BADGE` and `TOOLBAR`.
    case gone = "GONE", reset = "RESET", changed = "CHANGED", resetChanges = "RESET-CHANGES", action = "ACTION", bye = "BYE"
}

extension WireMessage {
    /// Nil for a kind this protocol version does not know (a client ignores those).
    public var messageKind: MessageKind? { MessageKind(rawValue: kind) }
}

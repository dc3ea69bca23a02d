// The pushes that name one path and nothing else, and the goodbye (PROTOCOL.md, "Verbs for
// every role" and "Verbs for providers").

/// A line of one path: `<head> <KIND> <path>`.
public protocol OnePathLine: MessageLine {
    var path: [UInt8] { get }
    init(_ path: [UInt8])
}

extension OnePathLine {
    public init?(_ m: WireMessage) {
        guard m.messageKind == Self.kind, let p = m.fields.first, p.isPath else { return nil }
        self.init(p.bytes)
    }

    public func wireLine(head: String) -> WireLine {
        var line = Self.start(head)
        line.field(path)
        return line
    }
}

/// `* GONE <path>`: a direct child of an observed directory, or the directory itself, went.
public struct Gone: OnePathLine {
    public static let kind = MessageKind.gone
    public var path: [UInt8]
    public init(_ path: [UInt8]) { self.path = path }
}

/// `* RESET <dir>`: pushes for the directory were dropped; the client lists it again.
public struct Reset: OnePathLine {
    public static let kind = MessageKind.reset
    public var path: [UInt8]
    public init(_ path: [UInt8]) { self.path = path }
}

/// `* RESET-CHANGES <root>`: `* CHANGED` pushes were dropped; the provider asks `CHANGES` again.
public struct ResetChanges: OnePathLine {
    public static let kind = MessageKind.resetChanges
    /// The root.
    public var path: [UInt8]
    public init(_ root: [UInt8]) { self.path = root }
}

/// `* BYE <reason>`: the daemon closes the connection (`shutdown`, `too-long`, `forbidden`,
/// `bad-request`).
public struct Bye: MessageLine {
    public static let kind = MessageKind.bye
    public var reason: String

    public init(_ reason: String) { self.reason = reason }

    public init?(_ m: WireMessage) {
        guard m.messageKind == .bye, let r = m.fields.first, !r.isPath else { return nil }
        reason = r.string
    }

    public func wireLine(head: String) -> WireLine {
        var line = Self.start(head)
        line.word(reason)
        return line
    }
}

/// One `ROOT` line: `ROOT <path> <state>|removed [provider=] watches=<n> [scanning=1]
/// [degraded=] [message=]`, an answer to `ROOTS` or a `* ROOT` push.
public struct Root: MessageLine {
    public static let kind = MessageKind.root

    public var path: [UInt8]
    /// The root's roll-up; nil once it is no root any more (`removed`, pushes only).
    public var state: SyncState?
    /// The name of the provider that claimed it.
    public var provider: String?
    public var watches: Int?
    public var scanning: Bool
    public var degraded: String?
    public var message: String?

    public static let removedName = "removed"

    public init(path: [UInt8], state: SyncState?, provider: String? = nil, watches: Int? = nil, scanning: Bool = false,
                degraded: String? = nil, message: String? = nil) {
        self.path = path
        self.state = state
        self.provider = provider
        self.watches = watches
        self.scanning = scanning
        self.degraded = degraded
        self.message = message
    }

    /// The wire's name for `state`: a state's, or `removed`.
    public var stateName: String { state?.name ?? Self.removedName }

    /// Reads a `ROOT` line; nil for another kind, or a state that is not the protocol's.
    public init?(_ m: WireMessage) {
        guard m.messageKind == .root, m.fields.count >= 2, m.fields[0].isPath else { return nil }
        path = m.fields[0].bytes
        let name = m.fields[1].string
        if name == Self.removedName {
            state = nil
        } else {
            guard let s = SyncState(name: name) else { return nil }
            state = s
        }
        provider = m.option("provider")
        watches = m.option("watches").flatMap { Int($0) }
        scanning = m.option("scanning") == "1"
        degraded = m.option("degraded")
        message = m.option("message")
    }

    public func wireLine(head: String) -> WireLine {
        var line = Self.start(head)
        line.field(path)
        line.word(stateName)
        if let provider { line.option("provider", provider) }
        if let watches { line.option("watches", String(watches)) }
        if scanning { line.option("scanning", "1") }
        if let degraded { line.option("degraded", degraded) }
        if let message { line.option("message", message) }
        return line
    }

    /// `ROOT <path> removed`: it is no root any more.
    public static func removed(_ path: [UInt8]) -> Root { Root(path: path, state: nil) }
}

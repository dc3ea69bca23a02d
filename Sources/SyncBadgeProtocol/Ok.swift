/// The final line of an answer that succeeded: `<tag> OK [options]`. The options a request's
/// answer carries, in the order the daemon writes them: `HELLO`'s (`proto=`, `server=`,
/// `epoch=`, `caps=`), a `SET`'s (`stale=1`, `gen=`), a listing's (`count=`), an action's or the
/// details' (`message=`).
public struct Ok: MessageLine {
    public static let kind = MessageKind.ok

    public var proto: Int?
    public var server: String?
    public var epoch: String?
    public var caps: [String]?
    /// A `SET` whose generation was older than the path's: nothing changed.
    public var stale: Bool
    public var gen: UInt64?
    public var count: Int?
    public var message: [UInt8]?

    public init(proto: Int? = nil, server: String? = nil, epoch: String? = nil, caps: [String]? = nil, stale: Bool = false,
                gen: UInt64? = nil, count: Int? = nil, message: [UInt8]? = nil) {
        self.proto = proto
        self.server = server
        self.epoch = epoch
        self.caps = caps
        self.stale = stale
        self.gen = gen
        self.count = count
        self.message = message
    }

    /// `OK` alone.
    public static let plain = Ok()

    public init?(_ m: WireMessage) {
        guard m.messageKind == .ok else { return nil }
        proto = m.option("proto").flatMap { Int($0) }
        server = m.option("server")
        epoch = m.option("epoch")
        caps = m.option("caps").map { $0.split(separator: ",").map(String.init) }
        stale = m.option("stale") == "1"
        gen = m.option("gen").flatMap { UInt64($0) }
        count = m.option("count").flatMap { Int($0) }
        message = m.options["message"]
    }

    public func wireLine(head: String) -> WireLine {
        var line = Self.start(head)
        if let proto { line.option("proto", String(proto)) }
        if let server { line.option("server", server) }
        if let epoch { line.option("epoch", epoch) }
        if let caps { line.option("caps", caps.joined(separator: ",")) }
        if stale { line.option("stale", "1") }
        if let gen { line.option("gen", String(gen)) }
        if let count { line.option("count", String(count)) }
        if let message { line.option("message", message) }
        return line
    }
}

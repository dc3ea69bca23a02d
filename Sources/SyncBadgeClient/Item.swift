import SyncBadgeCore

/// An `ITEM` line, as a client reads it.
public struct Item: Sendable, Equatable {
    public var path: [UInt8]
    /// A state name, or `outside`.
    public var state: String
    public var badge: String
    public var kind: String
    public var progress: Int?
    public var message: String?
    public var gen: UInt64?
    public var counts: StateCounts?

    public init?(_ m: WireMessage) {
        guard m.kind == "ITEM", m.fields.count >= 2, m.fields[0].isPath else { return nil }
        path = m.fields[0].bytes
        state = m.fields[1].string
        badge = m.option("badge") ?? state
        kind = m.option("kind") ?? "file"
        progress = m.option("progress").flatMap { Int($0) }
        message = m.option("message")
        gen = m.option("gen").flatMap { UInt64($0) }
        counts = m.option("counts").flatMap { StateCounts(wireValue: $0) }
    }

    public var name: [UInt8] { Array(PathBytes.lastComponent(path)) }
}

/// A provider's report about one path: `SET <state> <path> [gen=] [progress=] [message=]
/// [badge=] [recursive=1] [lease=]`. The one SET type: clients build their requests from it,
/// and the daemon's state machine applies it.
public struct SetRequest: Sendable, Equatable, CustomStringConvertible {
    public var state: SyncState
    /// The path reported; empty where the path travels beside the report (the daemon's
    /// `StateTree.set` takes it apart).
    public var path: [UInt8]
    public var gen: UInt64?
    public var progress: UInt8?
    public var message: String?
    public var badge: String?
    public var recursive: Bool
    /// 1.2: the seconds a `syncing` holds unless reported again.
    public var lease: Int?

    public init(state: SyncState, gen: UInt64? = nil, progress: UInt8? = nil, message: String? = nil, badge: String? = nil, recursive: Bool = false) {
        self.init(state, [], gen: gen, progress: progress, message: message, badge: badge, recursive: recursive)
    }

    public init(_ state: SyncState, _ path: [UInt8], gen: UInt64? = nil, progress: UInt8? = nil, message: String? = nil,
                badge: String? = nil, recursive: Bool = false, lease: Int? = nil) {
        self.state = state
        self.path = path
        self.gen = gen
        self.progress = progress
        self.message = message
        self.badge = badge
        self.recursive = recursive
        self.lease = lease
    }

    public var request: Request {
        var f: [RequestField] = [.word(state.name), .path(path)]
        if let gen { f.append(.option("gen", String(gen))) }
        if let progress { f.append(.option("progress", String(progress))) }
        if let message { f.append(.option("message", message)) }
        if let badge { f.append(.option("badge", badge)) }
        if recursive { f.append(.option("recursive", "1")) }
        if let lease { f.append(.option("lease", String(lease))) }
        return Request(.set, f)
    }

    /// For logs: the request as its line reads, without the tag.
    public var description: String {
        String(decoding: request.wireLine(tag: "").bytes.dropFirst(), as: UTF8.self)
    }
}

/// The daemon's answer to one `SET`.
public enum SetOutcome: Sendable, Equatable {
    case applied
    /// A write landed after the generation the provider reported (`gen`, the path's current
    /// one): the path stays `pending`.
    case stale(gen: UInt64)
    /// The path does not exist (and has no tombstone).
    case notFound

    /// From the final `OK` line: `stale=1 gen=<n>` when stale.
    public init(ok: WireMessage) {
        self = ok.option("stale") == "1" ? .stale(gen: ok.option("gen").flatMap { UInt64($0) } ?? 0) : .applied
    }

    /// The error code that means `notFound`.
    public static let notFoundCode = "not-found"
}

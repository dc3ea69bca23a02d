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

    public static let usage = "usage: SET <state> <path> [gen=] [progress=] [message=] [badge=] [recursive=1]"

    /// Reads a `SET` request, as the daemon checks it: `ERR bad-request` for a missing or unknown
    /// state or a bad option, `ERR bad-path` for a path that is not absolute and normalised.
    /// `lease=` counts on a `syncing` only (1.2, `lease`); on another state it is ignored.
    public init(_ req: WireRequest) throws(Err) {
        guard req.fields.count == 2, !req.fields[0].isPath, let state = SyncState(name: req.fields[0].string) else {
            throw Err("bad-request", message: Self.usage)
        }
        let path = req.fields[1].bytes
        guard PathBytes.isNormalizedAbsolute(path) else { throw Err("bad-path", message: path) }
        self.init(state, path)
        if let g = req.option("gen") {
            guard let gen = UInt64(g) else { throw Err("bad-request", message: "gen must be a number") }
            self.gen = gen
        }
        if let p = req.option("progress") {
            guard let n = UInt8(p), n <= 100 else { throw Err("bad-request", message: "progress must be 0-100") }
            progress = n
        }
        message = req.option("message")
        if let b = req.options["badge"] {
            guard WireParser.isID(b) else { throw Err("bad-request", message: "bad badge id") }
            badge = String(decoding: b, as: UTF8.self)
        }
        recursive = req.option("recursive") == "1"
        if state == .syncing, let l = req.option("lease") {
            // Digits only: Int would also take a sign.
            guard l.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let seconds = Int(l), (1...86_400).contains(seconds) else {
                throw Err("bad-request", message: "lease must be 1-86400 seconds")
            }
            lease = seconds
        }
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

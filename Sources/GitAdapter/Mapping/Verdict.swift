import SyncBadgeProtocol

/// A state for the daemon, in its terms.
public struct Verdict: Sendable, Hashable, CustomStringConvertible {
    public var state: SyncState
    public var message: String?
    public var progress: Int?

    public init(_ state: SyncState, _ message: String? = nil, progress: Int? = nil) {
        self.state = state; self.message = message; self.progress = progress
    }

    public static let synced = Verdict(.synced)
    public static let ignored = Verdict(.ignored)
    public static let noUpstream = Verdict(.pending, "no upstream")

    public var description: String {
        state.name + (message.map { " (\($0))" } ?? "") + (progress.map { " \($0)%" } ?? "")
    }
}

extension Verdict {
    /// The `SET` that shows this verdict on `path`.
    public func set(_ path: [UInt8], gen: UInt64?, recursive: Bool = false) -> SetRequest {
        SetRequest(state, path, gen: gen, progress: progress.map { UInt8(clamping: $0) }, message: message, recursive: recursive)
    }
}

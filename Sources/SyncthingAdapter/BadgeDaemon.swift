import SyncBadgeProtocol

/// The daemon, as the adapter's loop uses it: report states, read generations and pending
/// paths, register roots. Behind a protocol so that the loop's decisions are testable.
public protocol BadgeDaemon: AnyObject {
    func set(_ s: SetRequest) throws -> SetOutcome
    /// The path's current generation, nil when the daemon knows no such path.
    func generation(of path: String) throws -> UInt64?
    /// `CHANGES <root>`: every pending path with its generation.
    func pending(root: String) throws -> [(String, UInt64)]
    func addRoot(_ path: String) throws
    func reconnect() throws
}

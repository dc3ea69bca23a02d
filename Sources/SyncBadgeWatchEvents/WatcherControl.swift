import Logging

/// What the hub asks of the watcher thread. A port: the daemon passes the real `Watcher`,
/// the hub's tests a fake, and the server never links the watcher (nor libinotifytools).
public protocol WatcherControl: AnyObject, Sendable {
    /// `identities`: a stored root, whose files the scan reads the identities of.
    func addRoot(_ path: [UInt8], token: UInt64, identities: Bool)
    func removeRoot(_ path: [UInt8])
    /// From now on the watcher reads the identity of each file its batches write, change or
    /// rename below `root` (`WatcherMessage.identities`): a provider reported files there synced,
    /// and a change to a synced file counts only if its identity differs. Below other roots
    /// nothing is read, so a burst of writes nobody syncs costs no `lstat` each. A hint: a
    /// batch read before it takes effect only sends the hub to read the identities itself.
    func compareIdentities(under root: [UInt8])
    /// Answered by a `.barrier(token:)` message once every event queued before it was sent.
    func barrier(token: UInt64)
    func watches(of root: [UInt8]) -> Int
    var totalWatches: Int { get }
    var events: Int { get }
}

/// The watcher as the daemon owns it: started before any socket, stopped after the last.
public protocol StoppableWatcher: WatcherControl {
    /// Stops the thread; no messages are delivered after this returns.
    func shutdown()
}

/// Starts a watcher whose control file lives in `controlDirectory`, delivering its messages to
/// `sink` on its own thread. The executables pass `Watcher.init`: the server cannot name it.
public typealias WatcherStarter = (
    _ controlDirectory: [UInt8], _ logger: Logger, _ sink: @escaping @Sendable ([WatcherMessage]) -> Void
) throws -> any StoppableWatcher

import Logging
import SyncBadgeClient
import SyncBadgeCore

/// The adapter's provider connection to the daemon: connecting again with `Reconnect`'s
/// backoff, the menus on each connection, the toolbar when it changes, and answers to actions.
/// Whoever catches an error of the connection calls `lost`, which tells `onLost`.
final class DaemonLink {
    let socketPath: String
    let name: String
    let menus: [MenuDefinition]
    let logger: Logger
    private(set) var connection: ProviderConnection?
    private(set) var reconnect = Reconnect()
    /// The toolbar item this connection shows.
    private var toolbar: ToolbarItem?
    /// The claims went with the connection.
    var onLost: () -> Void = {}

    init(socketPath: String, name: String, menus: [MenuDefinition], logger: Logger) {
        self.socketPath = socketPath
        self.name = name
        self.menus = menus
        self.logger = logger
    }

    /// Connects when there is no connection and the backoff is over; true when it did.
    func connectIfDue() throws -> Bool {
        guard connection == nil, reconnect.due(now: .now) else { return false }
        let s = try ProviderConnection(socketPath: socketPath, name: name)
        connection = s
        toolbar = nil
        for m in menus { try s.define(m) }
        if reconnect.connected() { logger.notice("syncbadged is back (epoch \(s.epoch)): claiming and rebuilding every root") }
        return true
    }

    func lost(_ error: any Error) {
        connection = nil
        if reconnect.lost(now: .now) { logger.warning("syncbadged is not answering on \(socketPath): \(error); retrying") }
        onLost()
    }

    /// Closes the connection to give up claims it cannot undo; a new one follows at once.
    func drop() {
        connection = nil
        reconnect.dropped()
    }

    var wake: ContinuousClock.Instant? { connection == nil ? reconnect.retryAt : nil }

    func define(_ item: ToolbarItem) {
        guard let s = connection, toolbar != item else { return }
        do {
            try s.define(item)
            toolbar = item
        } catch {
            lost(error)
        }
    }

    var canAnswer: Bool { connection?.canAnswer == true }

    func answer(_ token: String, _ a: ActionAnswer) {
        guard let s = connection, s.canAnswer else { return }
        do { try s.answer(token, message: a.message, failed: a.failed) } catch { lost(error) }
    }
}

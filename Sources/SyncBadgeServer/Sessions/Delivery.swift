import NIOCore

/// A client's connection as the hub sees it: where the outbox's bytes go.
protocol ClientConnection: AnyObject {
    func write(_ chunk: ByteBuffer)
    /// Closes once what was written goes out.
    func close()
}

/// Each client's connection, which `Hub.deliver` hands the outbox's bytes to.
struct Delivery {
    var connections: [Clients.ID: any ClientConnection] = [:]
    /// The clients being handed output, reused from one delivery to the next.
    var batch: [Clients.ID] = []

    /// A write that closes a connection comes back to `deliver`, which then returns at once:
    /// the delivery under way hands over what that adds.
    enum State: Equatable {
        case idle
        case delivering
    }
    private(set) var state = State.idle

    /// False while a delivery is under way.
    mutating func begin() -> Bool {
        guard state == .idle else { return false }
        state = .delivering
        return true
    }

    mutating func end() {
        precondition(state == .delivering, "a delivery ended that had not begun")
        state = .idle
    }
}

import NIOCore

/// A client's connection as the hub sees it: where the outbox's bytes go.
protocol ClientConnection: AnyObject {
    func write(_ chunk: ByteBuffer)
    /// Closes once what was written goes out.
    func close()
}

/// Each client's connection, which `deliver` hands the outbox's bytes to.
struct Delivery {
    var connections: [Clients.ID: any ClientConnection] = [:]
    /// The clients being handed output, reused from one delivery to the next.
    var batch: [Clients.ID] = []
    /// A delivery is under way (a write that closes a connection comes back to `deliver`).
    var busy = false
}

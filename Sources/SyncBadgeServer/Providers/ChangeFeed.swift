/// The providers' change feed (`SUBSCRIBE-CHANGES`, PROTOCOL.md "Verbs for providers"): which
/// clients follow which root's `* CHANGED` pushes, both ways, so that a closed client or a
/// removed root leaves nothing behind. No I/O: the hub pushes to `subscribers`.
struct ChangeFeed {
    /// Root path → the clients subscribed to its changes.
    private(set) var subscribers: [[UInt8]: Set<Clients.ID>] = [:]
    /// Client → the roots it follows.
    private var subscriptions: [Clients.ID: Set<[UInt8]>] = [:]

    var isEmpty: Bool { subscribers.isEmpty }

    mutating func subscribe(_ id: Clients.ID, to root: [UInt8]) {
        subscriptions[id, default: []].insert(root)
        subscribers[root, default: []].insert(id)
    }

    func isSubscribed(_ id: Clients.ID, to root: [UInt8]) -> Bool {
        subscriptions[id]?.contains(root) == true
    }

    /// The client closed: it follows nothing any more.
    mutating func closed(_ id: Clients.ID) {
        for root in subscriptions.removeValue(forKey: id) ?? [] {
            subscribers[root]?.remove(id)
            if subscribers[root]?.isEmpty == true { subscribers.removeValue(forKey: root) }
        }
    }

    /// The root is no root any more: nobody follows its feed.
    mutating func rootRemoved(_ root: [UInt8]) {
        for id in subscribers.removeValue(forKey: root) ?? [] {
            subscriptions[id]?.remove(root)
            if subscriptions[id]?.isEmpty == true { subscriptions.removeValue(forKey: id) }
        }
    }
}

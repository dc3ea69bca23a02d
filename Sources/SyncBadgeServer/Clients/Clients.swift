import SyncBadgeCore

/// Every client as the hub knows it, by id: who it is (role, name), what it asked for
/// (root pushes, change feeds, observed directories), a provider's menus and toolbar item,
/// how far behind it reads, and its requests waiting their turn. No I/O: the hub reads and
/// changes it; a connection only hands lines in and writes the outbox out.
struct Clients {
    typealias ID = Int

    struct Client {
        var role: Role?
        var name: String
        /// `HELLO roots=0`: no `* ROOT` pushes (protocol 1.1, `roots-optout`).
        var wantsRootPushes = true
        /// Roots whose change feed this client subscribed to.
        var subscriptions: Set<[UInt8]> = []
        /// A provider's menu items by kind, in definition order.
        var menus: [String: [MenuItem]] = [:]
        /// What this client missed while it read too slowly.
        var backpressure = Backpressure()
        /// Its connection takes more output now (the channel's writability, as it reported it).
        var writable = true
        /// Told `BYE`: it is answered nothing more, and pushed nothing.
        var closing = false
        var requests = RequestQueue()

        /// Connected and not being closed.
        var isActive: Bool { !closing }
    }

    private var clients: [ID: Client] = [:]
    /// Every client, oldest first: what a push to all goes through. An array apart from the
    /// dictionary, so that a push changing a client does not copy the dictionary being walked.
    private(set) var all: [ID] = []
    private var nextID = 1
    /// Who observes which directory.
    var observers = ObserverIndex()
    /// Root path → clients subscribed to its change feed.
    private(set) var subscribers: [[UInt8]: Set<ID>] = [:]
    /// The providers' toolbar items, and which changes are pushed.
    var toolbars = ToolbarSet()

    var count: Int { clients.count }

    /// In place (`_modify`), so that changing a client's sets does not copy them.
    subscript(id: ID) -> Client? {
        get { clients[id] }
        _modify { yield &clients[id] }
    }

    func isActive(_ id: ID) -> Bool { clients[id]?.closing == false }

    // The hot paths below reach a client in place (through `_modify`): a plain read of
    // `clients[id]` copies the whole struct, a retain and a release for each of its sets.

    /// A push is due for the client: whether it goes out now, or is dropped and remembered for
    /// the catch-up (Backpressure), given the bytes its connection holds unwritten.
    mutating func admit(_ what: Backpressure.Push, to id: ID, held: Int) -> Bool {
        guard let i = clients.index(forKey: id) else { return false }
        return Self.admit(&clients.values[i], what, held: held)
    }

    private static func admit(_ c: inout Client, _ what: Backpressure.Push, held: Int) -> Bool {
        guard !c.closing else { return false }
        if case .root = what, !c.wantsRootPushes { return false }
        return c.backpressure.push(what, backedUp: !c.writable || held > Outbox.highWater)
    }

    /// What a line from the client meets: nil once it takes no more lines; else whether it
    /// said HELLO, and whether the line can be answered at once (nothing waits before it).
    mutating func gate(_ id: ID) -> (helloed: Bool, idle: Bool)? {
        guard let i = clients.index(forKey: id) else { return nil }
        return Self.gate(&clients.values[i])
    }

    private static func gate(_ c: inout Client) -> (helloed: Bool, idle: Bool)? {
        c.closing ? nil : (c.role != nil, c.requests.isIdle)
    }

    /// Said HELLO (and so gets `* ROOT`, `* BADGE` and `* TOOLBAR` pushes).
    mutating func hasSaidHello(_ id: ID) -> Bool {
        gate(id)?.helloed ?? false
    }

    mutating func makeID() -> ID {
        defer { nextID += 1 }
        return nextID
    }

    /// A connection opened; it is named after its process until `HELLO name=`.
    mutating func opened(_ id: ID, peerPID: Int32) {
        clients[id] = Client(name: "pid-\(peerPID)")
        all.append(id)
    }

    /// The connection closed: it observes and follows nothing any more. Returns what it was.
    mutating func closed(_ id: ID) -> Client? {
        guard let client = clients.removeValue(forKey: id) else { return nil }
        all.removeAll { $0 == id }
        observers.closed(id)
        for root in client.subscriptions {
            subscribers[root]?.remove(id)
            if subscribers[root]?.isEmpty == true { subscribers.removeValue(forKey: root) }
        }
        return client
    }

    /// `SUBSCRIBE-CHANGES`.
    mutating func subscribe(_ id: ID, to root: [UInt8]) {
        guard clients[id] != nil else { return }
        clients[id]?.subscriptions.insert(root)
        subscribers[root, default: []].insert(id)
    }

    /// The root is no root any more: nobody follows its feed.
    mutating func rootRemoved(_ root: [UInt8]) {
        guard let subs = subscribers.removeValue(forKey: root) else { return }
        for id in subs { clients[id]?.subscriptions.remove(root) }
    }
}

import SyncBadgeCore

/// Every client as the hub knows it, by id: who it is (role, name), what it asked for (root
/// pushes, observed directories), how far behind it reads, where its output stands, and its
/// requests waiting their turn. No I/O: the hub reads and changes it; a connection only hands
/// lines in and writes the outbox out.
struct Clients {
    typealias ID = Int

    struct Client {
        var role: Role?
        var name: String
        /// `HELLO roots=0`: no `* ROOT` pushes (protocol 1.1, `roots-optout`).
        var wantsRootPushes = true
        /// What this client missed while it read too slowly.
        var backpressure = Backpressure()
        /// Where its output stands; `closing` is final.
        var output = Output.writable
        var requests = RequestQueue()

        enum Output: Equatable {
            /// Its connection takes more output (the channel's writability, as it reported it).
            case writable
            /// Its connection holds more than it takes: pushes wait (Backpressure).
            case backedUp
            /// Told `BYE`: it is answered nothing more, and pushed nothing.
            case closing
        }

        /// Connected and not being closed.
        var isActive: Bool { output != .closing }

        /// The connection's writability changed; false for a client being closed, whose output
        /// no longer changes.
        mutating func writabilityChanged(_ writable: Bool) -> Bool {
            guard output != .closing else { return false }
            output = writable ? .writable : .backedUp
            return true
        }

        /// Told `BYE`; false when it was already.
        mutating func close() -> Bool {
            guard output != .closing else { return false }
            output = .closing
            return true
        }
    }

    /// Each client in its slot (ClientSlot): `id` is 0 in a free slot.
    private struct Slot {
        var id = 0
        var client: Client?
    }

    private var slots: [Slot] = []
    private var freeSlots: [Int] = []
    /// Every client, oldest first: what a push to all goes through. An array apart from the
    /// slots, so that a push changing a client does not copy the array being walked.
    private(set) var all: [ID] = []
    /// Who observes which directory.
    var observers = ObserverIndex()

    private(set) var count = 0
    /// Counts the clients opened (in 1...Int32.max, then again from 1): a slot's next client
    /// never gets the id of the one before, and no id is 0, a free slot's mark.
    private var generation = 0

    /// The slot of a connected client. Never for 0, a free slot's mark (and a session's id
    /// before it is added).
    private func slot(_ id: ID) -> Int? {
        let i = ClientSlot.index(of: id)
        return id != 0 && i < slots.count && slots[i].id == id ? i : nil
    }

    /// In place (`_modify`), so that changing a client's sets does not copy them. A client is
    /// added by `opened` and removed by `closed` only: setting one nil here traps.
    subscript(id: ID) -> Client? {
        get { slot(id).flatMap { slots[$0].client } }
        _modify {
            if let i = slot(id) {
                yield &slots[i].client
                if slots[i].client == nil { preconditionFailure("a client is removed by closed(_:)") }
            } else {
                var none: Client?
                yield &none
            }
        }
    }

    /// Connected and not being closed. Mutating only to reach the client in place (see below).
    mutating func isActive(_ id: ID) -> Bool {
        guard let i = slot(id) else { return false }
        return Self.isActive(&slots[i].client!)
    }

    private static func isActive(_ c: inout Client) -> Bool { c.output != .closing }

    /// Connected, and its connection takes output (not backed up, not closing).
    mutating func isWritable(_ id: ID) -> Bool {
        guard let i = slot(id) else { return false }
        return Self.isWritable(&slots[i].client!)
    }

    private static func isWritable(_ c: inout Client) -> Bool { c.output == .writable }

    // The hot paths below reach a client in place: a plain read of `self[id]` copies the whole
    // struct, a retain and a release for each of its sets.

    /// A push is due for the client: whether it goes out now, or is dropped and remembered for
    /// the catch-up (Backpressure), given the bytes its connection holds unwritten.
    mutating func admit(_ what: Backpressure.Push, to id: ID, held: Int) -> Bool {
        guard let i = slot(id) else { return false }
        return Self.admit(&slots[i].client!, what, held: held)
    }

    private static func admit(_ c: inout Client, _ what: Backpressure.Push, held: Int) -> Bool {
        guard c.output != .closing else { return false }
        if case .root = what, !c.wantsRootPushes { return false }
        return c.backpressure.push(what, backedUp: c.output == .backedUp || held > Outbox.highWater)
    }

    /// What a line from the client meets: nil once it takes no more lines; else whether it
    /// said HELLO, and whether the line can be answered at once (nothing waits before it).
    mutating func gate(_ id: ID) -> (helloed: Bool, idle: Bool)? {
        guard let i = slot(id) else { return nil }
        return Self.gate(&slots[i].client!)
    }

    private static func gate(_ c: inout Client) -> (helloed: Bool, idle: Bool)? {
        c.output == .closing ? nil : (c.role != nil, c.requests.isIdle)
    }

    /// Said HELLO (and so gets `* ROOT`, `* BADGE` and `* TOOLBAR` pushes).
    mutating func hasSaidHello(_ id: ID) -> Bool {
        gate(id)?.helloed ?? false
    }

    /// A connection opened: its id, in a free slot. It is named after its process until
    /// `HELLO name=`.
    mutating func opened(peerPID: Int32) -> ID {
        let i: Int
        if let free = freeSlots.popLast() {
            i = free
        } else {
            i = slots.count
            slots.append(Slot())
        }
        generation = generation % Int(Int32.max) + 1
        let id = ClientSlot.id(slot: i, generation: generation)
        slots[i] = Slot(id: id, client: Client(name: "pid-\(peerPID)"))
        count += 1
        all.append(id)
        return id
    }

    /// The connection closed: it observes and follows nothing any more. Returns what it was.
    mutating func closed(_ id: ID) -> Client? {
        guard let i = slot(id), let client = slots[i].client else { return nil }
        slots[i] = Slot()
        freeSlots.append(i)
        count -= 1
        all.removeAll { $0 == id }
        observers.closed(id)
        return client
    }
}

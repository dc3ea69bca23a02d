/// A client's id names a slot in the arrays that hold what is known of it (Clients, Outbox):
/// the slot's index in the low 32 bits, the slot's generation above. A pipelined `STATUS`
/// finds its client and its output by index, without hashing (two SipHashes a line were a
/// tenth of its instructions), and an id that outlives its client never finds the next
/// client in that slot. Slots are reused, so the arrays are as long as the most clients
/// connected at once, not as the count of all connections a daemon has served.
enum ClientSlot {
    static func index(of id: Int) -> Int { id & 0xFFFF_FFFF }

    static func id(slot: Int, generation: Int) -> Int { generation << 32 | slot }
}

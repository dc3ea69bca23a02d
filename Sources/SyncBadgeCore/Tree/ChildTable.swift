/// The state tree's child table: every node's id by hash of (parent, name), one open-addressing
/// table for the whole tree (StateTree+Storage.swift finds, links and unlinks through it, reading
/// each key back from its node).
struct ChildTable: Sendable {
    /// Node ids, `StateTree.emptySlot` or `StateTree.deletedSlot`; a power of two long.
    var slots: [StateTree.NodeID] = []
    /// Drawn per tree (see `hash`).
    let seed = UInt64.random(in: .min ... .max)
    /// Slots holding a node, and slots left deleted (probes go past them until a rehash).
    var used = 0
    var deleted = 0

    /// Not `Hasher`: SipHash was a third of a `STATUS` lookup's time (PERFORMANCE.md,
    /// "Pipelined STATUS"). Eight bytes per multiply, from a seed drawn per tree (so that names
    /// chosen elsewhere, by a sync engine's peers say, cannot be made to collide without it),
    /// then a final mix so that the low bits the mask keeps depend on every byte. Weaker than
    /// SipHash against a determined attacker; the defence is the seed.
    func hash(_ parent: StateTree.NodeID, _ name: ArraySlice<UInt8>) -> Int {
        var h = seed ^ (UInt64(UInt32(bitPattern: parent)) &* 0x9E37_79B9_7F4A_7C15)
        name.withUnsafeBytes { raw in
            var i = 0
            while i + 8 <= raw.count {
                h = (h ^ raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0xFF51_AFD7_ED55_8CCD
                h ^= h >> 32
                i += 8
            }
            var tail = UInt64(truncatingIfNeeded: raw.count) << 56
            var shift: UInt64 = 0
            while i < raw.count {
                tail |= UInt64(raw[i]) << shift
                shift += 8
                i += 1
            }
            h = (h ^ tail) &* 0xC4CE_B9FE_1A85_EC53
        }
        h ^= h >> 33
        h &*= 0xFF51_AFD7_ED55_8CCD
        h ^= h >> 33
        return Int(truncatingIfNeeded: h)
    }
}

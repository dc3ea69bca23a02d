/// A small deterministic generator (SplitMix64): the same seed makes the same run. The
/// fast-forward soak (`syncbadge-soak`) draws its synthetic events from it and the model tests
/// their random cases, so a failing run can be replayed from its seed. Here because Core is
/// what both link; the daemon itself draws nothing from it.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<n`.
    public mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }

    /// True `p` times in a hundred.
    public mutating func percent(_ p: Int) -> Bool { below(100) < p }
}

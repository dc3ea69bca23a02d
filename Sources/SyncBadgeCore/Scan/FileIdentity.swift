/// A file's identity as recorded when it becomes `synced`: a later event changes nothing while
/// this is unchanged (PROTOCOL.md, "The state rules").
public struct FileIdentity: Sendable, Hashable {
    public var inode: UInt64
    public var size: Int64
    public var mtimeNs: Int64
    public var ctimeNs: Int64

    public init(inode: UInt64, size: Int64, mtimeNs: Int64, ctimeNs: Int64) {
        self.inode = inode
        self.size = size
        self.mtimeNs = mtimeNs
        self.ctimeNs = ctimeNs
    }

    /// What the tree and the store keep of an identity recorded at `synced`: 8 bytes, not 32.
    /// Every entry's record has room for one, so the full identity would cost every entry of a
    /// tree 24 bytes more (PERFORMANCE.md, "Memory per entry"). The only question asked of a
    /// recorded identity is whether a file still has it, and a digest answers that.
    ///
    /// Each field passes through a bijective mix chained on the ones before it, so two
    /// identities that differ in one field never share a digest. Identities that differ in
    /// several fields share one with probability 2⁻⁶⁴.
    ///
    /// The store keeps digests across restarts: the function must never change.
    public struct Digest: Sendable, Hashable {
        public let bits: UInt64

        /// A digest read back from the store.
        public init(bits: UInt64) { self.bits = bits }
    }

    public var digest: Digest {
        var h: UInt64 = 0x9E37_79B9_7F4A_7C15
        h = Self.mix(h ^ inode)
        h = Self.mix(h ^ UInt64(bitPattern: size))
        h = Self.mix(h ^ UInt64(bitPattern: mtimeNs))
        h = Self.mix(h ^ UInt64(bitPattern: ctimeNs))
        return Digest(bits: h)
    }

    /// MurmurHash3's 64-bit finaliser: a bijection on UInt64 that spreads every input bit
    /// over the whole word.
    static func mix(_ x: UInt64) -> UInt64 {
        var k = x
        k ^= k >> 33
        k &*= 0xFF51_AFD7_ED55_8CCD
        k ^= k >> 33
        k &*= 0xC4CE_B9FE_1A85_EC53
        k ^= k >> 33
        return k
    }
}

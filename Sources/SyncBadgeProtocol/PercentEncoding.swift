/// Percent-encoding of protocol fields (PROTOCOL.md, "Framing").
///
/// Bytes 0x00-0x20, `%`, 0x7F and every byte outside a valid UTF-8 sequence are written `%XX`;
/// everything else passes through, so ordinary paths stay readable and any Linux file name
/// round-trips exactly.
public enum PercentEncoding {
    private static let hex: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// Appends the encoded form of `bytes` to `out`.
    public static func encode<Bytes: Collection>(_ bytes: Bytes, into out: inout [UInt8]) where Bytes.Element == UInt8, Bytes.Index == Int {
        // Bytes that stand for themselves are appended a run at a time, not one by one: each
        // `append` of a byte checks the array's uniqueness and capacity, and a badge's id and
        // a path are usually one run (PERFORMANCE.md, "Session 17").
        var i = bytes.startIndex
        var run = i
        let end = bytes.endIndex
        while i < end {
            let b = bytes[i]
            if b < 0x80 {
                guard b <= 0x20 || b == 0x25 || b == 0x7F else {
                    i += 1
                    continue
                }
            } else {
                let n = validSequenceLength(bytes, at: i)
                if n > 0 {
                    i += n
                    continue
                }
            }
            if run < i { out.append(contentsOf: bytes[run..<i]) }
            escape(b, into: &out)
            i += 1
            run = i
        }
        if run < end { out.append(contentsOf: bytes[run..<end]) }
    }

    public static func encode<Bytes: Collection>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8, Bytes.Index == Int {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        encode(bytes, into: &out)
        return out
    }

    public static func encode(_ string: String) -> String {
        String(decoding: encode(Array(string.utf8)), as: UTF8.self)
    }

    @inline(__always)
    private static func escape(_ b: UInt8, into out: inout [UInt8]) {
        out.append(0x25)
        out.append(hex[Int(b >> 4)])
        out.append(hex[Int(b & 0x0F)])
    }

    /// Length of the valid UTF-8 sequence starting at `i` (a non-ASCII lead byte), or 0 if invalid.
    /// Rejects overlong forms, surrogates and code points above U+10FFFF, as UTF-8 requires.
    static func validSequenceLength<Bytes: Collection>(_ s: Bytes, at i: Int) -> Int where Bytes.Element == UInt8, Bytes.Index == Int {
        let end = s.endIndex
        let b0 = s[i]
        func cont(_ k: Int, _ lo: UInt8 = 0x80, _ hi: UInt8 = 0xBF) -> Bool {
            k < end && s[k] >= lo && s[k] <= hi
        }
        switch b0 {
        case 0xC2...0xDF:
            return cont(i + 1) ? 2 : 0
        case 0xE0:
            return cont(i + 1, 0xA0, 0xBF) && cont(i + 2) ? 3 : 0
        case 0xE1...0xEC, 0xEE...0xEF:
            return cont(i + 1) && cont(i + 2) ? 3 : 0
        case 0xED:
            return cont(i + 1, 0x80, 0x9F) && cont(i + 2) ? 3 : 0
        case 0xF0:
            return cont(i + 1, 0x90, 0xBF) && cont(i + 2) && cont(i + 3) ? 4 : 0
        case 0xF1...0xF3:
            return cont(i + 1) && cont(i + 2) && cont(i + 3) ? 4 : 0
        case 0xF4:
            return cont(i + 1, 0x80, 0x8F) && cont(i + 2) && cont(i + 3) ? 4 : 0
        default:
            return 0
        }
    }

    /// Decodes `%XX` (either case) for any byte; `nil` for a malformed escape.
    public static func decode<Bytes: Collection>(_ bytes: Bytes) -> [UInt8]? where Bytes.Element == UInt8, Bytes.Index == Int {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = bytes.startIndex
        let end = bytes.endIndex
        while i < end {
            let b = bytes[i]
            if b != 0x25 {
                out.append(b)
                i += 1
                continue
            }
            guard i + 2 < end,
                  let hi = hexValue(bytes[i + 1]), let lo = hexValue(bytes[i + 2])
            else { return nil }
            out.append(hi << 4 | lo)
            i += 3
        }
        return out
    }

    @inline(__always)
    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        default: return nil
        }
    }
}

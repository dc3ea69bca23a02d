import Testing
@testable import SyncBadgeCore
@testable import SyncBadgeProtocol

/// PROTOCOL.md, "Framing": the field encoding.
@Suite struct PercentEncodingTests {
    static let upperHex = Array("0123456789ABCDEF".utf8)

    /// `%XX` with upper-case hex, written independently of the code under test.
    static func escaped(_ byte: UInt8) -> [UInt8] {
        [UInt8(ascii: "%"), upperHex[Int(byte >> 4)], upperHex[Int(byte & 0xF)]]
    }

    /// The rule for a byte that is not part of a valid multi-byte sequence.
    static func singleByteEncoding(_ byte: UInt8) -> [UInt8] {
        if byte <= 0x20 || byte == 0x25 || byte == 0x7F || byte >= 0x80 { return escaped(byte) }
        return [byte]
    }

    /// Reference encoder built on the standard library's UTF-8 parser: valid scalars pass
    /// through (ASCII ones subject to the escape set), every byte of an invalid subsequence
    /// is escaped.
    static func reference(_ input: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var parser = Unicode.UTF8.ForwardParser()
        var it = input.makeIterator()
        var consumed = 0
        loop: while true {
            switch parser.parseScalar(from: &it) {
            case .valid(let encoded):
                let bytes = Array(encoded)
                if bytes.count == 1 {
                    out += singleByteEncoding(bytes[0])
                } else {
                    out += bytes
                }
                consumed += bytes.count
            case .error(let length):
                for byte in input[consumed..<(consumed + length)] { out += escaped(byte) }
                consumed += length
            case .emptyInput:
                break loop
            }
        }
        return out
    }

    @Test func everySingleByteRoundTripsAndIsEscapedExactlyWhenRequired() throws {
        for value in 0...255 {
            let byte = UInt8(value)
            let encoded = PercentEncoding.encode([byte])
            let mustEscape = byte <= 0x20 || byte == 0x25 || byte == 0x7F || byte >= 0x80
            #expect(encoded == (mustEscape ? Self.escaped(byte) : [byte]), "byte \(value)")
            #expect(PercentEncoding.decode(encoded) == [byte], "byte \(value)")
        }
    }

    @Test func escapesUseUpperCaseHex() {
        #expect(PercentEncoding.encode([0xAB, 0x0A, 0xFF]) == b("%AB%0A%FF"))
        #expect(PercentEncoding.encode("a b%c\u{7F}") == "a%20b%25c%7F")
    }

    @Test(arguments: ["é", "€", "😀", "naïve/日本語😀"])
    func validUTF8PassesThrough(_ s: String) {
        #expect(PercentEncoding.encode(b(s)) == b(s))
    }

    @Test(arguments: [
        ([0xC0, 0x80], "%C0%80"),                 // overlong NUL
        ([0xC1, 0xBF], "%C1%BF"),                 // overlong
        ([0xE0, 0x80, 0x80], "%E0%80%80"),        // overlong 3-byte
        ([0xF0, 0x80, 0x80, 0x80], "%F0%80%80%80"), // overlong 4-byte
        ([0xED, 0xA0, 0x80], "%ED%A0%80"),        // surrogate U+D800
        ([0xED, 0xBF, 0xBF], "%ED%BF%BF"),        // surrogate U+DFFF
        ([0xF4, 0x90, 0x80, 0x80], "%F4%90%80%80"), // U+110000
        ([0xF5, 0x80, 0x80, 0x80], "%F5%80%80%80"), // lead byte beyond range
        ([0xE2, 0x82], "%E2%82"),                 // truncated € at end
        ([0xE2, 0x82, 0x41], "%E2%82A"),          // truncated €, then ASCII
        ([0xF0, 0x9F, 0x98], "%F0%9F%98"),        // truncated 😀
        ([0x80], "%80"),                          // lone continuation
        ([0x61, 0xBF, 0x62], "a%BFb"),
        ([0xC3, 0xA9, 0xA9], "é%A9"),             // valid é, then a stray continuation
        ([0xFE, 0xFF], "%FE%FF"),
    ] as [([UInt8], String)])
    func invalidSequencesAreEscapedByteByByte(_ input: [UInt8], _ expected: String) {
        #expect(PercentEncoding.encode(input) == b(expected))
        #expect(PercentEncoding.decode(PercentEncoding.encode(input)) == input)
    }

    @Test func boundaryCodePointsPassThrough() {
        // U+0080, U+07FF, U+0800, U+D7FF, U+E000, U+FFFF, U+10000, U+10FFFF.
        let samples: [[UInt8]] = [
            [0xC2, 0x80], [0xDF, 0xBF], [0xE0, 0xA0, 0x80], [0xED, 0x9F, 0xBF],
            [0xEE, 0x80, 0x80], [0xEF, 0xBF, 0xBF], [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF],
        ]
        for s in samples {
            #expect(PercentEncoding.encode(s) == s, "\(s)")
        }
    }

    @Test func allTwoByteSequencesRoundTripAndMatchTheReference() {
        var failures = 0
        for hi in 0...255 {
            for lo in 0...255 {
                let input = [UInt8(hi), UInt8(lo)]
                let encoded = PercentEncoding.encode(input)
                if PercentEncoding.decode(encoded) != input || encoded != Self.reference(input) {
                    failures += 1
                    if failures <= 5 {
                        Issue.record("\(input): encoded \(String(decoding: encoded, as: UTF8.self)), reference \(String(decoding: Self.reference(input), as: UTF8.self))")
                    }
                }
            }
        }
        #expect(failures == 0)
    }

    @Test func randomByteStringsMatchTheReference() {
        // Bytes around every boundary the UTF-8 validation cares about.
        let alphabet: [UInt8] = [0x00, 0x0A, 0x20, 0x25, 0x41, 0x7E, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF,
                                 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1,
                                 0xF3, 0xF4, 0xF5, 0xFF]
        let seed: UInt64 = 0x5EED_0001
        var rng = SplitMix64(seed: seed)
        for i in 0..<20_000 {
            let length = Int(rng.next() % 9)
            let input = (0..<length).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }
            let encoded = PercentEncoding.encode(input)
            let expected = Self.reference(input)
            guard encoded == expected, PercentEncoding.decode(encoded) == input,
                  String(validating: encoded, as: UTF8.self) != nil
            else {
                Issue.record("seed \(seed) case \(i): \(input) encoded \(String(decoding: encoded, as: UTF8.self)), expected \(String(decoding: expected, as: UTF8.self))")
                return
            }
        }
    }

    @Test func decodeAcceptsEitherCase() {
        #expect(PercentEncoding.decode(b("%c3%a9")) == [0xC3, 0xA9])
        #expect(PercentEncoding.decode(b("%C3%A9")) == [0xC3, 0xA9])
        #expect(PercentEncoding.decode(b("a%2fb%2F")) == b("a/b/"))
        // Any byte may be escaped, even one that need not be.
        #expect(PercentEncoding.decode(b("%41%62c")) == b("Abc"))
        #expect(PercentEncoding.decode(b("")) == [])
    }

    @Test(arguments: ["%", "%4", "%G1", "%1G", "a%zz", "abc%", "ab%4", "%%41", "% 41", "%-1"])
    func malformedEscapesGiveNil(_ s: String) {
        #expect(PercentEncoding.decode(b(s)) == nil)
    }
}

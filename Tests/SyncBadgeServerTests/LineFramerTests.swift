import NIOCore
import Testing
@testable import SyncBadgeCore
@testable import SyncBadgeServer

/// PROTOCOL.md, "Framing": splitting input into lines, and the 65,536-byte limit. The input
/// gathers in one buffer that is never compacted; the session's own gathering (a partial line
/// moved to the front of the next read) and its end of input are tested through the session,
/// in HubTests.
@Suite struct LineFramerTests {
    enum Out: Equatable {
        case line([UInt8])
        case tooLong
    }

    /// Feeds the framer and records what it gave, in order: lines, and the too-long verdict.
    final class Harness {
        var framer = LineFramer()
        var input = ByteBuffer()

        func write(_ bytes: [UInt8]) throws {
            input.writeBytes(bytes)
        }

        func write(_ s: String) throws { try write(Array(s.utf8)) }

        func read() throws -> [Out] {
            var out: [Out] = []
            while let frame = framer.next(&input) {
                switch frame {
                case .line(var line): out.append(.line(line.readBytes(length: line.readableBytes) ?? []))
                case .tooLong: out.append(.tooLong)
                }
            }
            return out
        }
    }

    func line(_ s: String) -> Out { .line(Array(s.utf8)) }

    static let max = 65_536

    @Test func oneLine() throws {
        let h = Harness()
        try h.write("1 PING\n")
        #expect(try h.read() == [line("1 PING")])
        #expect(try h.read() == [])
    }

    @Test func aLineSplitAcrossWrites() throws {
        let h = Harness()
        try h.write("1 ST")
        #expect(try h.read() == [])
        try h.write("ATUS /a")
        #expect(try h.read() == [])
        try h.write(" /b\n2 P")
        #expect(try h.read() == [line("1 STATUS /a /b")])
        try h.write("ING\n")
        #expect(try h.read() == [line("2 PING")])
    }

    @Test func byteByByte() throws {
        let h = Harness()
        for byte in Array("1 PING\n2 BYE\n".utf8) { try h.write([byte]) }
        #expect(try h.read() == [line("1 PING"), line("2 BYE")])
    }

    @Test func severalLinesInOneWriteIncludingEmptyOnes() throws {
        let h = Harness()
        try h.write("a\nb\n\nc\n")
        #expect(try h.read() == [line("a"), line("b"), line(""), line("c")])
    }

    @Test func aCarriageReturnStaysInTheFrameAndTheParserDropsIt() throws {
        let h = Harness()
        try h.write("1 PING\r\n\r\n")
        let frames = try h.read()
        #expect(frames == [line("1 PING\r"), line("\r")])
        guard case .line(let first) = frames.first, case .line(let second) = frames.last else { return }
        #expect(WireParser.parse(first) == .request(WireRequest(tag: "1", verb: "PING")))
        #expect(WireParser.parse(second) == .empty)
    }

    @Test func aLineWithoutItsLFIsHeldBack() throws {
        let h = Harness()
        try h.write("1 PING\n2 PI")
        #expect(try h.read() == [line("1 PING")])
        #expect(try h.read() == [])
        #expect(h.input.readableBytes == 4)
    }

    @Test func aLineOfExactlyTheLimitIsAccepted() throws {
        let h = Harness()
        let big = [UInt8](repeating: UInt8(ascii: "x"), count: Self.max)
        try h.write(big + [0x0A] + Array("1 PING\n".utf8))
        #expect(try h.read() == [.line(big), line("1 PING")])
    }

    @Test func aLineOfExactlyTheLimitArrivingInPiecesIsAccepted() throws {
        let h = Harness()
        let big = [UInt8](repeating: UInt8(ascii: "y"), count: Self.max)
        try h.write(Array(big[..<40_000]))
        try h.write(Array(big[40_000...]))
        #expect(try h.read() == [])
        try h.write([0x0A])
        #expect(try h.read() == [.line(big)])
    }

    @Test func aCROnTopOfTheLimitDoesNotCount() throws {
        let h = Harness()
        let big = [UInt8](repeating: UInt8(ascii: "z"), count: Self.max)
        try h.write(big + [0x0D])
        #expect(try h.read() == [])
        try h.write([0x0A])
        #expect(try h.read() == [.line(big + [0x0D])])
    }

    @Test func oneByteOverTheLimitWithoutLFIsTooLongOnce() throws {
        let h = Harness()
        try h.write([UInt8](repeating: UInt8(ascii: "x"), count: Self.max + 1))
        #expect(try h.read() == [.tooLong])
        try h.write("x\n1 PING\n")
        try h.write([UInt8](repeating: UInt8(ascii: "x"), count: Self.max + 1))
        try h.write("\n")
        #expect(try h.read() == [])
    }

    @Test func tooLongIsNoticedBeforeTheLFArrives() throws {
        let h = Harness()
        try h.write([UInt8](repeating: UInt8(ascii: "x"), count: Self.max))
        #expect(try h.read() == [])
        try h.write("x")
        #expect(try h.read() == [.tooLong])
    }

    @Test func aTooLongLineWithItsLFInTheSameWriteIsTooLong() throws {
        let h = Harness()
        try h.write(Array("1 PING\n".utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: Self.max + 1) + [0x0A] + Array("2 PING\n".utf8))
        #expect(try h.read() == [line("1 PING"), .tooLong])
    }

    @Test func aCRFollowedByMoreDataCounts() throws {
        let h = Harness()
        try h.write([UInt8](repeating: UInt8(ascii: "x"), count: Self.max) + [0x0D])
        #expect(try h.read() == [])
        try h.write("y")
        #expect(try h.read() == [.tooLong])
    }
}

import Foundation
import Testing
import SyncBadgeCore

/// Tests/Vectors/wire.tsv, the one wire fixture that the Python package and the shell prompts
/// are checked against too (its README defines the columns): the Swift codec and socket-path
/// rule, case by case.
@Suite struct WireVectorTests {
    struct Case: CustomStringConvertible, Sendable {
        var line: Int
        var columns: [String]
        var kind: String { columns[0] }
        var description: String { "wire.tsv:\(line) \(columns.last ?? "")" }
    }

    static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Vectors/wire.tsv")

    static func cases(_ kind: String) -> [Case] {
        guard let text = try? String(contentsOf: file, encoding: .utf8) else { return [] }
        return text.split(separator: "\n", omittingEmptySubsequences: false).enumerated().compactMap { i, line in
            guard !line.isEmpty, !line.hasPrefix("#") else { return nil }
            let c = Case(line: i + 1, columns: line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init))
            return c.kind == kind ? c : nil
        }
    }

    /// A bytes cell: lower-case hex, `-` for none.
    static func bytes(_ cell: String) -> [UInt8] {
        guard cell != "-" else { return [] }
        let digits = Array(cell.utf8)
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
    }

    /// An optional cell: `unset`, or bytes.
    static func optional(_ cell: String) -> String? {
        cell == "unset" ? nil : String(decoding: bytes(cell), as: UTF8.self)
    }

    @Test func theFixtureCoversEveryKind() {
        #expect(Self.cases("encode").count >= 256)
        #expect(Self.cases("decode").count >= 5)
        #expect(Self.cases("socket").count >= 10)
    }

    @Test(arguments: cases("encode"))
    func encodes(_ c: Case) {
        let input = Self.bytes(c.columns[1]), output = Self.bytes(c.columns[2])
        #expect(PercentEncoding.encode(input) == output, "\(c)")
        #expect(PercentEncoding.decode(output) == input, "\(c)")
    }

    @Test(arguments: cases("decode"))
    func decodes(_ c: Case) {
        let decoded = PercentEncoding.decode(Self.bytes(c.columns[1]))
        if c.columns[2] == "error" {
            #expect(decoded == nil, "\(c)")
        } else {
            #expect(decoded == Self.bytes(c.columns[2]), "\(c)")
        }
    }

    @Test(arguments: cases("socket"))
    func socketPath(_ c: Case) {
        let env = ["SYNCBADGE_SOCKET": Self.optional(c.columns[2]), "XDG_RUNTIME_DIR": Self.optional(c.columns[3])]
        let path = SocketPath.resolve(explicit: Self.optional(c.columns[1]), variable: { env[$0] ?? nil }, uid: UInt32(c.columns[4])!)
        #expect(Array(path.utf8) == Self.bytes(c.columns[5]), "\(c)")
    }
}

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
        #expect(Self.cases("line").count >= 5)
    }

    @Test(arguments: cases("encode"))
    func encodes(_ c: Case) {
        let input = Self.bytes(c.columns[1]), output = Self.bytes(c.columns[2])
        #expect(PercentEncoding.encode(input) == output, "\(c)")
        #expect(PercentEncoding.decode(output) == input, "\(c)")
    }

    /// A whole line read (`WireMessage`, which every Swift client dispatches on) and built
    /// again (`WireLine`, which the server and clients write with).
    @Test(arguments: cases("line"))
    func lines(_ c: Case) throws {
        let raw = Self.bytes(c.columns[1])
        let m = try #require(WireMessage(line: raw), "\(c)")
        #expect(Array(m.head.utf8) == Self.bytes(c.columns[2]), "\(c)")
        #expect(Array(m.kind.utf8) == Self.bytes(c.columns[3]), "\(c)")
        let fields = c.columns[4] == "-" ? [] : c.columns[4].split(separator: ",").map { Self.bytes(String($0)) }
        #expect(m.fields.map(\.bytes) == fields, "\(c)")
        let options = c.columns[5] == "-" ? [] : c.columns[5].split(separator: ",").map { cell -> (String, [UInt8]) in
            let kv = cell.split(separator: "=", maxSplits: 1)
            return (String(kv[0]), Self.bytes(String(kv[1])))
        }
        #expect(m.options == Dictionary(uniqueKeysWithValues: options), "\(c)")
        var built = WireLine(m.head)
        built.word(m.kind)
        for f in fields { f.first == PathBytes.slash ? built.field(f) : built.word(String(decoding: f, as: UTF8.self)) }
        for (k, v) in options { built.option(k, v) }
        #expect(WireMessage(line: built.bytes) == m, "\(c)")
    }

    /// Whether `m` reads as `type` and, written again, is the line that was read (fields in
    /// order, options in any). Comparing the lines, not the values read from them: a reader
    /// that dropped a field would read its own line back the same, but write a shorter one.
    static func roundTrips<T: MessageLine>(_ m: WireMessage, as type: T.Type) -> Bool {
        guard let value = T(m) else { return false }
        return WireMessage(line: value.wireLine(head: m.head).bytes) == m
    }

    /// Each line read as its one type (a request as `Request`, a `SET` as `SetRequest` too; an
    /// answer or push as its `MessageKind`'s type) and written again reads back the same.
    @Test(arguments: cases("line"))
    func linesReadAsTheirTypes(_ c: Case) throws {
        let raw = Self.bytes(c.columns[1])
        let m = try #require(WireMessage(line: raw), "\(c)")
        if !m.isPush, Verb(rawValue: m.kind) != nil {
            guard case .request(let w) = WireParser.parse(raw) else {
                Issue.record("\(c): not a request")
                return
            }
            let request = try #require(Request(w), "\(c)")
            guard case .request(let again) = WireParser.parse(request.wireLine(tag: w.tag).bytes) else {
                Issue.record("\(c): written again, not a request")
                return
            }
            #expect(again == w, "\(c)")
            if request.verb == .set { #expect(try SetRequest(again) == SetRequest(w), "\(c)") }
        } else {
            let kind = try #require(m.messageKind, "\(c)")
            let type = kind.type
            let ok = Self.roundTrips(m, as: type)
            #expect(ok, "\(c)")
        }
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

import Foundation
import Testing
import SyncBadgeCore

/// Every input in the fuzzing corpus (and every crash `make fuzz` ever found, kept in
/// Fuzz/regressions) goes through the fuzzer's own checks in every `make test`.
@Suite struct FuzzCorpusTests {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    static var inputs: [String] {
        ["corpus", "regressions"].flatMap { sub -> [String] in
            let dir = fuzzDirectory.appendingPathComponent(sub)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
            return names.filter { !$0.hasPrefix(".") }.sorted().map { "\(sub)/\($0)" }
        }
    }

    @Test func theCorpusIsThere() {
        #expect(Self.inputs.count >= 7)
    }

    @Test(arguments: inputs)
    func inputPassesTheFuzzChecks(_ name: String) throws {
        let data = try Data(contentsOf: Self.fuzzDirectory.appendingPathComponent(name))
        #expect(FuzzChecks.violations(Array(data)) == [])
    }

    /// The checks can fail: a field that changed, or went missing, in a round trip is reported.
    @Test func aChangedRequestIsReported() {
        let sent = WireRequest(tag: "1", verb: "SET", fields: [.init(Array("synced".utf8)), .init(Array("/a".utf8))], options: ["gen": Array("3".utf8)])
        #expect(FuzzChecks.roundTripViolation(original: sent, back: sent) == nil)
        var changed = sent
        changed.fields[1] = .init(Array("/b".utf8))
        #expect(FuzzChecks.roundTripViolation(original: sent, back: changed) != nil)
        var lost = sent
        lost.fields.removeLast()
        #expect(FuzzChecks.roundTripViolation(original: sent, back: lost) != nil)
        var option = sent
        option.options["gen"] = Array("4".utf8)
        #expect(FuzzChecks.roundTripViolation(original: sent, back: option) != nil)
    }

    /// `a%3Db` is a positional field whose bytes read `a=b`: encoded again it needs no escape
    /// and comes back as the option `a`, which the check expects rather than skips.
    @Test func aFieldThatBecomesAnOptionIsCheckedToo() {
        #expect(FuzzChecks.violations(Array("1 VERB a%3Db /p x=1\n".utf8)) == [])
        guard case .request(let req) = WireParser.parse(Array("1 VERB a%3Db /p".utf8)) else {
            Issue.record("did not parse")
            return
        }
        let wrong = WireRequest(tag: "1", verb: "VERB", fields: [.init(Array("/p".utf8))], options: ["a": Array("c".utf8)])
        #expect(FuzzChecks.roundTripViolation(original: req, back: wrong) != nil)
    }
}

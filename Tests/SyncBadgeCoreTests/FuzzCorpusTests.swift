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
        FuzzChecks.check(Array(data))
    }
}

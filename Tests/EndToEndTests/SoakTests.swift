import Foundation
import Testing

/// The fast-forward soak, short: `make reliability` runs ten million events; here a few
/// thousand show that the harness works and that churn leaves nothing behind.
@Suite struct SoakTests {
    @Test func aShortSoakLeavesNothingBehind() throws {
        let temp = try TempDir()
        let p = Process()
        p.executableURL = Products.directory.appendingPathComponent("syncbadge-soak")
        // RSS is not judged on a run this short (the tree is still growing into its namespace);
        // fds, clients, observations, items and tombstones are.
        p.arguments = ["--events", "20000", "--dirs", "10", "--files", "20", "--observers", "2",
                       "--max-growth", "1000", "--badges", Products.badges.path]
        p.environment = ["TMPDIR": temp.path]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "\(text)")
        #expect(text.contains("20000 events in"))
        #expect(text.contains("after the churn is deleted and synced: ") && text.hasSuffix("PASS\n"), "\(text)")
    }
}

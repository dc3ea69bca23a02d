import Foundation
import Testing

/// `make demo` without a terminal: the story is told, every badge appears, and it exits 0.
@Suite struct DemoTests {
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/rsync"), "rsync is not installed"))
    func theDemoReachesEveryState() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/bash")
        p.arguments = [Products.repository.appendingPathComponent("Examples/demo/demo.sh").path]
        var env = ProcessInfo.processInfo.environment
        env["SYNCBADGE_BIN"] = Products.directory.path
        p.environment = env
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "demo failed:\n\(text)\n\(errors)")
        for state in ["unknown", "pending", "syncing", "synced", "ignored", "conflict", "error"] {
            #expect(text.contains(" \(state) "), "the demo never showed \(state)")
        }
        #expect(text.contains("sync.keep-local"))
        #expect(text.contains("Done: every badge appeared"))
    }
}

import Foundation
import Testing
import SyncBadgeClient

/// Replays every `exchange` example of docs/PROTOCOL.md against the real daemon, so the
/// documentation cannot drift from what the daemon does.
@Suite struct DocumentationTests {
    struct Example: CustomStringConvertible {
        var line: Int
        var steps: [String]
        var description: String { "docs/PROTOCOL.md example at line \(line)" }
    }

    static func examples() throws -> [Example] {
        let text = try String(contentsOf: Products.repository.appendingPathComponent("docs/PROTOCOL.md"), encoding: .utf8)
        var out: [Example] = []
        var current: Example?
        for (i, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line == "```exchange" {
                current = Example(line: i + 1, steps: [])
            } else if line == "```", let c = current {
                out.append(c)
                current = nil
            } else if current != nil {
                current!.steps.append(String(line))
            }
        }
        return out
    }

    @Test func theGuideHasExamples() throws {
        #expect(try Self.examples().count >= 4)
    }

    @Test(arguments: try examples())
    func exampleReplays(_ example: Example) throws {
        let d = try DaemonHarness()
        let root = d.temp.sub("root")
        try FileManager.default.createDirectory(atPath: root + "/docs", withIntermediateDirectories: true)
        try touchFile(root + "/a.txt", "a")
        try touchFile(root + "/docs/readme.md", "r")
        // `C:`/`S:` is the first connection, `C2:`/`S2:` a second one (opened at its first use).
        var connections: [String: Connection] = [:]
        func connection(_ n: String) throws -> Connection {
            if let c = connections[n] { return c }
            let c = try Connection(socketPath: d.socket)
            connections[n] = c
            return c
        }
        for step in example.steps {
            let s = step.replacingOccurrences(of: "$ROOT", with: root)
            if let (kind, n, text) = Self.split(s) {
                let c = try connection(n)
                if kind == "C" {
                    try c.sendRaw(Array((text + "\n").utf8))
                } else {
                    let got = String(decoding: try c.readLine(timeout: 15), as: UTF8.self)
                    #expect(Self.matches(got, text), "\(example): expected `\(text)`, got `\(got)`")
                }
            } else if s.hasPrefix("$ ") {
                let p = Process()
                p.executableURL = URL(fileURLWithPath: "/bin/sh")
                p.arguments = ["-c", String(s.dropFirst(2))]
                var env = ProcessInfo.processInfo.environment
                env["PATH"] = Products.directory.path + ":" + (env["PATH"] ?? "/usr/bin:/bin")
                env["SYNCBADGE_SOCKET"] = d.socket
                env["ROOT"] = root
                p.environment = env
                try p.run()
                p.waitUntilExit()
                #expect(p.terminationStatus == 0, "\(example): `\(s)` failed")
            }
        }
    }

    /// `C: …`, `S2: …`: the side, the connection's number ("" for the first) and the line.
    static func split(_ step: String) -> (String, String, String)? {
        guard let colon = step.firstIndex(of: ":"), let side = step.first, side == "C" || side == "S" else { return nil }
        let number = step[step.index(after: step.startIndex)..<colon]
        guard number.allSatisfy(\.isNumber), step[colon...].hasPrefix(": ") else { return nil }
        return (String(side), number == "1" ? "" : String(number), String(step[step.index(colon, offsetBy: 2)...]))
    }

    /// `{any}` matches any run of characters within one field.
    static func matches(_ got: String, _ pattern: String) -> Bool {
        let parts = pattern.components(separatedBy: "{any}")
        let regex = "^" + parts.map(NSRegularExpression.escapedPattern(for:)).joined(separator: "[^ ]*") + "$"
        return got.range(of: regex, options: .regularExpression) != nil
    }
}

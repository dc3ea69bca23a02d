import Foundation
import Testing

/// The server and its tests reach the watcher only through `SyncBadgeWatchEvents`, so that they
/// link no libinotifytools (issue 28): read from Package.swift's target declarations.
@Suite struct PackageDependencyTests {
    static let manifest = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Package.swift")

    /// The text of the target declared with `name: "<name>"`, up to the `),` that closes it.
    static func declaration(of name: String, in manifest: String) -> Substring? {
        // A target, not a product of the same name: `.target(`, `.testTarget(`, `.executableTarget(`.
        let pattern = #"\.(target|testTarget|executableTarget)\(\s*name: ""# + name + "\""
        guard let start = manifest.range(of: pattern, options: .regularExpression) else { return nil }
        let rest = manifest[start.upperBound...]
        guard let end = rest.range(of: "\n        ),") else { return nil }
        return rest[..<end.lowerBound]
    }

    @Test func theServerDoesNotDependOnTheWatcher() throws {
        let text = try String(contentsOf: Self.manifest, encoding: .utf8)
        for target in ["SyncBadgeServer", "SyncBadgeServerTests", "SyncBadgeWatchEvents"] {
            let decl = try #require(Self.declaration(of: target, in: text), "no target \(target) in Package.swift")
            #expect(!decl.contains("\"SyncBadgeWatcher\""), "\(target) depends on SyncBadgeWatcher")
            #expect(!decl.contains("\"CInotifyTools\""), "\(target) depends on CInotifyTools")
        }
        // Guards the reading: the daemon's executable does link the watcher.
        let daemon = try #require(Self.declaration(of: "syncbadged", in: text))
        #expect(daemon.contains("\"SyncBadgeWatcher\""))
    }
}

import Foundation
import Testing
import SyncBadgeCore

/// One version for everything: `SyncBadgeVersion` (the binaries' `--version`, HELLO's
/// `server=`), the Debian packages' (debian/changelog's first line) and the Python package's
/// (pyproject.toml and `syncbadge.__version__`) say the same.
@Suite struct VersionTests {
    let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    func read(_ path: String) throws -> String {
        try String(contentsOf: repository.appendingPathComponent(path), encoding: .utf8)
    }

    /// The first match's first group, line by line.
    func first(_ pattern: String, in text: String) -> String? {
        let regex = try! NSRegularExpression(pattern: pattern, options: [.anchorsMatchLines])
        let range = NSRange(text.startIndex..., in: text)
        guard let m = regex.firstMatch(in: text, range: range), let r = Range(m.range(at: 1), in: text) else { return nil }
        return String(text[r])
    }

    @Test func theDebianPackagesHaveTheBinariesVersion() throws {
        // "syncbadge (0.1.0) unstable; urgency=medium": a native package, no Debian revision.
        let changelog = first(#"^syncbadge \(([^)]+)\)"#, in: try read("debian/changelog"))
        #expect(changelog == SyncBadgeVersion.string)
    }

    @Test func thePythonPackageHasTheBinariesVersion() throws {
        #expect(first(#"^version = "([^"]+)""#, in: try read("Clients/python/pyproject.toml")) == SyncBadgeVersion.string)
        #expect(first(#"^__version__ = "([^"]+)""#, in: try read("Clients/python/syncbadge/__init__.py")) == SyncBadgeVersion.string)
    }

    @Test func theVersionIsDottedNumbers() {
        #expect(SyncBadgeVersion.string.split(separator: ".").count == 3)
        #expect(SyncBadgeVersion.string.allSatisfy { $0.isNumber || $0 == "." })
    }
}

import Testing
@testable import SyncBadgeCore
@testable import SyncBadgeProtocol

/// Paths as bytes; PROTOCOL.md, "Framing" (`bad-path`).
@Suite struct PathBytesTests {
    @Test(arguments: ["/", "/a", "/a/b", "/a.b/..c/...", "/.hidden", "/a b/\u{1}"])
    func normalizedAbsolutePaths(_ p: String) {
        #expect(PathBytes.isNormalizedAbsolute(b(p)))
    }

    @Test(arguments: ["", "a", "a/b", "/a/", "//", "//a", "/a//b", "/./a", "/a/..", "/a/.", "/..", "/.",
                      "/a/./b", "/a/../b", "./a"])
    func notNormalizedPaths(_ p: String) {
        #expect(!PathBytes.isNormalizedAbsolute(b(p)))
    }

    @Test func nulIsNeverPartOfAPath() {
        #expect(!PathBytes.isNormalizedAbsolute([0x2F, 0x61, 0x00, 0x62]))
    }

    @Test func invalidUTF8IsAValidName() {
        #expect(PathBytes.isNormalizedAbsolute([0x2F, 0xFF, 0x2F, 0xC0, 0x80]))
    }

    @Test func relativeComponents() {
        func rel(_ p: String, _ base: String) -> [String]? {
            PathBytes.relativeComponents(b(p), under: b(base))?.map { String(decoding: $0, as: UTF8.self) }
        }
        #expect(rel("/a/b/c", "/a") == ["b", "c"])
        #expect(rel("/a", "/a") == [])
        #expect(rel("/a/b", "/") == ["a", "b"])
        #expect(rel("/", "/") == [])
        #expect(rel("/ab", "/a") == nil)
        #expect(rel("/a/bc", "/a/b") == nil)
        #expect(rel("/a", "/a/b") == nil)
        #expect(rel("/b/a", "/a") == nil)
    }

    @Test func isAtOrBelowAgreesWithRelativeComponents() {
        let paths = ["/", "/a", "/ab", "/a/b", "/a/bc", "/a/b/c", "/b/a", "/x/y"]
        for p in paths {
            for base in paths {
                #expect(PathBytes.isAtOrBelow(b(p), b(base)) == (PathBytes.relativeComponents(b(p), under: b(base)) != nil), "\(p) under \(base)")
            }
        }
    }

    @Test func overlaps() {
        #expect(PathBytes.overlaps(b("/a"), b("/a")))
        #expect(PathBytes.overlaps(b("/a"), b("/a/b")))
        #expect(PathBytes.overlaps(b("/a/b"), b("/a")))
        #expect(PathBytes.overlaps(b("/"), b("/x/y")))
        #expect(!PathBytes.overlaps(b("/a"), b("/ab")))
        #expect(!PathBytes.overlaps(b("/a/b"), b("/a/c")))
    }

    @Test(arguments: [
        ("/a/b", "/cwd", "/a/b"),
        ("x", "/cwd", "/cwd/x"),
        ("x/./y", "/cwd", "/cwd/x/y"),
        ("../x", "/a/b", "/a/x"),
        ("..", "/a", "/"),
        ("../../..", "/a", "/"),
        ("/..", "/cwd", "/"),
        (".", "/a/b", "/a/b"),
        ("", "/a/b", "/a/b"),
        ("a//b/./c/..", "/", "/a/b"),
        ("/a/b/", "/cwd", "/a/b"),
        ("//a///b", "/cwd", "/a/b"),
        ("x/..", "/", "/"),
        ("...", "/a", "/a/..."),
    ])
    func absoluteResolvesLexically(_ path: String, _ cwd: String, _ expected: String) {
        let out = PathBytes.absolute(b(path), cwd: b(cwd))
        #expect(out == b(expected), "\(path) in \(cwd) → \(text(out))")
        #expect(PathBytes.isNormalizedAbsolute(out))
    }

    @Test func joinParentAndLastComponent() {
        #expect(PathBytes.join(b("/"), b("a")) == b("/a"))
        #expect(PathBytes.join(b("/a"), b("b")) == b("/a/b"))
        #expect(PathBytes.parent(b("/a/b")) == b("/a"))
        #expect(PathBytes.parent(b("/a")) == b("/"))
        #expect(PathBytes.parent(b("/")) == b("/"))
        #expect(Array(PathBytes.lastComponent(b("/a/bc"))) == b("bc"))
        #expect(PathBytes.components(b("/")).isEmpty)
        #expect(PathBytes.components(b("/a/b")).map(Array.init) == [b("a"), b("b")])
    }

    @Test func displayEscapesInvalidBytesOnly() {
        #expect(PathBytes.display(b("/café")) == "/café")
        #expect(PathBytes.display([0x2F, 0xFF, 0x61, 0xC3, 0xA9]) == "/\\xFFaé")
    }
}

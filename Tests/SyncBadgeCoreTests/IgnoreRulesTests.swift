#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import SyncBadgeCore

/// PROTOCOL.md, "Ignored entries": gitignore syntax, by an entry's own path.
@Suite struct IgnoreRulesTests {
    func ignored(_ file: String, _ path: String, dir: Bool = false, defaults: Bool = false) -> Bool {
        let rules = IgnoreRules(fileContents: b(file), defaults: defaults)
        return rules.matches(path.split(separator: "/").map { b(String($0))[...] }, isDir: dir)
    }

    @Test func starSuffix() {
        #expect(ignored("*.log", "a.log"))
        #expect(ignored("*.log", "deep/er/a.log"))
        #expect(ignored("*.log", ".log"))
        #expect(ignored("*.log", "x.log", dir: true))
        #expect(!ignored("*.log", "a.logx"))
        #expect(!ignored("*.log", "log"))
        #expect(!ignored("*.log", "a.log/inner"))
    }

    @Test func trailingSlashMatchesDirectoriesOnly() {
        #expect(ignored("build/", "build", dir: true))
        #expect(ignored("build/", "src/build", dir: true))
        #expect(!ignored("build/", "build"))
        #expect(!ignored("build/", "builds", dir: true))
    }

    @Test func leadingSlashAnchors() {
        #expect(ignored("/top", "top"))
        #expect(ignored("/top", "top", dir: true))
        #expect(!ignored("/top", "x/top"))
        // A slash inside anchors too.
        #expect(ignored("a/b", "a/b"))
        #expect(!ignored("a/b", "x/a/b"))
    }

    @Test func anchoredGlob() {
        #expect(ignored("/*.log", "a.log"))
        #expect(!ignored("/*.log", "x/a.log"))
        #expect(ignored("x/*.log", "x/a.log"))
        #expect(!ignored("x/*.log", "x/y/a.log"))
    }

    @Test func doubleStarInTheMiddle() {
        #expect(ignored("a/**/b", "a/b"))
        #expect(ignored("a/**/b", "a/x/b"))
        #expect(ignored("a/**/b", "a/x/y/b"))
        #expect(!ignored("a/**/b", "x/a/b"))
        #expect(!ignored("a/**/b", "a/b/c"))
        #expect(!ignored("a/**/b", "a/bb"))
    }

    @Test func leadingDoubleStar() {
        #expect(ignored("**/x", "x"))
        #expect(ignored("**/x", "d/x"))
        #expect(ignored("**/x", "d/e/x"))
        #expect(!ignored("**/x", "xy"))
        #expect(!ignored("**/x", "x/y"))
    }

    @Test func trailingDoubleStarMatchesInsideOnly() {
        #expect(ignored("docs/**", "docs/a"))
        #expect(ignored("docs/**", "docs/a/b"))
        #expect(!ignored("docs/**", "docs", dir: true))
        #expect(!ignored("docs/**", "x/docs/a"))
    }

    @Test func questionMarkAndBrackets() {
        #expect(ignored("?", "a"))
        #expect(!ignored("?", "ab"))
        #expect(ignored("?.txt", "é.txt") == false)  // `?` is one byte; é is two
        #expect(ignored("??.txt", "é.txt"))
        for n in ["a", "b", "c"] { #expect(ignored("[abc]", n), "\(n)") }
        #expect(!ignored("[abc]", "d"))
        #expect(!ignored("[abc]", "ab"))
        #expect(ignored("[a-c]x", "bx"))
        #expect(!ignored("[a-c]x", "dx"))
        #expect(ignored("[!a]", "b"))
        #expect(!ignored("[!a]", "a"))
        #expect(ignored("[^a]", "b"))
        #expect(ignored("[]]", "]"))
        // An unclosed bracket is a literal.
        #expect(ignored("a[b", "a[b"))
        #expect(!ignored("a[b", "ab"))
    }

    @Test func starsWithinNames() {
        #expect(ignored("a*b*c", "abc"))
        #expect(ignored("a*b*c", "aXXbYYc"))
        #expect(!ignored("a*b*c", "aXXbYY"))
        #expect(ignored("*", "anything"))
        #expect(ignored("\\*", "*"))
        #expect(!ignored("\\*", "x"))
    }

    @Test func negationReincludes() {
        let file = "*.log\n!keep.log"
        #expect(ignored(file, "other.log"))
        #expect(!ignored(file, "keep.log"))
        #expect(!ignored(file, "d/keep.log"))
        // The last matching rule wins.
        #expect(ignored("!keep.log\n*.log", "keep.log"))
        #expect(ignored("*.log\n!keep.log\nkeep.log", "keep.log"))
        // A negation alone ignores nothing.
        #expect(!ignored("!x", "x"))
    }

    @Test func commentsAndEscapes() {
        #expect(!ignored("#comment", "#comment"))
        #expect(ignored("\\#literal", "#literal"))
        #expect(ignored("\\!bang", "!bang"))
        #expect(!ignored("", "x"))
        #expect(!ignored("\n\n", "x"))
    }

    @Test func trailingSpaces() {
        #expect(ignored("foo   ", "foo"))
        #expect(!ignored("foo   ", "foo "))
        #expect(ignored("foo\\ ", "foo "))
        #expect(!ignored("foo\\ ", "foo"))
    }

    @Test func crlfLines() {
        #expect(ignored("*.log\r\nbuild/\r\n", "a.log"))
        #expect(ignored("*.log\r\nbuild/\r\n", "build", dir: true))
    }

    @Test func builtInDefaults() {
        for name in ["a.swp", "notes~", ".#lock", "d/x.swp"] {
            #expect(ignored("", name, defaults: true), "\(name)")
            #expect(!ignored("", name, defaults: false), "\(name)")
        }
        #expect(!ignored("", "a.swpx", defaults: true))
        // The file may re-include a default.
        #expect(!ignored("!important.swp", "important.swp", defaults: true))
        #expect(IgnoreRules(fileContents: nil, defaults: false).isEmpty)
        #expect(!IgnoreRules(fileContents: nil, defaults: true).isEmpty)
    }

    @Test func ignoreExactlyIsLiteralAndFinal() {
        var rules = IgnoreRules(fileContents: b("!*"), defaults: false)
        rules.ignoreExactly([b("st*te"), b("d[1]")])
        #expect(rules.matches([b("st*te")[...], b("d[1]")[...]], isDir: true))
        #expect(!rules.matches([b("state")[...], b("d1")[...]], isDir: true))
        #expect(!rules.matches([b("d[1]")[...]], isDir: true))
    }

    /// One name against glibc's `fnmatch` (no flags: `*`, `?`, brackets, backslash escapes).
    @Test func globAgreesWithFnmatch() {
        let patternTokens = ["a", "b", "*", "?", "[ab]", "[!a]", "[a-c]", "**", "\\*", "[]a]"]
        let nameBytes: [UInt8] = Array("abc*]".utf8)
        let seed: UInt64 = 77
        var rng = SplitMix64(seed: seed)
        var mismatches: [String] = []
        for _ in 0..<20_000 {
            let pattern = (0..<Int(rng.next() % 5)).map { _ in patternTokens[Int(rng.next() % UInt64(patternTokens.count))] }.joined()
            let name = (0..<Int(rng.next() % 6)).map { _ in nameBytes[Int(rng.next() % UInt64(nameBytes.count))] }
            let mine = IgnoreRules.glob(b(pattern)[...], name[...])
            let reference = fnmatch(pattern, String(decoding: name, as: UTF8.self), 0) == 0
            if mine != reference { mismatches.append("\(pattern) vs \(String(decoding: name, as: UTF8.self)): \(mine)") }
        }
        #expect(mismatches.isEmpty, "seed \(seed): \(mismatches.prefix(10))")
    }

    @Test func theEmptyPathIsNeverIgnored() {
        #expect(!IgnoreRules(fileContents: b("*"), defaults: true).matches([], isDir: true))
    }
}

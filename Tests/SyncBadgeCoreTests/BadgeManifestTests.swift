import Foundation
import Testing
@testable import SyncBadgeCore

/// The badge manifest `badges.tsv`.
@Suite struct BadgeManifestTests {
    static let ids = ["unknown", "pending", "syncing", "synced", "error", "conflict", "ignored", "outside"]

    static func manifest(_ ids: [String] = BadgeManifestTests.ids, extra: String = "") -> String {
        "# id\tlabel\tglyph\tascii\tcolor\timage\n\n"
            + ids.map { "\($0)\t\($0.prefix(1).uppercased() + $0.dropFirst())\t●\t[\($0.prefix(1))]\t32\t\($0).svg" }.joined(separator: "\n")
            + extra + "\n"
    }

    @Test func aValidManifestParses() throws {
        let badges = try BadgeManifest.parse(Self.manifest(), directory: b("/usr/share/syncbadge"))
        #expect(badges.map(\.id) == Self.ids)
        let synced = try #require(badges.first { $0.id == "synced" })
        #expect(synced.label == "Synced")
        #expect(synced.glyph == "●")
        #expect(synced.ascii == "[s]")
        #expect(synced.color == "32")
        #expect(synced.image == b("/usr/share/syncbadge/synced.svg"))
    }

    @Test func imagesMayBeAbsentOrAbsolute() throws {
        let text = Self.manifest(extra: "\nextra\tExtra\t*\t*\t1;31\t\nabs\tAbs\t*\t*\t0\t/img/a.png")
        let badges = try BadgeManifest.parse(text, directory: b("/m"))
        #expect(badges.first { $0.id == "extra" }?.image == nil)
        #expect(badges.first { $0.id == "extra" }?.color == "1;31")
        #expect(badges.first { $0.id == "abs" }?.image == b("/img/a.png"))
    }

    @Test func crlfLineEndings() throws {
        // "\r\n" is one Character: a manifest saved with CRLF line endings must still split.
        let text = Self.manifest().replacingOccurrences(of: "\n", with: "\r\n")
        let badges = try BadgeManifest.parse(text, directory: b("/m"))
        #expect(badges.map(\.id) == Self.ids)
        #expect(badges.first?.image == b("/m/unknown.svg"))
    }

    @Test func missingIDsThrow() {
        #expect(throws: BadgeManifestError.missing(["outside"])) {
            try BadgeManifest.parse(Self.manifest(Array(Self.ids.dropLast())), directory: b("/m"))
        }
        #expect(throws: BadgeManifestError.missing(Self.ids)) {
            try BadgeManifest.parse("# nothing\n", directory: b("/m"))
        }
    }

    @Test(arguments: [
        "x\tX\t*\t*\t32",              // 5 columns
        "x\tX\t*\t*\t32\ti.svg\tmore", // 7 columns
        "x y\tX\t*\t*\t32\t",          // bad id
        "x\t\t*\t*\t32\t",             // empty label
        "x\tX\t*\t*\t\t",              // empty color
    ])
    func malformedLinesThrow(_ line: String) {
        let text = "# header\n" + line + "\n" + Self.manifest()
        do {
            _ = try BadgeManifest.parse(text, directory: b("/m"))
            Issue.record("no error for \(line)")
        } catch let e as BadgeManifestError {
            guard case .malformedLine(let n, _) = e else {
                Issue.record("wrong error \(e)")
                return
            }
            #expect(n == 2)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}

import Foundation
import Testing
@testable import SyncthingAdapter

@Suite struct ConfigFileTests {
    @Test func readsTheGUIOfAGeneratedConfig() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/config.xml")
        let gui = try #require(SyncthingConfigFile.parseGUI(String(contentsOf: url, encoding: .utf8)))
        #expect(gui == SyncthingGUI(address: "127.0.0.1:18384", apiKey: "fixture-key-Abc123", tls: false))
        #expect(gui.endpoint == .tcp(hostPort: "127.0.0.1:18384", tls: false))
    }

    @Test func tlsWildcardAndUnixAddresses() throws {
        let tls = try #require(SyncthingConfigFile.parseGUI("""
            <configuration><gui enabled="true" tls="true" debugging="false">
                <address>0.0.0.0:8384</address>
                <apikey>k&amp;y</apikey>
            </gui></configuration>
            """))
        #expect(tls.apiKey == "k&y")
        #expect(tls.endpoint == .tcp(hostPort: "127.0.0.1:8384", tls: true))
        let unix = try #require(SyncthingConfigFile.parseGUI(
            #"<gui enabled="true" tls="false"><address>unix:///run/user/1000/st.sock</address><apikey>abc</apikey></gui>"#))
        #expect(unix.endpoint == .unix(path: "/run/user/1000/st.sock", tls: false))
        let bare = try #require(SyncthingConfigFile.parseGUI(
            #"<gui enabled="true" tls="false"><address>/run/user/1000/st.sock</address><apikey>abc</apikey></gui>"#))
        #expect(bare.endpoint == .unix(path: "/run/user/1000/st.sock", tls: false))
        #expect(SyncthingConfigFile.parseGUI("<gui><address>x</address></gui>") == nil)
    }

    @Test func urlOption() {
        #expect(SyncthingEndpoint(url: "http://127.0.0.1:8384/") == .tcp(hostPort: "127.0.0.1:8384", tls: false))
        #expect(SyncthingEndpoint(url: "https://[::1]:8384") == .tcp(hostPort: "[::1]:8384", tls: true))
        #expect(SyncthingEndpoint(url: "unix:///tmp/s.sock") == .unix(path: "/tmp/s.sock", tls: false))
        #expect(SyncthingEndpoint(url: "ftp://x") == nil)
    }

    @Test func homesInSyncthingsOrder() {
        let env = ["HOME": "/home/u", "XDG_STATE_HOME": "/st"]
        #expect(SyncthingConfigFile.candidateHomes(environment: env) == ["/st/syncthing", "/home/u/.local/state/syncthing", "/home/u/.config/syncthing"])
    }
}

@Suite struct EventCursorTests {
    @Test func inOrderGapAndRestart() {
        var c = EventCursor()
        #expect(c.started(at: "t1") == .inOrder)
        #expect(c.received(ids: [1, 2, 3]) == .inOrder)
        #expect(c.received(ids: []) == .inOrder)
        #expect(c.received(ids: [4]) == .inOrder)
        // The buffer keeps 1,000 events: a slow reader finds the oldest ones gone.
        #expect(c.received(ids: [1010, 1011]) == .gap(missed: 1005))
        #expect(c.lastID == 1011)
        // Ids back at 1: Syncthing restarted.
        #expect(c.received(ids: [1, 2]) == .restarted)
        #expect(c.started(at: "t1") == .inOrder)
        #expect(c.started(at: "t2") == .restarted)
        #expect(c.lastID == 0)
    }
}

@Suite struct IgnorePatternTests {
    @Test func syncthingPatternSyntax() {
        let p = IgnorePatterns(lines: ["*.log", "/build", "docs/*.tmp", "(?i)THUMBS.db", "!keep.log", "**/cache"])
        #expect(p.isIgnored("a.log"))
        #expect(p.isIgnored("x/y/a.log"))
        #expect(p.isIgnored("build"))
        #expect(p.isIgnored("build/out/x.o"))
        #expect(!p.isIgnored("src/build"))
        #expect(p.isIgnored("docs/a.tmp"))
        #expect(p.isIgnored("sub/docs/a.tmp"))
        #expect(!p.isIgnored("docs/deep/a.tmp"))
        #expect(p.isIgnored("Thumbs.db"))
        #expect(p.isIgnored("a/cache/z"))
        #expect(!p.isIgnored("notes.txt"))
        // The first match decides: *.log comes before !keep.log.
        #expect(p.isIgnored("keep.log"))
        #expect(!IgnorePatterns(lines: ["!keep.log", "*.log"]).isIgnored("keep.log"))
        #expect(IgnorePatterns(lines: []).isIgnored(".stfolder"))
        #expect(IgnorePatterns(lines: []).isIgnored("a/.syncthing.x.txt.tmp"))
        #expect(IgnorePatterns(lines: []).isIgnored(".stversions/a.txt"))
    }

    @Test func conflictNames() {
        #expect(ConflictName.original(of: "a/f.sync-conflict-20261123-190618-6P4VZKN.txt") == "a/f.txt")
        #expect(ConflictName.original(of: "Makefile.sync-conflict-20261123-190618-6P4VZKN") == "Makefile")
        #expect(ConflictName.original(of: "a.tar.sync-conflict-20261123-190618-ABCDEFG.gz") == "a.tar.gz")
        #expect(ConflictName.original(of: "f.sync-conflict-2026-190618-6P4VZKN.txt") == nil)
        #expect(ConflictName.original(of: "plain.txt") == nil)
        #expect(ConflictName.original(of: "a/.syncthing.f.sync-conflict-20261123-190618-6P4VZKN.txt.tmp") == nil)
        #expect(ConflictName.original(of: "~syncthing~f.sync-conflict-20261123-190618-6P4VZKN.txt.tmp") == nil)
    }
}

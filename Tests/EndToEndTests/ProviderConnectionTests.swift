import Foundation
import Testing
import SyncBadgeClient
import SyncBadgeProtocol

/// SyncBadgeClient's `ProviderConnection`, which both adapters speak through, against the real
/// daemon: a claim adds its root when the daemon has none, pipelined SETs say what each did,
/// and the change feed arrives as typed pushes.
@Suite struct ProviderConnectionTests {
    @Test func aClaimAddsItsRootAndSetsSayWhatTheyDid() throws {
        let d = try DaemonHarness()
        let root = d.temp.sub("tree")
        try FileManager.default.createDirectory(atPath: root + "/sub", withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: root + "/a.txt", contents: Data("x".utf8))
        let r = Array(root.utf8)
        let s = try ProviderConnection(socketPath: d.socket, name: "session-test")
        // The daemon has no such root yet: the provider connection adds it on an admin connection first.
        try s.claim(r)
        #expect(try d.connect().request(.roots).data.compactMap(Root.init).map(\.path) == [r])

        let a = try #require(try s.status(r + Array("/a.txt".utf8)))
        let gen = try #require(a.gen)
        let outcomes = try s.set([
            SetRequest(.synced, r + Array("/a.txt".utf8), gen: gen),
            SetRequest(.syncing, r + Array("/sub".utf8), gen: 0, progress: 10),
            SetRequest(.synced, r + Array("/nothing-here".utf8)),
        ])
        #expect(try outcomes.map { try $0.get() } == [.applied, .stale(gen: try #require(try s.status(r + Array("/sub".utf8))?.gen)), .notFound])
        #expect(try s.status(r + Array("/a.txt".utf8))?.state == .synced)
        #expect(try s.status(Array("/not/a/root".utf8))?.isOutside == true)

        // A write after the report: the feed says so, typed.
        try touchFile(root + "/a.txt", "changed")
        let deadline = Date().addingTimeInterval(15)
        var changed: Changed?
        while changed == nil, Date() < deadline {
            guard let m = try s.connection.nextPush(timeout: max(0, deadline.timeIntervalSinceNow)) else { break }
            if let c = Changed(m), c.path == r + Array("/a.txt".utf8) { changed = c }
        }
        let c = try #require(changed)
        #expect(c.what == .modify)
        #expect(try #require(c.gen) > gen)
        // The write may reach the daemon as more than one event (a modify, then its close or
        // attributes), each with a new gen: the entry is pending at the pushed gen or a later one.
        #expect(try s.changes(r).contains { $0.path == r + Array("/a.txt".utf8) && $0.state == .pending && ($0.gen ?? 0) >= (c.gen ?? .max) })
    }
}

import Foundation
import Logging
import Testing
@testable import SyncBadgeStore
import SyncBadgeCore

/// Durable roots and generations (SQLite on a real temporary directory).
@Suite struct StoreTests {
    let logger = Logger(label: "store-tests")

    /// A fresh directory; the store creates `state.sqlite` (and the directory) itself.
    func freshDirectory() -> String {
        NSTemporaryDirectory() + "syncbadge-store-\(UUID().uuidString)/nested"
    }

    func cleanUp(_ dir: String) {
        try? FileManager.default.removeItem(atPath: (dir as NSString).deletingLastPathComponent)
    }

    @Test func aNewStoreIsEmptyAndPrivate() throws {
        let dir = freshDirectory()
        defer { cleanUp(dir) }
        let store = try Store(directory: dir, logger: logger)
        #expect(try store.roots().isEmpty)
        #expect(try store.lastGen() == 0)
        #expect(FileManager.default.fileExists(atPath: dir + "/state.sqlite"))
        let mode = try FileManager.default.attributesOfItem(atPath: dir)[.posixPermissions] as? Int
        #expect(mode == 0o700)
    }

    @Test func rootsPersistAcrossInstances() async throws {
        let dir = freshDirectory()
        defer { cleanUp(dir) }
        let weird: [UInt8] = [0x2F, 0x74, 0x6D, 0x70, 0x2F, 0xFF, 0x0A, 0xC3, 0xA9]
        do {
            let store = try Store(directory: dir, logger: logger)
            try store.addRoot(StoredRoot(path: Array("/home/u/sync".utf8), ignoreDefaults: true))
            try store.addRoot(StoredRoot(path: weird, ignoreDefaults: false))
            try store.addRoot(StoredRoot(path: Array("/home/u/other".utf8), ignoreDefaults: true))
            // Adding an existing root again keeps its place and takes the new settings (entries
            // may have created the row before `addRoot` wrote it).
            try store.addRoot(StoredRoot(path: Array("/home/u/sync".utf8), ignoreDefaults: false))
        }
        let again = try Store(directory: dir, logger: logger)
        #expect(try again.roots() == [
            StoredRoot(path: Array("/home/u/sync".utf8), ignoreDefaults: false),
            StoredRoot(path: weird, ignoreDefaults: false),
            StoredRoot(path: Array("/home/u/other".utf8), ignoreDefaults: true),
        ])

        try again.removeRoot(weird)
        try again.removeRoot(Array("/not/a/root".utf8))
        let third = try Store(directory: dir, logger: logger)
        #expect(try third.roots().map(\.path) == [Array("/home/u/sync".utf8), Array("/home/u/other".utf8)])
    }

    @Test func aPathIsComparedAsBytes() async throws {
        let dir = freshDirectory()
        defer { cleanUp(dir) }
        let store = try Store(directory: dir, logger: logger)
        try store.addRoot(StoredRoot(path: Array("/a".utf8), ignoreDefaults: true))
        try store.addRoot(StoredRoot(path: Array("/A".utf8), ignoreDefaults: true))
        try store.addRoot(StoredRoot(path: Array("/a/".utf8), ignoreDefaults: true))
        #expect(try store.roots().count == 3)
        try store.removeRoot(Array("/A".utf8))
        #expect(try store.roots().map(\.path) == [Array("/a".utf8), Array("/a/".utf8)])
    }

    /// The generation counter is stored by the group commit and only grows: a commit with an
    /// older counter (a batch drained before another) does not take it back.
    @Test(arguments: [1, 42, 1 << 40, UInt64(Int64.max)] as [UInt64])
    func lastGenRoundTripsAndOnlyGrows(_ gen: UInt64) async throws {
        let dir = freshDirectory()
        defer { cleanUp(dir) }
        func commit(_ store: Store, lastGen: UInt64) throws {
            var changes = StoreChanges()
            changes.lastGen = lastGen
            try store.commit([changes])
        }
        do {
            let store = try Store(directory: dir, logger: logger)
            try commit(store, lastGen: 7)
            #expect(try store.lastGen() == 7)
            try commit(store, lastGen: gen)
            #expect(try store.lastGen() == max(7, gen))
        }
        #expect(try Store(directory: dir, logger: logger).lastGen() == max(7, gen))
    }

    @Test(arguments: ["garbage from the start", "garbage in the middle"])
    func aCorruptDatabaseIsMovedAsideAndTheStoreStartsFresh(_ how: String) async throws {
        let dir = freshDirectory()
        defer { cleanUp(dir) }
        do {
            let store = try Store(directory: dir, logger: logger)
            for i in 0..<200 { try store.addRoot(StoredRoot(path: Array("/r/\(i)/\(String(repeating: "x", count: 200))".utf8), ignoreDefaults: true)) }
        }
        let file = dir + "/state.sqlite"
        let h = try #require(FileHandle(forUpdatingAtPath: file))
        let size = try h.seekToEnd()
        try h.seek(toOffset: how.hasSuffix("start") ? 0 : size / 2)
        try h.write(contentsOf: Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 7919 &+ 13) }))
        try h.close()
        let store = try Store.open(directory: dir, logger: logger)
        #expect(try store.roots().isEmpty)
        let aside = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasPrefix("state.sqlite.corrupt-") }
        #expect(!aside.isEmpty)
        // The fresh store works.
        try store.addRoot(StoredRoot(path: Array("/again".utf8), ignoreDefaults: false))
        #expect(try store.roots().map(\.path) == [Array("/again".utf8)])
    }

    @Test func aHealthyDatabaseIsKept() async throws {
        let dir = freshDirectory()
        defer { cleanUp(dir) }
        try Store(directory: dir, logger: logger).addRoot(StoredRoot(path: Array("/kept".utf8), ignoreDefaults: true))
        #expect(try Store.open(directory: dir, logger: logger).roots().map(\.path) == [Array("/kept".utf8)])
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).allSatisfy { !$0.contains("corrupt") })
    }
}


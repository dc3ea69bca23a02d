import Foundation
import Testing
@testable import RcloneAdapter

/// The snapshot rclone 1.60.1 gave at one moment, from the recorded answers.
func snapshot(stats: String, core: String, transferred: String, queue: String? = nil) throws -> RcloneSnapshot {
    RcloneSnapshot(stats: try Fixture.decode(VFSStats.self, "1.60.1/\(stats).json"),
                   transferring: try Fixture.decode(CoreStats.self, "1.60.1/\(core).json").transferring ?? [],
                   finished: try Fixture.decode(CoreTransferred.self, "1.60.1/\(transferred).json").transferred,
                   queue: try queue.map { try Fixture.decode(VFSQueue.self, $0).queue })
}

func uploadedMeta() throws -> CacheMeta { try Fixture.decode(CacheMeta.self, "1.60.1/meta-uploaded.json") }
/// big.bin as the mount showed it when meta-uploaded.json was recorded.
func bigBin(_ meta: CacheMeta?, size: Int64 = 600_000, dataCached: Bool = true) -> FileFacts {
    FileFacts(name: "big.bin", kind: .file, size: size, mtime: RFC3339.nanoseconds("2026-11-27T19:31:57.115332457Z")!, meta: meta,
              dataCached: dataCached)
}

@Suite struct DecodingTests {
    /// A path the daemon has not reported (found by the walk) counts as just changed while its
    /// own mtime is recent, so that a file written a moment ago, before rclone wrote its cache
    /// metadata, waits instead of being judged in the cloud only; an old one does not.
    @Test func aRecentlyWrittenFileTheDaemonDidNotReportWaitsForRclone() throws {
        let now: Int64 = 1_800_000_000_000_000_000
        #expect(RcloneMapper.sinceChange(reported: nil, mtime: now - 500_000_000, wallNowNs: now) == .milliseconds(500))
        #expect(RcloneMapper.sinceChange(reported: nil, mtime: now - 5_000_000_000, wallNowNs: now) == nil)
        #expect(RcloneMapper.sinceChange(reported: .seconds(7), mtime: now, wallNowNs: now) == .seconds(7))
        #expect(RcloneMapper.sinceChange(reported: nil, mtime: 0, wallNowNs: now) == nil)
        // A clock step back puts the mtime in the future: just written.
        #expect(RcloneMapper.sinceChange(reported: nil, mtime: now + 1_000_000, wallNowNs: now) == .zero)
        // Dated further ahead (a wrong clock elsewhere, `touch -d`): not a recent write.
        #expect(RcloneMapper.sinceChange(reported: nil, mtime: now + 5_000_000_000, wallNowNs: now) == nil)
        #expect(RcloneMapper.sinceChange(reported: nil, mtime: now + 3_600_000_000_000, wallNowNs: now) == nil)
        let idle = try snapshot(stats: "vfs-stats-idle", core: "core-stats-idle", transferred: "core-transferred-after-edit")
        let fresh = FileFacts(name: "local.txt", kind: .file, size: 12, mtime: now - 300_000_000,
                              sinceChange: RcloneMapper.sinceChange(reported: nil, mtime: now - 300_000_000, wallNowNs: now))
        #expect(RcloneMapper.verdict(fresh, idle) == .pending("waiting for rclone"))
        let old = FileFacts(name: "remote.txt", kind: .file, size: 12, mtime: now - 60_000_000_000,
                            sinceChange: RcloneMapper.sinceChange(reported: nil, mtime: now - 60_000_000_000, wallNowNs: now))
        #expect(RcloneMapper.verdict(old, idle) == .synced(.cloud))
    }

    @Test func vfsStatsOf160() throws {
        let s = try Fixture.decode(VFSStats.self, "1.60.1/vfs-stats-queued.json")
        #expect(s.fs == "/tmp/rc1/remote")
        #expect(s.diskCache?.path == "/tmp/rc1/cache/vfs/local/tmp/rc1/remote")
        #expect(s.diskCache?.pathMeta == "/tmp/rc1/cache/vfsMeta/local/tmp/rc1/remote")
        #expect(s.diskCache?.uploadsQueued == 1)
        #expect(s.busy)
        #expect(try !Fixture.decode(VFSStats.self, "1.60.1/vfs-stats-idle.json").busy)
    }

    @Test func coreStatsLeaveOutTransferringAtIdle() throws {
        #expect(try Fixture.decode(CoreStats.self, "1.60.1/core-stats-idle.json").transferring == nil)
        let t = try #require(try Fixture.decode(CoreStats.self, "1.60.1/core-stats-transferring.json").transferring)
        #expect(t == [Transfer(name: "dir a/x.bin", size: 10_000_000, bytes: 5_337_088, percentage: 53)])
        #expect(try Fixture.decode(CoreStats.self, "1.60.1/core-stats-readonly.json").lastError == "permission denied")
    }

    @Test func cacheMetadata() throws {
        let up = try uploadedMeta()
        #expect(!up.dirty && up.wholeFileCached && up.uploadedSize == 600_000)
        let dirty = try Fixture.decode(CacheMeta.self, "1.60.1/meta-dirty.json")
        #expect(dirty.dirty && dirty.uploadedSize == nil)
        // Opened for writing, nothing written yet: `Rs` is null.
        let opened = try Fixture.decode(CacheMeta.self, "1.60.1/meta-opened.json")
        #expect(opened.dirty && opened.ranges.isEmpty && opened.wholeFileCached)
        let partial = CacheMeta(size: 100, modTime: "", ranges: [.init(pos: 0, size: 40), .init(pos: 60, size: 40)], dirty: false, fingerprint: "")
        #expect(!partial.wholeFileCached)
    }

    @Test func documentedQueueOf168() throws {
        let q = try Fixture.decode(VFSQueue.self, "1.68/vfs-queue.json").queue
        #expect(q.map(\.name) == ["dir a/x.bin", "notes.txt", "ro.txt"])
        #expect(q[0].uploading && q[2].tries == 2 && q[1].expiry == 1.5)
        #expect(try JSONDecoder().decode(VFSQueue.self, from: Data("{}".utf8)).queue.isEmpty)
    }

    @Test func timesAsTheMountShowsThem() {
        // `date -u -d 2026-11-27T19:32:35.880808159Z +%s`, and stat's %y of the file.
        #expect(RFC3339.nanoseconds("2026-11-27T19:32:35.880808159Z") == 1_795_807_955_880_808_159)
        #expect(RFC3339.nanoseconds("2026-11-27T20:32:35.88+01:00") == 1_795_807_955_880_000_000)
        #expect(RFC3339.nanoseconds("1970-01-01T00:00:00Z") == 0)
        #expect(RFC3339.nanoseconds("yesterday") == nil)
    }

    @Test func byteCounts() {
        #expect("\(ByteCount(3))" == "3 B")
        #expect("\(ByteCount(12_000_000))" == "12 MB")
        #expect("\(ByteCount(4_662_912))" == "4.7 MB")
        #expect("\(ByteCount(640_000))" == "640 kB")
    }
}

@Suite struct MapperTests160 {
    @Test func aTransferIsSyncingWithItsPercentage() throws {
        let s = try snapshot(stats: "vfs-stats-uploading", core: "core-stats-transferring", transferred: "core-transferred-ok")
        let f = FileFacts(name: "dir a/x.bin", kind: .file, size: 10_000_000, meta: nil)
        #expect(RcloneMapper.verdict(f, s) == .syncing(progress: 53, "uploading: 5.3 MB of 10 MB"))
    }

    @Test func dirtyInTheCacheIsPending() throws {
        let s = try snapshot(stats: "vfs-stats-queued", core: "core-stats-idle", transferred: "core-transferred-ok")
        let meta = try Fixture.decode(CacheMeta.self, "1.60.1/meta-dirty.json")
        let f = FileFacts(name: "ro.txt", kind: .file, size: 3, meta: meta, dataCached: true)
        #expect(RcloneMapper.verdict(f, s) == .pending("waiting for upload"))
    }

    @Test func aFailedUploadIsAnErrorWithRclonesMessage() throws {
        let s = try snapshot(stats: "vfs-stats-readonly", core: "core-stats-readonly", transferred: "core-transferred-readonly")
        let meta = try Fixture.decode(CacheMeta.self, "1.60.1/meta-dirty.json")
        let f = FileFacts(name: "ro.txt", kind: .file, size: 3, meta: meta, dataCached: true)
        #expect(RcloneMapper.verdict(f, s) == .error("permission denied"))
        // The first transfer of existing.txt, a successful read into the cache, is not its upload.
        #expect(s.lastError(of: "existing.txt") == "permission denied")
    }

    @Test func anUploadCancelledByAWriteIsNoError() throws {
        var s = try snapshot(stats: "vfs-stats-queued", core: "core-stats-idle", transferred: "core-transferred-after-edit")
        s.finished.removeLast(2)
        #expect(s.finished.last?.error == "context canceled")
        let meta = CacheMeta(size: 8_000_005, modTime: "2026-11-27T19:32:35.880808159Z", ranges: [.init(pos: 0, size: 8_000_005)], dirty: true, fingerprint: "")
        let f = FileFacts(name: "edit.bin", kind: .file, size: 8_000_005, mtime: 1_795_807_955_880_808_159, meta: meta, dataCached: true)
        #expect(RcloneMapper.verdict(f, s) == .pending("waiting for upload"))
    }

    @Test func uploadedAndTheSameIsSyncedLocal() throws {
        let s = try snapshot(stats: "vfs-stats-idle", core: "core-stats-idle", transferred: "core-transferred-after-edit")
        #expect(RcloneMapper.verdict(bigBin(try uploadedMeta()), s) == .synced(.local))
        // The last content of the file edited during its upload: the later, whole transfer.
        let meta = CacheMeta(size: 8_000_005, modTime: "2026-11-27T19:32:35.880808159Z", ranges: [.init(pos: 0, size: 8_000_005)], dirty: false,
                             fingerprint: "8000005,2026-11-27 19:32:35.880808159 +0000 UTC,5d54f86e1617d82937efa1bcaf0383f8")
        let f = FileFacts(name: "edit.bin", kind: .file, size: 8_000_005, mtime: 1_795_807_955_880_808_159, meta: meta, dataCached: true)
        #expect(RcloneMapper.verdict(f, s) == .synced(.local))
    }

    /// rclone ends the transfer (it leaves `transferring` and enters `core/transferred`) a
    /// moment before it marks the file clean in its cache.
    @Test func aTransferJustEndedIsStillSyncingUntilTheCacheSaysClean() throws {
        let s = try snapshot(stats: "vfs-stats-uploading", core: "core-stats-idle", transferred: "core-transferred-ok")
        var dirty = try uploadedMeta()
        dirty.dirty = true
        #expect(RcloneMapper.verdict(bigBin(dirty), s) == .syncing(progress: 100, "finishing the upload"))
        // Written again after that transfer: that upload was of older content.
        dirty.modTime = "2026-11-27T19:31:59Z"
        var later = bigBin(dirty)
        later.mtime = RFC3339.nanoseconds("2026-11-27T19:31:59Z")!
        #expect(RcloneMapper.verdict(later, s) == .pending("waiting for upload"))
        // Another size than what went up.
        dirty = try uploadedMeta()
        dirty.dirty = true
        #expect(RcloneMapper.verdict(bigBin(dirty, size: 600_001), s) == .pending("waiting for upload"))
    }

    @Test func changedSinceTheUploadIsPending() throws {
        let s = try snapshot(stats: "vfs-stats-idle", core: "core-stats-idle", transferred: "core-transferred-ok")
        #expect(RcloneMapper.verdict(bigBin(try uploadedMeta(), size: 600_001), s) == .pending("changed since its upload"))
        var later = bigBin(try uploadedMeta())
        later.mtime += 1
        #expect(RcloneMapper.verdict(later, s) == .pending("changed since its upload"))
    }

    @Test func residence() throws {
        let s = try snapshot(stats: "vfs-stats-idle", core: "core-stats-idle", transferred: "core-transferred-ok")
        // Not in the cache at all: the cloud's.
        #expect(RcloneMapper.verdict(bigBin(nil, dataCached: false), s) == .synced(.cloud))
        // Part of it read into the cache.
        var partial = try uploadedMeta()
        partial.ranges = [.init(pos: 0, size: 4096)]
        #expect(RcloneMapper.verdict(bigBin(partial), s) == .synced(.cloud))
        // The metadata stayed, the data file went.
        #expect(RcloneMapper.verdict(bigBin(try uploadedMeta(), dataCached: false), s) == .synced(.cloud))
    }

    @Test func aFileJustWrittenWithoutMetadataIsPending() throws {
        let idle = try snapshot(stats: "vfs-stats-idle", core: "core-stats-idle", transferred: "core-transferred-ok")
        var f = bigBin(nil, dataCached: false)
        f.sinceChange = .milliseconds(50)
        // Created through the mount a moment ago: rclone has not written its metadata yet.
        #expect(RcloneMapper.verdict(f, idle) == .pending("waiting for rclone"))
        f.sinceChange = .seconds(3)
        #expect(RcloneMapper.verdict(f, idle) == .synced(.cloud))
        // Changed, and rclone still busy (1.60 names no file): not yet.
        let busy = try snapshot(stats: "vfs-stats-queued", core: "core-stats-idle", transferred: "core-transferred-ok")
        #expect(RcloneMapper.verdict(f, busy) == .pending("waiting for rclone"))
        // Listed at start, not changed: the remote's.
        #expect(RcloneMapper.verdict(bigBin(nil, dataCached: false), busy) == .synced(.cloud))
    }

    @Test func directoriesAndDeletionsAreSyncedAtOnce() throws {
        let s = try snapshot(stats: "vfs-stats-queued", core: "core-stats-idle", transferred: "core-transferred-ok")
        #expect(RcloneMapper.verdict(FileFacts(name: "dir a", kind: .directory), s) == .synced(nil))
        #expect(RcloneMapper.verdict(FileFacts(name: "gone.txt", kind: .gone), s) == .synced(nil))
    }
}

@Suite struct MapperTests168 {
    func withQueue() throws -> RcloneSnapshot {
        try snapshot(stats: "vfs-stats-uploading", core: "core-stats-transferring", transferred: "core-transferred-readonly",
                     queue: "1.68/vfs-queue.json")
    }

    @Test func queuedIsPendingWithItsExpiry() throws {
        let f = FileFacts(name: "notes.txt", kind: .file, size: 79, meta: nil)
        #expect(RcloneMapper.verdict(f, try withQueue()) == .pending("queued for upload in 1.5 s"))
    }

    @Test func uploadingTakesTheTransfersProgress() throws {
        let f = FileFacts(name: "dir a/x.bin", kind: .file, size: 10_000_000, meta: nil)
        #expect(RcloneMapper.verdict(f, try withQueue()) == .syncing(progress: 53, "uploading: 5.3 MB of 10 MB"))
        var s = try withQueue()
        s.transferring = []
        #expect(RcloneMapper.verdict(f, s) == .syncing(progress: 0, "uploading"))
    }

    @Test func triesMakeAnErrorWithTheLastMessage() throws {
        let f = FileFacts(name: "ro.txt", kind: .file, size: 3, meta: try Fixture.decode(CacheMeta.self, "1.60.1/meta-dirty.json"))
        #expect(RcloneMapper.verdict(f, try withQueue()) == .error("permission denied (tried 2 times; rclone retries in 3.2 s)"))
    }

    @Test func outOfTheQueueIsJudgedByTheCache() throws {
        var s = try withQueue()
        s.queue = []
        s.transferring = []
        s.stats.diskCache?.uploadsInProgress = 0
        #expect(!s.busy)
        #expect(RcloneMapper.verdict(bigBin(try uploadedMeta()), s) == .synced(.local))
    }
}

@Suite struct ToolbarTests {
    @Test func remoteAndWhatIsLeft() throws {
        let idle = try snapshot(stats: "vfs-stats-idle", core: "core-stats-idle", transferred: "core-transferred-ok")
        #expect(RcloneToolbar.text(remote: "gdrive:", idle, pendingBytes: 0) == ("gdrive:", "gdrive:: everything is uploaded"))
        let busy = try snapshot(stats: "vfs-stats-uploading", core: "core-stats-transferring", transferred: "core-transferred-ok")
        #expect(RcloneToolbar.text(remote: "gdrive:", busy, pendingBytes: 0).name == "gdrive: ↑ 1 file, 4.7 MB")
        let queued = try snapshot(stats: "vfs-stats-uploading", core: "core-stats-transferring", transferred: "core-transferred-ok",
                                  queue: "1.68/vfs-queue.json")
        #expect(RcloneToolbar.text(remote: "gdrive:", queued, pendingBytes: 0).name == "gdrive: ↑ 3 files, 4.7 MB")
        #expect(RcloneToolbar.text(remote: "gdrive:", nil, pendingBytes: 0).tooltip == "rclone's remote control does not answer")
    }
}

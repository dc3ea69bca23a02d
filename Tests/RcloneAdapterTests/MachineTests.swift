import Testing
@testable import RcloneAdapter

@Suite struct PollMachineTests {
    @Test func pollsOnlyWhileBusy() {
        var m = PollMachine()
        #expect(m.changed() == .none)
        #expect(m.timerFired() == .none)
        #expect(m.mounted() == .claimAndPoll)
        #expect(m.mounted() == .none)
        #expect(m.polled(busy: true) == .pollAfter(PollMachine.busyInterval))
        #expect(m.state == .waiting)
        // A change while a round is scheduled waits for it.
        #expect(m.changed() == .none)
        #expect(m.timerFired() == .poll)
        #expect(m.polled(busy: true, onlyRetries: true) == .pollAfter(PollMachine.retryInterval))
        #expect(m.timerFired() == .poll)
        #expect(m.polled(busy: false) == .none)
        #expect(m.state == .idle)
        // At idle nothing is scheduled, and a stray timer does nothing.
        #expect(m.timerFired() == .none)
        #expect(m.changed() == .poll)
    }

    @Test func pollsMoreOftenWithThePerFileQueue() {
        var m = PollMachine()
        m.perFileQueue = true
        _ = m.mounted()
        #expect(m.polled(busy: true) == .pollAfter(PollMachine.queueInterval))
        #expect(m.timerFired() == .poll)
        // Failed uploads wait for rclone's own retry, queue or not.
        #expect(m.polled(busy: true, onlyRetries: true) == .pollAfter(PollMachine.retryInterval))
    }

    @Test func aChangeDuringARoundAsksAgain() {
        var m = PollMachine()
        _ = m.mounted()
        #expect(m.changed() == .none)
        #expect(m.state == .polling(again: true))
        #expect(m.polled(busy: false) == .poll)
        #expect(m.polled(busy: false) == .none)
    }

    @Test func unreachableBacksOffThenRecovers() {
        var m = PollMachine()
        _ = m.mounted()
        #expect(m.pollFailed() == .pollAfter(.milliseconds(250)))
        #expect(m.timerFired() == .poll)
        #expect(m.pollFailed() == .pollAfter(.milliseconds(500)))
        for _ in 0..<10 {
            #expect(m.timerFired() == .poll)
            _ = m.pollFailed()
        }
        #expect(m.state == .unreachable(failures: 12))
        // A failure outside a round (a stray answer) changes nothing.
        #expect(m.pollFailed() == .none)
        #expect(m.timerFired() == .poll)
        #expect(m.pollFailed() == .pollAfter(.seconds(10)))
        #expect(m.timerFired() == .poll)
        #expect(m.polled(busy: false) == .none)
    }

    @Test func unmountingUnclaimsAndStopsPolling() {
        var m = PollMachine()
        _ = m.mounted()
        _ = m.polled(busy: true)
        #expect(m.unmounted() == .unclaim)
        #expect(m.unmounted() == .none)
        #expect(m.timerFired() == .none)
        #expect(m.changed() == .none)
        #expect(m.pollFailed() == .none)
        #expect(m.mounted() == .claimAndPoll)
    }
}

@Suite struct TrackerTests {
    @Test func onlyChangesAreSetAndSyncedPathsLeave() {
        var t = Tracker()
        t.changed("a", gen: 4)
        t.changed("b", gen: 2)
        t.changed("a", gen: 3)  // an older report does not win
        var sets = t.apply(["a": .pending("waiting for upload"), "b": .syncing(progress: 10, "x")])
        #expect(sets.map(\.name) == ["a", "b"] && sets.map(\.gen) == [4, 2])
        #expect(t.apply(["a": .pending("waiting for upload"), "b": .syncing(progress: 10, "x")]).isEmpty)
        sets = t.apply(["a": .synced(.local), "b": .syncing(progress: 20, "x")])
        #expect(sets.map(\.name) == ["a", "b"])
        #expect(t.names == ["b"])
        t.stale("b")
        #expect(t.apply(["b": .syncing(progress: 20, "x")]).count == 1)
        t.forget("b")
        #expect(t.isEmpty)
    }
}

@Suite struct MountTableTests {
    @Test func findsTheRcloneMountByItsEscapedPath() {
        let info = """
            22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/root rw
            98 22 0:55 / /tmp/my\\040drive rw,nosuid,nodev,relatime shared:50 - fuse.rclone gdrive: rw,user_id=1000,group_id=1000
            99 22 0:56 / /tmp/other rw,relatime shared:51 - fuse.sshfs host: rw
            """
        #expect(MountWatch.isRcloneMount(info, at: "/tmp/my drive"))
        #expect(!MountWatch.isRcloneMount(info, at: "/tmp/other"))
        #expect(!MountWatch.isRcloneMount(info, at: "/tmp"))
    }

    /// /proc files say their size is 0; the table must be read to its end however long it is
    /// (a booted container's passed 4 KB and the rclone mount after that page was missed).
    /// smaps is always longer than a page, and ends with a whole line.
    @Test func readsAProcFileToItsEnd() {
        let smaps = MountWatch.readAll("/proc/self/smaps")
        #expect(smaps.utf8.count > 4 * 4096)
        #expect(smaps.hasSuffix("\n"))
        #expect(MountWatch.readAll("/proc/self/mountinfo").hasSuffix("\n"))
    }
}

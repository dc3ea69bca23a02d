import NIOCore
import NIOEmbedded
import Testing
import SyncBadgeCore
@testable import SyncBadgeServer

/// SetPipeline: barriers, settling and the group commit, event by event, with no I/O.
@Suite struct SetPipelineTests {
    typealias Pipeline = SetPipeline<String, String>

    @Test func setsArrivingWhileABarrierIsOutShareTheNextOne() {
        var p = Pipeline()
        let first = p.arrived("a")
        #expect(first != nil)
        let barrier1 = p.arrived("b")
        #expect(barrier1 == nil)
        let barrier2 = p.arrived("c")
        #expect(barrier2 == nil)
        // Another barrier (a settling one, say) applies nothing.
        let reached3 = p.barrierReached(first! + 100)
        #expect(reached3 == nil)
        let r1 = p.barrierReached(first!)
        #expect(r1?.apply == ["a"])
        let second = r1?.next
        #expect(second != nil && second != first)
        let r2 = p.barrierReached(second!)
        #expect(r2?.apply == ["b", "c"] && r2?.next == nil)
        let reached4 = p.barrierReached(second!)
        #expect(reached4 == nil)
    }

    @Test func settlingEndsWithTheNextBarrier() {
        var p = Pipeline()
        let set = p.arrived("a")!
        _ = p.barrierReached(set)
        let settle = p.settle([4, 5])!
        #expect(p.isSettling(4) && p.isSettling(5) && !p.isSettling(6))
        // An earlier barrier does not end it.
        _ = p.barrierReached(settle - 1)
        #expect(p.isSettling(4))
        _ = p.barrierReached(settle)
        #expect(!p.isSettling(4) && !p.isSettling(5))
        let settled5 = p.settle([])
        #expect(settled5 == nil)
    }

    @Test func oneCommitAtATimeAndWaitersGoWithTheNext() {
        var p = Pipeline()
        let wanted6 = p.commitWanted(nil, hasChanges: false)
        #expect(!wanted6)
        let wanted7 = p.commitWanted("w1", hasChanges: false)
        #expect(wanted7)
        let c1 = p.begin(fresh: StoreChanges())
        #expect(c1.waiters == ["w1"] && c1.batches.isEmpty && p.commits == 0)
        // In flight: later ones wait.
        let wanted8 = p.commitWanted("w2", hasChanges: true)
        #expect(!wanted8)
        let end = p.finished(c1.batches, succeeded: true)
        #expect(end.next == .commitAgain && end.health == .unchanged)
        // A commit with nothing to write (a waiter's) counts in neither.
        #expect(p.commits == 0 && p.commitsDone == 0)
        let wanted9 = p.commitWanted(nil, hasChanges: true)
        #expect(wanted9)
        let commit10 = p.begin(fresh: StoreChanges())
        #expect(commit10.waiters == ["w2"])
    }

    @Test func aNewRootsRowGoesFirst() {
        var p = Pipeline()
        p.rootRowStarted()
        let wanted11 = p.commitWanted("w", hasChanges: true)
        #expect(!wanted11)
        p.rootRowStored()
        let wanted12 = p.commitWanted(nil, hasChanges: true)
        #expect(wanted12)
    }

    @Test func aFailedCommitIsKeptAndRetriedWithBackoff() {
        var p = Pipeline()
        var batch = StoreChanges()
        batch.deletions.append(.init(root: [1], relativePath: []))
        _ = p.commitWanted(nil, hasChanges: true)
        let c1 = p.begin(fresh: batch)
        #expect(c1.batches.count == 1 && p.commits == 1 && p.commitsDone == 0)
        let fail1 = p.finished(c1.batches, succeeded: false)
        // Ended, though not stored: `commits-done` says nothing is being written.
        #expect(p.commitsDone == 1)
        #expect(fail1 == (.retry(after: .milliseconds(250)), .failing))
        // A new SET tries at once, the kept batch first; while the timer is armed, no new one.
        let wanted13 = p.commitWanted("w", hasChanges: false)
        #expect(wanted13)
        let c2 = p.begin(fresh: batch)
        #expect(c2.batches.count == 2)
        let end14 = p.finished(c2.batches, succeeded: false)
        #expect(end14 == (.waitForRetry, .unchanged))
        p.retryFired()
        let keptBatches = p.commitWanted(nil, hasChanges: false)
        #expect(keptBatches)
        let c3 = p.begin(fresh: StoreChanges())
        #expect(c3.batches.count == 2)
        let end15 = p.finished(c3.batches, succeeded: false)
        #expect(end15 == (.retry(after: .milliseconds(500)), .unchanged))
        p.retryFired()
        _ = p.commitWanted(nil, hasChanges: false)
        let c4 = p.begin(fresh: StoreChanges())
        let end16 = p.finished(c4.batches, succeeded: true)
        #expect(end16 == (.commitAgain, .recovered))
        let wanted17 = p.commitWanted(nil, hasChanges: false)
        #expect(!wanted17)
        // The backoff starts again from the first delay.
        _ = p.commitWanted(nil, hasChanges: true)
        let c5 = p.begin(fresh: batch)
        let end18 = p.finished(c5.batches, succeeded: false)
        #expect(end18 == (.retry(after: .milliseconds(250)), .failing))
    }

    @Test func aRemovedRootsKeptChangesAreNotWrittenAgain() {
        var p = Pipeline()
        var batch = StoreChanges()
        batch.upserts.append(.init(root: [1], relativePath: [2], record: EntryRecord(kind: .file, state: .pending, gen: 1)))
        batch.upserts.append(.init(root: [3], relativePath: [4], record: EntryRecord(kind: .file, state: .pending, gen: 2)))
        batch.deletions.append(.init(root: [1], relativePath: [5]))
        _ = p.commitWanted(nil, hasChanges: true)
        let c1 = p.begin(fresh: batch)
        _ = p.finished(c1.batches, succeeded: false)
        p.forgetRoot([1])
        p.retryFired()
        _ = p.commitWanted(nil, hasChanges: false)
        let kept = p.begin(fresh: StoreChanges()).batches
        #expect(kept.count == 1 && kept[0].upserts.map(\.root) == [[3]] && kept[0].deletions.isEmpty)
    }

    @Test func theBackoffStopsGrowingAtThirtySeconds() {
        var p = Pipeline()
        var delays: [TimeAmount] = []
        for _ in 0..<10 {
            _ = p.commitWanted(nil, hasChanges: true)
            let c = p.begin(fresh: StoreChanges())
            if case .retry(let d) = p.finished(c.batches, succeeded: false).next { delays.append(d) }
            p.retryFired()
        }
        #expect(delays.first == .milliseconds(250) && delays.last == .seconds(30))
        #expect(zip(delays, delays.dropFirst()).allSatisfy { $0 <= $1 })
    }

    /// The retry's timer is the pipeline's to hold: armed once per failure, cancelled by a stop.
    @Test func theRetryTimerIsArmedOnceAndAStopCancelsIt() {
        let loop = EmbeddedEventLoop()
        func timer() -> (Scheduled<Void>, () -> Bool) {
            var cancelled = false
            let t = loop.scheduleTask(in: .seconds(60)) {}
            t.futureResult.whenFailure { _ in cancelled = true }
            return (t, { cancelled })
        }
        var p = Pipeline()
        var batch = StoreChanges()
        batch.lastGen = 1
        _ = p.commitWanted("w", hasChanges: true)
        let c = p.begin(fresh: batch)
        #expect(p.finished(c.batches, succeeded: false).next == .retry(after: .milliseconds(250)))
        let (first, firstCancelled) = timer()
        p.retryArmed(first)
        // Not asked for: a second timer would retry twice, so it is cancelled.
        let (second, secondCancelled) = timer()
        p.retryArmed(second)
        #expect(secondCancelled() && !firstCancelled())
        p.cancelRetry()
        #expect(firstCancelled())
        // Nothing armed now: the next failure arms the retry again.
        _ = p.commitWanted("w", hasChanges: false)
        let again = p.begin(fresh: StoreChanges())
        #expect(p.finished(again.batches, succeeded: false).next == .retry(after: .milliseconds(500)))
    }
}

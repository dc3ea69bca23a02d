import Testing
@testable import SyncBadgeWatcher

@Suite struct BarrierQueueTests {
    @Test func eachTouchReleasesTheOldestGroup() {
        var q = BarrierQueue()
        #expect(q.asked([]) == false)
        #expect(q.touchSeen() == [])
        #expect(q.asked([1, 2]) == true)
        #expect(q.asked([3]) == true)
        #expect(q.touchSeen() == [1, 2])
        #expect(q.touchSeen() == [3])
        // A touch with nothing held (the file touched by someone else) releases nothing.
        #expect(q.touchSeen() == [])
    }
}

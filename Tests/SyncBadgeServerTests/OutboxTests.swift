import NIOCore
import Testing
import SyncBadgeCore
@testable import SyncBadgeServer

/// Outbox: each client's lines, in order, handed over once per delivery.
@Suite struct OutboxTests {
    func text(_ chunk: ByteBuffer?) -> String { chunk.map { String(buffer: $0) } ?? "" }

    @Test func linesAreHandedOverInOrderOncePerClient() {
        var o = Outbox()
        o.open(1)
        o.open(2)
        o.ok(1, "a")
        o.error(2, "b", "not-found", message: Array("/x y".utf8))
        o.writeLines(1, Array("a ITEM /r\n".utf8))
        var ready: [Int] = []
        o.takeReady(into: &ready)
        #expect(ready == [1, 2])
        #expect(!o.hasReady)
        #expect(o.heldBytes(1) == "a OK\na ITEM /r\n".utf8.count)
        let one = o.take(1)
        #expect(text(one.chunk) == "a OK\na ITEM /r\n" && !one.close)
        #expect(text(o.take(2).chunk) == "b ERR not-found message=/x%20y\n")
        #expect(o.take(1).chunk == nil && o.heldBytes(1) == 0)
        // Listed again by its next line only.
        o.ok(2, "c")
        ready = []
        o.takeReady(into: &ready)
        #expect(ready == [2])
    }

    @Test func aClosedClientGetsWhatWasHeldThenNothing() {
        var o = Outbox()
        o.open(1)
        var bye = WireLine("*")
        bye.word("BYE")
        bye.word("shutdown")
        o.write(1, bye)
        o.close(1)
        o.ok(1, "late")
        var ready: [Int] = []
        o.takeReady(into: &ready)
        #expect(ready == [1])
        let last = o.take(1)
        #expect(text(last.chunk) == "* BYE shutdown\n" && last.close)
        // A client gone: nothing is held for it, nor listed.
        o.closed(1)
        o.ok(1, "x")
        #expect(!o.hasReady && o.heldBytes(1) == 0)
    }

    /// A small chunk is copied into a buffer of its own size, so that a held write does not
    /// pin a buffer grown for a big listing; a mostly full one is handed over as it is.
    @Test func smallChunksAreCopiedAndFullBuffersHandedOver() {
        var o = Outbox()
        o.open(1)
        o.writeLines(1, Array(repeating: UInt8(ascii: "x"), count: 100_000) + [UInt8(ascii: "\n")])
        let big = o.take(1).chunk
        #expect(big?.readableBytes == 100_001 && big!.capacity >= 100_001)
        o.ok(1, "t")
        let small = o.take(1).chunk
        #expect(small?.readableBytes == 5 && small!.capacity < 64)
    }
}

/// Clients: each client's identity and what it observes, by id; the change feed's followers.
@Suite struct ClientsTests {
    @Test func aClosedClientObservesNothing() {
        var c = Clients()
        let a = c.opened(peerPID: 10), b = c.opened(peerPID: 11)
        #expect(c[a]?.name == "pid-10" && c.all == [a, b] && c.count == 2)
        c.observers.observe(5, by: a)
        let gone = c.closed(a)
        #expect(gone?.name == "pid-10")
        #expect(!c.observers.isObserving(a, 5) && c.all == [b] && !c.isActive(a))
        #expect(c.closed(a) == nil)
    }

    @Test func aClosedClientOrARemovedRootLeavesNoFollowerBehind() {
        var f = ChangeFeed()
        f.subscribe(1, to: [1])
        f.subscribe(2, to: [1])
        f.subscribe(2, to: [2])
        #expect(f.subscribers[[1]] == [1, 2] && f.isSubscribed(1, to: [1]) && !f.isSubscribed(1, to: [2]))
        f.closed(1)
        #expect(f.subscribers[[1]] == [2] && !f.isSubscribed(1, to: [1]))
        f.rootRemoved([1])
        #expect(f.subscribers[[1]] == nil && !f.isSubscribed(2, to: [1]) && f.isSubscribed(2, to: [2]))
        f.closed(2)
        #expect(f.isEmpty)
    }

    /// A slot is reused by the next client, under a new id: what is said to the old id finds
    /// nobody, and the slots are as many as the clients connected at once.
    @Test func aClosedClientsIdNeverFindsTheNextClientInItsSlot() {
        var c = Clients()
        var o = Outbox()
        let a = c.opened(peerPID: 10)
        o.open(a)
        #expect(c.closed(a) != nil)
        o.closed(a)
        let b = c.opened(peerPID: 11)
        o.open(b)
        #expect(ClientSlot.index(of: b) == ClientSlot.index(of: a) && b != a)
        #expect(c[a] == nil && c.gate(a) == nil && !c.isActive(a) && c.closed(a) == nil)
        #expect(c[b]?.name == "pid-11" && c.count == 1 && c.all == [b])
        o.ok(a, "old")
        #expect(!o.hasReady && o.heldBytes(b) == 0)
        o.ok(b, "new")
        #expect(o.take(a).chunk == nil && o.heldBytes(b) == 7)
        // Setting a field of a gone client's id changes nothing.
        c[a]?.name = "x"
        #expect(c[b]?.name == "pid-11")
        let d = c.opened(peerPID: 12)
        #expect(ClientSlot.index(of: d) != ClientSlot.index(of: b) && c.count == 2)
        // 0, a free slot's mark, is nobody's id: slot 0 is free now.
        #expect(c.closed(b) != nil)
        o.closed(b)
        #expect(c[0] == nil && c.gate(0) == nil && !c.isActive(0) && c.closed(0) == nil)
        o.ok(0, "none")
        var ready: [Int] = []
        o.takeReady(into: &ready)
        #expect(o.heldBytes(0) == 0 && o.take(0).chunk == nil && !ready.contains(0))
    }

    /// A client's output is one state: writable, backed up, or closing, which is final.
    @Test func aClosingClientsOutputStaysClosing() {
        var c = Clients.Client(name: "x")
        #expect(c.output == .writable && c.isActive)
        let backedUp = c.writabilityChanged(false)
        #expect(backedUp && c.output == .backedUp)
        let closed = c.close()
        #expect(closed && c.output == .closing && !c.isActive)
        let closedAgain = c.close()
        #expect(!closedAgain)
        let writable = c.writabilityChanged(true)
        #expect(!writable && c.output == .closing)
    }

    @Test func requestsQueueBehindOneThatWaits() {
        var q = RequestQueue()
        #expect(q.isIdle)
        q.awaitAnswer()
        q.enqueue(ByteBuffer(string: "1 SET synced /r/a"))
        q.enqueue(ByteBuffer(string: "2 SET synced /r/b"))
        q.enqueue(ByteBuffer(string: "3 PING"))
        #expect(!q.isIdle && q.next() == nil)
        #expect(q.answered() && !q.answered())
        #expect(q.takeSets().map(\.tag) == ["1", "2"])
        #expect(q.next().map { String(buffer: $0) } == "3 PING")
        #expect(q.isIdle && q.next() == nil)
    }
}

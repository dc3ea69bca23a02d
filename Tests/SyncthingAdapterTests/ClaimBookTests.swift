import Testing
@testable import SyncthingAdapter

/// The provider connection's claims: a refused claim is not held, and is tried again when the
/// root is free or the adapter names its roots again.
@Suite struct ClaimBookTests {
    @Test func aRefusedClaimIsNotHeldAndIsTriedWhenTheRootIsFree() {
        var b = ClaimBook()
        let first = b.follow(["/a", "/b"])
        #expect(first == [.claim("/a"), .claim("/b")])
        b.claimed("/a")
        let news = b.refused("/b", code: "busy")
        #expect(news)
        #expect(b.held == ["/a"])
        #expect(b.claims.isEmpty)
        // Still another provider's, or still scanning: nothing to try.
        let held = b.root("/b", removed: false, free: false)
        #expect(held.isEmpty)
        // Another root's push, free or not, says nothing of this one.
        let other = b.root("/c", removed: false, free: true)
        #expect(other.isEmpty)
        let free = b.root("/b", removed: false, free: true)
        #expect(free == [.claim("/b")])
        // The same refusal again is not news; another reason is.
        let same = b.refused("/b", code: "busy")
        #expect(!same)
        let another = b.refused("/b", code: "not-found")
        #expect(another)
        b.claimed("/b")
        #expect(b.held == ["/a", "/b"] && b.refused.isEmpty)
        // Said again once it was held in between.
        let afterHeld = b.refused("/b", code: "busy")
        #expect(afterHeld)
    }

    @Test func aRemovedRootFreesTheRootsItOverlapped() {
        var b = ClaimBook()
        _ = b.follow(["/data/photos", "/data/photos2"])
        _ = b.refused("/data/photos", code: "busy")
        _ = b.refused("/data/photos2", code: "busy")
        // `/data/photos2` does not overlap `/data/photos/2026`.
        let inside = b.root("/data/photos/2026", removed: true, free: false)
        #expect(inside == [.claim("/data/photos")])
        _ = b.refused("/data/photos", code: "busy")
        let outside = b.root("/data", removed: true, free: false)
        #expect(outside == [.claim("/data/photos"), .claim("/data/photos2")])
        // A refused root removed itself is not claimed again: the claim would add it back.
        _ = b.refused("/data/photos", code: "not-found")
        _ = b.refused("/data/photos2", code: "busy")
        let itself = b.root("/data/photos", removed: true, free: true)
        #expect(itself.isEmpty)
    }

    @Test func followGivesUpWhatIsNoLongerWantedAndRetriesRefusals() {
        var b = ClaimBook()
        _ = b.follow(["/a", "/b", "/c"])
        b.claimed("/a")
        b.claimed("/b")
        _ = b.refused("/c", code: "busy")
        let shrunk = b.follow(["/b", "/c"])
        #expect(shrunk == [.unclaim("/a"), .claim("/c")])
        b.unclaimed("/a")
        #expect(b.held == ["/b"])
        // A refusal said before is not news on the retry that `follow` made.
        let retried = b.refused("/c", code: "busy")
        #expect(!retried)
        // A root dropped and named again later is said again.
        _ = b.follow(["/b"])
        _ = b.follow(["/b", "/c"])
        let again = b.refused("/c", code: "busy")
        #expect(again)
    }

    /// REMOVE-ROOT ends a claim: the book holds the root no more, does not claim it while it is
    /// gone (a claim would add it back), and claims it once a push says it is a root again.
    @Test func aHeldRootThatIsRemovedIsClaimedAgainWhenItIsBack() {
        var b = ClaimBook()
        _ = b.follow(["/a", "/b"])
        b.claimed("/a")
        b.claimed("/b")
        let gone = b.root("/b", removed: true, free: false)
        #expect(gone.isEmpty)
        #expect(b.held == ["/a"])
        #expect(b.claims.isEmpty)
        let back = b.root("/b", removed: false, free: true)
        #expect(back == [.claim("/b")])
        // Not said as a refusal when the claim then goes through.
        b.claimed("/b")
        #expect(b.held == ["/a", "/b"] && b.refused.isEmpty)
    }
}

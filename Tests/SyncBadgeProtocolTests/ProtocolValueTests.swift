import Testing
import SyncBadgeProtocol

private func b(_ s: String) -> [UInt8] { Array(s.utf8) }
private func message(_ s: String) throws -> WireMessage { try #require(WireMessage(line: b(s))) }
private func text(_ l: WireLine) -> String { String(decoding: l.terminated(), as: UTF8.self) }

/// The typed requests and answers: each says the bytes the clients spelled by hand before,
/// and reads back what it writes.
@Suite struct ProtocolValueTests {
    @Test func aSetSaysEveryFieldInTheUsageOrder() {
        let s = SetRequest(.syncing, b("/r/a b"), gen: 3, progress: 40, message: "up load", badge: "mine", recursive: true, lease: 60)
        #expect(text(s.request.wireLine(tag: "7")) == "7 SET syncing /r/a%20b gen=3 progress=40 message=up%20load badge=mine recursive=1 lease=60\n")
        #expect(text(SetRequest(.synced, b("/r")).request.wireLine(tag: "p1")) == "p1 SET synced /r\n")
        #expect(s.description == "SET syncing /r/a%20b gen=3 progress=40 message=up%20load badge=mine recursive=1 lease=60")
    }

    @Test func helloAndPathRequests() {
        #expect(text(Request.hello(role: .provider, name: "git", rootPushes: false).wireLine(tag: "1"))
                == "1 HELLO proto=1 role=provider name=git roots=0\n")
        #expect(text(Request.hello(role: .admin, name: "cli").wireLine(tag: "1")) == "1 HELLO proto=1 role=admin name=cli\n")
        #expect(text(Request.addRoot(b("/home/me/a dir")).wireLine(tag: "2")) == "2 ADD-ROOT /home/me/a%20dir\n")
        #expect(text(Request.status([b("/a"), b("/b")]).wireLine(tag: "3")) == "3 STATUS /a /b\n")
        #expect(text(Request.subscribeChanges(b("/r")).wireLine(tag: "4")) == "4 SUBSCRIBE-CHANGES /r\n")
        #expect(text(Request.bye.wireLine(tag: "5")) == "5 BYE\n")
        #expect(text(Request.answer("t1", message: "done it", failed: true).wireLine(tag: "6")) == "6 ANSWER t1 message=done%20it failed=1\n")
        #expect(text(Request.defineMenu(kind: "items", id: "git.stage", title: "Stage", states: [.pending, .conflict], enabled: false)
            .wireLine(tag: "8")) == "8 DEFINE-MENU items git.stage title=Stage states=pending,conflict enabled=0\n")
    }

    @Test func everyVerbIsItsOwnName() {
        for v in Verb.allCases { #expect(Verb(rawValue: v.rawValue) == v) }
        #expect(Verb.addRoot.allowed(for: .admin) && !Verb.addRoot.allowed(for: .provider))
        #expect(Verb.set.role == .provider)
        #expect(Role(rawValue: "viewer") == .viewer)
    }

    @Test(arguments: [
        Item(path: b("/r/d d"), state: .pending, badge: "pending", kind: .dir, gen: 9,
             counts: { var c = StateCounts(); c[.pending] = 2; c[.synced] = 1; return c }()),
        Item(path: b("/r/f"), state: .syncing, badge: "mine", kind: .file, progress: 40, message: "up load", gen: 3),
        Item(path: b("/elsewhere/x"), state: nil, badge: "outside", kind: .gone, gen: nil),
    ])
    func anItemReadsBackWhatItWrites(_ item: Item) throws {
        let m = try #require(WireMessage(line: item.wireLine(head: "*").bytes))
        #expect(Item(m) == item)
    }

    @Test func anItemOfAnotherProtocolIsNoItem() throws {
        let m = try #require(WireMessage(line: b("* ITEM /r/f rotten badge=x kind=file gen=1")))
        #expect(Item(m) == nil)
        let plain = try #require(Item(try message("1 ITEM /r/f synced gen=2")))
        #expect(plain.badge == "synced" && plain.kind == .file && plain.stateName == "synced")
    }

    @Test func setAnswers() throws {
        #expect(SetOutcome(ok: try message("4 OK stale=1 gen=9")) == .stale(gen: 9))
        #expect(SetOutcome(ok: try message("4 OK gen=9")) == .applied)
    }

    @Test func rootLines() throws {
        let r = try #require(Root(try message("* ROOT /r/a%20b error provider=git watches=3 scanning=1 message=disk%20full")))
        #expect(r == Root(path: b("/r/a b"), state: .error, provider: "git", watches: 3, scanning: true, message: "disk full"))
        let gone = try #require(Root(try message("* ROOT /r removed")))
        #expect(gone.state == nil && gone.stateName == "removed" && !gone.scanning)
    }

    @Test func pushesForProviders() throws {
        let c = try #require(Changed(try message("* CHANGED /r/new%20name gen=12 what=move from=/r/old")))
        #expect(c == Changed(path: b("/r/new name"), gen: 12, what: .move, from: b("/r/old")))
        #expect(Changed(try message("* CHANGED /r/x gen=1 what=teleport"))?.what == nil)
        let a = try #require(ActionCall(try message("* ACTION git.stage target=/r /r/a /r/b from=nautilus reply=t7")))
        #expect(a.id == "git.stage" && a.paths == [b("/r/a"), b("/r/b")] && a.target == b("/r") && a.from == "nautilus" && a.reply == "t7")
        #expect(ActionCall(try message("* CHANGED /r/x gen=1")) == nil)
    }

    @Test func everyKindIsItsOwnName() throws {
        for k in MessageKind.allCases { #expect(try message("* \(k.rawValue)").messageKind == k) }
        #expect(try message("* FUTURE-THING").messageKind == nil)
    }

    @Test func badgesAndMenuItemsReadBackWhatTheyWrite() throws {
        let badge = Badge(id: "syncing", label: "Syncing", glyph: "⟳", ascii: "~", color: "1;34", image: b("/usr/share/x y.svg"))
        #expect(Badge(try #require(WireMessage(line: badge.wireLine(head: "1").bytes))) == badge)
        let item = MenuItem(id: "git.stage", title: "Stage it", enabled: false)
        #expect(MenuItem(try #require(WireMessage(line: item.wireLine(head: "2").bytes))) == item)
        #expect(MenuItem(try message("2 BADGE x label=a glyph=b ascii=c color=0")) == nil)
    }

    @Test func toolbarLinesReadBackWhatTheyWrite() throws {
        for t in [ProviderToolbar(provider: "git", item: ToolbarItem(name: "main ↑2", tooltip: "git: /src (main)", image: b("/i/g.svg"))),
                  ProviderToolbar(provider: "git", item: nil)] {
            #expect(ProviderToolbar(try #require(WireMessage(line: t.wireLine(head: "*").bytes))) == t)
        }
        #expect(text(ProviderToolbar(provider: "st", item: nil).wireLine(head: "*")) == "* TOOLBAR provider=st removed\n")
    }

    /// `PathBytes.same` against the standard library's byte-by-byte comparison: every length
    /// around the eight-byte steps, a difference at every position, slices that do not start
    /// at their array's start, and different lengths.
    @Test func sameBytesAgreesWithElementsEqual() {
        for n in 0...27 {
            let base = (0..<n + 5).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let a = base[3..<(3 + n)]
            let copy = Array(a)[...]
            #expect(PathBytes.same(a, copy), "length \(n)")
            for k in 0..<n {
                var other = Array(a)
                other[k] ^= 0x40
                #expect(!PathBytes.same(a, other[...]), "length \(n), differs at \(k)")
            }
            #expect(!PathBytes.same(a, base[3..<(3 + n + 1)]), "length \(n) against \(n + 1)")
        }
    }
}

import Testing
@testable import SyncBadgeCore
@testable import SyncBadgeProtocol

/// PROTOCOL.md, "Framing" and "Requests, responses, pushes": splitting request lines.
@Suite struct WireParserTests {
    func request(_ line: String) -> WireRequest? {
        if case .request(let r) = WireParser.parse(b(line)) { return r }
        Issue.record("not a request: \(line) → \(WireParser.parse(b(line)))")
        return nil
    }

    @Test func emptyLinesAreEmpty() {
        #expect(WireParser.parse(b("")) == .empty)
        #expect(WireParser.parse(b("\r")) == .empty)
    }

    @Test func simpleRequest() throws {
        let r = try #require(request("1 PING"))
        #expect(r == WireRequest(tag: "1", verb: "PING"))
    }

    @Test func trailingCRIsStripped() throws {
        let r = try #require(request("t.1 STATUS /a\r"))
        #expect(r.verb == "STATUS")
        #expect(r.fields == [.init(b("/a"))])
    }

    @Test(arguments: ["a", "A-z_0.9", String(repeating: "x", count: 32), "-", "."])
    func validTags(_ tag: String) throws {
        let r = try #require(request(tag + " PING"))
        #expect(r.tag == tag)
    }

    @Test(arguments: [String(repeating: "x", count: 33) + " PING", "a/b PING", "* PING", " PING",
                      "a+b PING", "é PING", "a%20 PING", "\u{1}x PING"])
    func invalidTags(_ line: String) {
        #expect(WireParser.parse(b(line)) == .badTag)
    }

    @Test(arguments: [
        "1",                     // no verb
        "1 ",                    // empty verb
        "1  PING",               // empty verb field
        "1 PING ",               // trailing space: an empty last field
        "1 STATUS  /a",          // two spaces
        "1 STATUS /a  /b",
        "1 %ZZ",                 // malformed escape in the verb
        "1 STATUS /a%2",         // ... in a path
        "1 STATUS /a%",
        "1 SET pending /a message=%G0", // ... in an option value
        "1 SET pending /a x=%",
    ])
    func malformedLines(_ line: String) {
        #expect(WireParser.parse(b(line)) == .malformed(tag: "1"))
    }

    @Test func onlyOneTrailingCRIsStripped() throws {
        // The framing allows one CR before the LF; another one is data (a path may hold a CR).
        let r = try #require(request("1 STATUS /a\r\r"))
        #expect(r.fields == [.init(b("/a\r"))])
    }

    @Test func optionsAreRecognisedByFormAnywhereAfterTheVerb() throws {
        let r = try #require(request("7 SET gen=5 pending /a%20b progress=50 message=hello%20world"))
        #expect(r.verb == "SET")
        #expect(r.fields.map(\.bytes) == [b("pending"), b("/a b")])
        #expect(r.option("gen") == "5")
        #expect(r.option("progress") == "50")
        #expect(r.option("message") == "hello world")
        #expect(r.paths == [b("/a b")])
    }

    @Test func optionKeyForm() throws {
        let r = try #require(request("1 X a=1 x-1=2 k9=3 empty= Key=4 1a=5 a_b=6 =7 a.b=8 -a=9"))
        #expect(r.options == ["a": b("1"), "x-1": b("2"), "k9": b("3"), "empty": []])
        #expect(r.fields.map(\.string) == ["Key=4", "1a=5", "a_b=6", "=7", "a.b=8", "-a=9"])
    }

    @Test func aFieldStartingWithSlashIsAlwaysAPath() throws {
        let r = try #require(request("1 STATUS /a=b /x/k=v"))
        #expect(r.options.isEmpty)
        #expect(r.paths == [b("/a=b"), b("/x/k=v")])
        #expect(r.fields.allSatisfy { $0.isPath })
    }

    @Test func unknownOptionsAreKeptButHarmless() throws {
        let r = try #require(request("1 HELLO proto=1 role=viewer future-thing=xyz"))
        #expect(r.fields.isEmpty)
        #expect(r.option("proto") == "1")
        #expect(r.option("role") == "viewer")
        #expect(r.option("future-thing") == "xyz")
    }

    @Test func fieldsArePercentDecoded() throws {
        let r = try #require(request("1 STATUS /a%0Ab%25 /%FF%fe /caf%C3%A9 /é"))
        #expect(r.paths == [b("/a\nb%"), [0x2F, 0xFF, 0xFE], b("/café"), b("/é")])
    }

    @Test func optionValuesMayHoldEqualsSigns() throws {
        let r = try #require(request("1 X message=a=b"))
        #expect(r.option("message") == "a=b")
    }

    @Test func idsAreNeverOptions() {
        #expect(WireParser.isID(b(String(repeating: "a", count: 64))))
        #expect(!WireParser.isID(b(String(repeating: "a", count: 65))))
        #expect(!WireParser.isID(b("")))
        #expect(!WireParser.isID(b("a=b")))
    }
}

@Suite struct WireLineTests {
    @Test func fieldsArePercentEncoded() {
        var line = WireLine("1")
        line.word("ITEM")
        line.field(b("/a b\n%"))
        line.option("message", "x y")
        line.option("raw", [0xFF, 0x41])
        #expect(line.bytes == b("1 ITEM /a%20b%0A%25 message=x%20y raw=%FFA"))
        #expect(line.terminated() == b("1 ITEM /a%20b%0A%25 message=x%20y raw=%FFA\n"))
    }

    @Test func encodedLinesParseBackToTheSameBytes() throws {
        let weird: [UInt8] = [0x2F, 0x61, 0x20, 0x0D, 0x0A, 0xFF, 0xC3, 0xA9, 0x25, 0x3D, 0x00]
        var line = WireLine("42")
        line.word("STATUS")
        line.field(weird)
        line.option("message", b("k=v and more"))
        guard case .request(let r) = WireParser.parse(line.bytes) else {
            Issue.record("did not parse")
            return
        }
        #expect(r.paths == [weird])
        #expect(r.option("message") == "k=v and more")
    }
}

@Suite struct WireMessageTests {
    @Test func parsesAnItemPush() throws {
        let m = try #require(WireMessage(line: b("* ITEM /a%20b pending badge=pending kind=file gen=3")))
        #expect(m.head == "*")
        #expect(m.isPush)
        #expect(m.kind == "ITEM")
        #expect(m.fields.map(\.bytes) == [b("/a b"), b("pending")])
        #expect(m.option("badge") == "pending")
        #expect(m.option("kind") == "file")
        #expect(m.option("gen") == "3")
    }

    @Test func parsesATaggedResponse() throws {
        let m = try #require(WireMessage(line: b("t1 OK proto=1 caps=observe,menus\r")))
        #expect(m.head == "t1")
        #expect(!m.isPush)
        #expect(m.kind == "OK")
        #expect(m.option("caps") == "observe,menus")
    }

    @Test(arguments: ["", "OK", "a/b OK", "** ITEM", "* ITEM  /a", "* ITEM /a%G0", "* ITEM /a "])
    func rejectsMalformedLines(_ line: String) {
        #expect(WireMessage(line: b(line)) == nil)
    }

    /// An empty field is malformed ("Framing"), the kind included.
    @Test(arguments: ["* ", "1 ", "1  OK"])
    func rejectsAnEmptyKind(_ line: String) {
        #expect(WireMessage(line: b(line)) == nil)
    }

    @Test func itemViewLinesRoundTrip() throws {
        var c = StateCounts()
        c[.pending] = 2
        c[.synced] = 1
        let dir = Item(path: b("/r/d d"), state: .pending, badge: "pending", kind: .dir, gen: 9, counts: c)
        let m = try #require(WireMessage(line: dir.wireLine(head: "*").bytes))
        #expect(m.fields.map(\.bytes) == [b("/r/d d"), b("pending")])
        #expect(m.option("kind") == "dir")
        #expect(m.option("gen") == "9")
        #expect(m.option("counts").flatMap { StateCounts(wireValue: $0) } == c)

        let file = Item(path: b("/r/f"), state: .syncing, badge: "mine", kind: .file, progress: 40,
                            message: "up load", gen: 3)
        let f = try #require(WireMessage(line: file.wireLine(head: "5").bytes))
        #expect(f.head == "5")
        #expect(f.option("counts") == nil)
        #expect(f.option("badge") == "mine")
        #expect(f.option("progress") == "40")
        #expect(f.option("message") == "up load")
    }
}

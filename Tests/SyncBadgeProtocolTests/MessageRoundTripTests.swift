import Testing
import SyncBadgeProtocol

private func b(_ s: String) -> [UInt8] { Array(s.utf8) }

/// Every kind of line the daemon sends and every request a client sends has one type that
/// writes it and reads it back (PROTOCOL.md): the round trip over all of them, so that a kind
/// or verb added to the protocol needs a sample here before it compiles.
@Suite struct MessageRoundTripTests {
    /// Lines of each kind, with every optional part present and absent.
    static func samples(_ kind: MessageKind) -> [any MessageLine] {
        switch kind {
        case .ok:
            [Ok.plain, Ok(proto: 1, server: "syncbadge/0.1.0", epoch: "7f3a91c2", caps: ["observe", "menus"]),
             Ok(stale: true, gen: 9), Ok(gen: 3), Ok(count: 12), Ok(message: b("copied 3 files\n\u{FF}"))]
        case .err:
            [Err("not-found", message: b("/r/a b")), Err("unsupported-version", supported: "1"), Err("timeout")]
        case .item:
            [Item(path: b("/r/d d"), state: .pending, badge: "pending", kind: .dir, gen: 9,
                  counts: { var c = StateCounts(); c[.pending] = 2; c[.synced] = 1; return c }()),
             Item(path: b("/r/f"), state: .syncing, badge: "mine", kind: .file, progress: 40, message: "up load", gen: 3),
             Item(path: b("/elsewhere/x"), state: nil, badge: "outside", kind: .gone, gen: nil)]
        case .root:
            [Root(path: b("/r/a b"), state: .error, provider: "git", watches: 3, scanning: true, degraded: "watch-limit", message: "disk full"),
             Root(path: b("/r"), state: .synced, watches: 0), Root.removed(b("/r"))]
        case .badge:
            [Badge(id: "syncing", label: "Syncing", glyph: "⟳", ascii: "~", color: "1;34", image: b("/usr/share/x y.svg")),
             Badge(id: "mine", label: "Mine", glyph: "m", ascii: "m", color: "0")]
        case .menuItem:
            [MenuItem(id: "git.stage", title: "Stage it", enabled: false), MenuItem(id: "syncbadge.details", title: "Show details")]
        case .toolbar:
            [ProviderToolbar(provider: "git", item: ToolbarItem(name: "main ↑2", tooltip: "git: /src (main)", image: b("/i/g.svg"))),
             ProviderToolbar(provider: "st", item: ToolbarItem(name: "Pause", tooltip: "Pause every folder")),
             ProviderToolbar(provider: "git", item: nil)]
        case .stat:
            [Stat("commits-done", 12), Stat("rss-bytes", 0)]
        case .gone:
            [Gone(b("/r/a b"))]
        case .reset:
            [Reset(b("/r/d"))]
        case .changed:
            [Changed(path: b("/r/new name"), gen: 12, what: .move, from: b("/r/old")), Changed(path: b("/r/x"), gen: 1, what: .create)]
        case .resetChanges:
            [ResetChanges(b("/r"))]
        case .action:
            [ActionCall(id: "git.stage", target: b("/r"), paths: [b("/r/a"), b("/r/b c")], from: "nautilus", reply: "t7"),
             ActionCall(id: "syncthing.pause", paths: [], from: "")]
        case .bye:
            [Bye("shutdown"), Bye("too-long")]
        }
    }

    static func readsBack<T: MessageLine>(_ value: T, head: String) -> Bool {
        guard let m = WireMessage(line: value.wireLine(head: head).bytes), m.head == head, m.messageKind == T.kind else { return false }
        return T(m) == value
    }

    static func reads<T: MessageLine>(_ m: WireMessage, as type: T.Type) -> Bool { T(m) != nil }

    @Test(arguments: MessageKind.allCases)
    func everyKindReadsBackWhatItWrites(_ kind: MessageKind) {
        let samples = Self.samples(kind)
        #expect(!samples.isEmpty)
        for s in samples {
            let sameType = type(of: s).kind == kind && kind.type == type(of: s)
            #expect(sameType, "\(s)")
            let back = Self.readsBack(s, head: "*") && Self.readsBack(s, head: "tag-1")
            #expect(back, "\(s)")
        }
    }

    @Test(arguments: MessageKind.allCases)
    func aLineOfAnotherKindIsNotRead(_ kind: MessageKind) throws {
        for other in MessageKind.allCases where other != kind {
            for s in Self.samples(other) {
                let m = try #require(WireMessage(line: s.wireLine(head: "*").bytes))
                let read = Self.reads(m, as: kind.type)
                #expect(!read, "\(kind) read \(s)")
            }
        }
    }

    /// Requests of each verb, as the clients build them.
    static func samples(_ verb: Verb) -> [Request] {
        switch verb {
        case .hello: [.hello(role: .provider, name: "git", rootPushes: false), .hello(role: .viewer, name: "prompt")]
        case .ping: [.ping]
        case .bye: [.bye]
        case .roots: [.roots]
        case .badges: [.badges]
        case .status: [.status([b("/r/a b"), b("/r/c")])]
        case .list: [.list(b("/r"))]
        case .observe: [.observe(b("/r")), .observe(b("/r/d"), list: false)]
        case .unobserve: [.unobserve(b("/r"))]
        case .menu: [.menu(kind: "items", paths: [b("/r/a"), b("/r/b")]), .menu(kind: "container", target: b("/r"), paths: [])]
        case .action: [.action("git.stage", target: b("/r"), paths: [b("/r/a")], reply: true), .action("git.log", paths: [b("/r/a")])]
        case .toolbar: [.toolbar]
        case .stats: [.stats]
        case .addRoot: [.addRoot(b("/home/me/a dir")), .addRoot(b("/r"), ignoreDefaults: false)]
        case .removeRoot: [.removeRoot(b("/home/me/a dir"))]
        case .claim: [.claim(b("/r"))]
        case .set: [SetRequest(.syncing, b("/r/a b"), gen: 3, progress: 40, message: "up load", badge: "mine", recursive: true, lease: 60).request,
                    SetRequest(.synced, b("/r")).request]
        case .changes: [.changes(b("/r"))]
        case .subscribeChanges: [.subscribeChanges(b("/r"))]
        case .defineBadge: [Badge(id: "mine", label: "Mine", glyph: "m", ascii: "m", color: "32", image: b("/i/m.svg")).definition]
        case .defineMenu: [.defineMenu(kind: "items", id: "git.stage", title: "Stage", states: [.pending, .conflict], enabled: false),
                           .defineMenu(kind: "toolbar", id: "st.pause", title: "Pause")]
        case .defineToolbar: [ToolbarItem(name: "main ↑2", tooltip: "git", image: b("/i/g.svg")).request]
        case .answer: [.answer("t-1.x", message: "done it", failed: true), .answer("t2", message: nil, failed: false)]
        case .unclaim: [.unclaim(b("/r"))]
        }
    }

    static func parse(_ r: Request) throws -> WireRequest {
        guard case .request(let w) = WireParser.parse(r.wireLine(tag: "9").bytes) else { throw Err("bad-request") }
        return w
    }

    /// A request and what reading it gives: the same verb, fields in order and options (which
    /// the wire does not order).
    static func same(_ a: Request, _ b: Request) -> Bool {
        func split(_ r: Request) -> ([RequestField], [String: [UInt8]]) {
            var fields: [RequestField] = []
            var options: [String: [UInt8]] = [:]
            for f in r.fields {
                if case .option(let k, let v) = f { options[k] = v } else { fields.append(f) }
            }
            return (fields, options)
        }
        return a.verb == b.verb && split(a) == split(b)
    }

    @Test(arguments: Verb.allCases)
    func everyVerbReadsBackWhatItWrites(_ verb: Verb) throws {
        let samples = Self.samples(verb)
        #expect(!samples.isEmpty)
        for r in samples {
            #expect(r.verb == verb)
            let w = try Self.parse(r)
            #expect(w.tag == "9" && w.verb == verb.rawValue)
            let read = try #require(Request(w))
            #expect(Self.same(read, r), "\(r)")
        }
    }

    /// The requests the daemon reads field by field read back as the values they were built from.
    @Test func typedRequestsReadBackWhatTheyWrite() throws {
        for s in [SetRequest(.syncing, b("/r/a b"), gen: 3, progress: 40, message: "up load", badge: "mine", recursive: true, lease: 60),
                  SetRequest(.synced, b("/r"))] {
            #expect(try SetRequest(Self.parse(s.request)) == s)
        }
        // A lease counts on `syncing` only.
        #expect(try SetRequest(Self.parse(SetRequest(.pending, b("/r/f"), lease: 60).request)).lease == nil)
        for d in [MenuDefinition(kind: "items", id: "git.stage", title: "Stage", states: [.pending, .conflict], enabled: false),
                  MenuDefinition(kind: "container", id: "git.pull", title: "Pull")] {
            #expect(try MenuDefinition(Self.parse(d.request)) == d)
        }
        for m in [MenuRequest(kind: "items", paths: [b("/r/a b"), b("/r/c")]),
                  MenuRequest(kind: "toolbar", target: b("/r"), provider: "syncthing", paths: [])] {
            #expect(try MenuRequest(Self.parse(m.request)) == m)
        }
        for a in [ActionRequest(id: "git.stage", target: b("/r"), paths: [b("/r/a")], reply: true),
                  ActionRequest(id: "syncthing.pause", provider: "syncthing", paths: [])] {
            #expect(try ActionRequest(Self.parse(a.request)) == a)
        }
        for a in [Answer(token: "t-1.x", message: b("line one\nline two \u{FF}"), failed: true), Answer(token: "r2")] {
            #expect(try Answer(Self.parse(a.request)) == a)
        }
        for h in [Hello(role: .provider, name: "git", rootPushes: false), Hello(role: .viewer, name: "a b")] {
            #expect(try Hello(Self.parse(h.request)) == h)
        }
        // What the daemon refuses reads as what is missing.
        let unknownRole = try Hello(Self.parse(Request(.hello, [.option("proto", "2"), .option("role", "guest")])))
        #expect(unknownRole == Hello(proto: "2", role: nil, name: nil))
        let t = ToolbarItem(name: "main ↑2", tooltip: "git", image: b("/i/g.svg"))
        #expect(try ToolbarItem(Self.parse(t.request)) == t)
        let badge = Badge(id: "mine", label: "Mine", glyph: "m", ascii: "m", color: "32", image: b("/i/m.svg"))
        #expect(try Badge(definition: Self.parse(badge.definition)) == badge)
    }

    @Test func badRequestsAreRefusedWithTheDaemonsCodes() throws {
        func code(_ line: String, _ read: (WireRequest) throws -> Void) -> String? {
            guard case .request(let w) = WireParser.parse(b(line)) else { return "unparsed" }
            do { try read(w) } catch let error as Err { return error.code } catch { return "\(error)" }
            return nil
        }
        #expect(code("1 SET rotten /r/f") { _ = try SetRequest($0) } == "bad-request")
        #expect(code("1 SET synced r/f") { _ = try SetRequest($0) } == "bad-path")
        #expect(code("1 SET synced /r/f gen=x") { _ = try SetRequest($0) } == "bad-request")
        #expect(code("1 SET synced /r/f progress=101") { _ = try SetRequest($0) } == "bad-request")
        #expect(code("1 SET syncing /r/f lease=+5") { _ = try SetRequest($0) } == "bad-request")
        #expect(code("1 SET syncing /r/f lease=86401") { _ = try SetRequest($0) } == "bad-request")
        #expect(code("1 SET synced /r/f lease=0") { _ = try SetRequest($0) } == nil)
        #expect(code("1 DEFINE-MENU items x title=X states=pending,rotten") { _ = try MenuDefinition($0) } == "bad-request")
        #expect(code("1 DEFINE-MENU nowhere x title=X") { _ = try MenuDefinition($0) } == "bad-request")
        #expect(code("1 DEFINE-TOOLBAR name=X tooltip=Y image=rel") { _ = try ToolbarItem($0) } == "bad-path")
        #expect(code("1 DEFINE-BADGE x label=a glyph=b ascii=c") { _ = try Badge(definition: $0) } == "bad-request")
        #expect(code("1 MENU /r/a") { _ = try MenuRequest($0) } == "bad-request")
        #expect(code("1 ACTION /r/a") { _ = try ActionRequest($0) } == "bad-request")
        #expect(code("1 ANSWER") { _ = try Answer($0) } == "bad-request")
        #expect(code("1 ANSWER t1 t2") { _ = try Answer($0) } == "bad-request")
    }
}

import NIOCore
import Testing
import SyncBadgeCore
@testable import SyncBadgeServer

/// Menus: what providers define and what a selection shows, and what goes with a provider,
/// with no I/O.
@Suite struct MenusTests {
    @Test func anItemDefinedAgainReplacesItsPlaceAndKindsStayApart() {
        var m = Menus(answerTimeout: .seconds(10))
        m.define(MenuDefinition(kind: "items", id: "a", title: "A"), by: 1)
        m.define(MenuDefinition(kind: "items", id: "b", title: "B", states: [.conflict]), by: 1)
        m.define(MenuDefinition(kind: "container", id: "a", title: "A here"), by: 1)
        m.define(MenuDefinition(kind: "items", id: "a", title: "A again", enabled: false), by: 1)
        #expect(m.items(of: 1, kind: "items", states: [.pending]).map(\.title) == ["A again"])
        #expect(m.items(of: 1, kind: "items", states: [.conflict, .conflict]).map(\.title) == ["A again", "B"])
        // A selection with one state the item does not list leaves it out.
        #expect(m.items(of: 1, kind: "items", states: [.conflict, .synced]).map(\.id) == ["a"])
        #expect(m.items(of: 1, kind: "container", states: []).map(\.title) == ["A here"])
        #expect(m.items(of: 2, kind: "items", states: []).isEmpty)
    }

    @Test func aProviderThatLeavesTakesItsMenusToolbarAndAnswersWithIt() {
        var m = Menus(answerTimeout: .seconds(10))
        m.define(MenuDefinition(kind: "items", id: "a", title: "A"), by: 1)
        let item = ToolbarItem(name: "Pause", tooltip: "Pause it")
        _ = m.toolbars.defined(1, provider: "st", item: item)
        #expect(m.toolbars.claimed(1) == .show(ProviderToolbar(provider: "st", item: item)))
        // Client 2 waits for provider 1's answer; client 3 for provider 4's.
        _ = m.answers.replies.delivered(client: 2, tag: "t2", provider: 1, now: .uptimeNanoseconds(0))
        _ = m.answers.replies.delivered(client: 3, tag: "t3", provider: 4, now: .uptimeNanoseconds(0))
        let (toolbar, owed) = m.closed(1)
        #expect(toolbar == .removed(provider: "st"))
        #expect(owed.map(\.client) == [2] && owed.map(\.outcome) == [.noProvider])
        #expect(m.items(of: 1, kind: "items", states: []).isEmpty)
        // The client that waited goes: nobody is answered for it.
        #expect(m.closed(3).replies.isEmpty)
        #expect(m.answers.replies.nextDeadline == nil)
    }
}

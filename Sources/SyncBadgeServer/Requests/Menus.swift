import NIOCore
import SyncBadgeCore

/// Finder Sync's menus, toolbar items and actions as the providers defined them, owned in one
/// place: each provider's menu items by kind, the toolbar items and which changes are pushed
/// (`ToolbarSet`), and the actions waiting for their provider's `ANSWER` with their timer
/// (`AwaitedAnswers`). No I/O: the hub routes the requests here and performs what comes back
/// (the lines to write, the timer to arm). Providers are known by client id.
struct Menus {
    /// Each provider's items by kind, in definition order.
    private var items: [Clients.ID: [String: [MenuItem]]] = [:]
    var toolbars = ToolbarSet()
    var answers: AwaitedAnswers

    init(answerTimeout: TimeAmount) {
        answers = AwaitedAnswers(timeout: answerTimeout)
    }

    /// `DEFINE-MENU`: adds the item, or replaces the one of the same kind and id in its place.
    mutating func define(_ d: MenuDefinition, by provider: Clients.ID) {
        var list = items[provider]?[d.kind] ?? []
        if let i = list.firstIndex(where: { $0.id == d.item.id }) { list[i] = d.item } else { list.append(d.item) }
        items[provider, default: [:]][d.kind] = list
    }

    /// The provider's items of this kind that a selection in these states shows.
    func items(of provider: Clients.ID, kind: String, states: [SyncState]) -> [MenuItem] {
        (items[provider]?[kind] ?? []).filter { $0.matches(states) }
    }

    /// A connection closed: the menus and toolbar item it defined go (the toolbar's `removed`
    /// push, if it showed one), the answers it owed fail (`ERR no-provider`, to send), and the
    /// answers it waited for are nobody's.
    mutating func closed(_ id: Clients.ID) -> (toolbar: ToolbarSet.Push?, replies: [ActionReplies.Reply]) {
        items.removeValue(forKey: id)
        let toolbar = toolbars.closed(id)
        let owed = answers.replies.providerClosed(id)
        answers.replies.clientClosed(id)
        return (toolbar, owed)
    }
}

import NIOCore
import SyncBadgeCore

/// Finder Sync's badges, menus, toolbar items and actions as the providers defined them, owned
/// in one place: the badges, each provider's menu items by kind, the toolbar items and which
/// changes are pushed (`ToolbarSet`), and the actions waiting for their provider's `ANSWER`
/// with their timer (`AwaitedAnswers`). One mutating func per verb (`DEFINE-BADGE`,
/// `DEFINE-MENU`, `DEFINE-TOOLBAR`, `MENU`, `ACTION`, `ANSWER`, `TOOLBAR`), returning what the
/// hub carries out (`Effects`: the lines to write, the pushes, the timer to arm). No I/O.
/// Providers are known by client id.
struct Menus {
    /// The badges (`BADGES`), the manifest's and those providers defined.
    var badges: [Badge]
    /// Each provider's items by kind, in definition order.
    private var items: [Clients.ID: [String: [MenuItem]]] = [:]
    var toolbars = ToolbarSet()
    var answers: AwaitedAnswers

    init(answerTimeout: TimeAmount, badges: [Badge] = []) {
        answers = AwaitedAnswers(timeout: answerTimeout)
        self.badges = badges
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

    /// A badge as a `* BADGE` line, if it is defined.
    func badgeLine(_ id: String) -> WireLine? {
        badges.first { $0.id == id }?.wireLine(head: "*")
    }

    // MARK: Definitions (providers)

    mutating func defineBadge(_ req: WireRequest, _ c: Clients.ID) -> Effects {
        var fx = Effects()
        let badge: Badge
        do { badge = try Badge(definition: req) } catch {
            fx.error(c, req.tag, error)
            return fx
        }
        if let i = badges.firstIndex(where: { $0.id == badge.id }) { badges[i] = badge } else { badges.append(badge) }
        fx.ok(c, req.tag)
        // Every client refreshes its badge cache (1.1, `badge-push`).
        fx.append(.pushBadge(badge))
        return fx
    }

    mutating func defineMenu(_ req: WireRequest, _ c: Clients.ID) -> Effects {
        var fx = Effects()
        do { define(try MenuDefinition(req), by: c) } catch {
            fx.error(c, req.tag, error)
            return fx
        }
        fx.ok(c, req.tag)
        return fx
    }

    /// `DEFINE-TOOLBAR`; `name`: the provider's, which its `TOOLBAR` line carries.
    mutating func defineToolbar(_ req: WireRequest, _ c: Clients.ID, name: String) -> Effects {
        var fx = Effects()
        let item: ToolbarItem
        do { item = try ToolbarItem(req) } catch {
            fx.error(c, req.tag, error)
            return fx
        }
        let push = toolbars.defined(c, provider: name, item: item)
        fx.ok(c, req.tag)
        if let push { fx.append(.pushToolbar(push)) }
        return fx
    }

    /// `TOOLBAR`: every toolbar item shown.
    func toolbar(_ req: WireRequest, _ c: Clients.ID) -> Effects {
        var fx = Effects()
        for l in toolbars.lines { fx.write(c, l.wireLine(head: req.tag)) }
        fx.ok(c, req.tag)
        return fx
    }

    // MARK: Using them (every role)

    /// The selection of a MENU or ACTION: its paths (and `target=`), all under one root.
    struct Selection {
        var root: [UInt8]
        var target: [UInt8]?
        var paths: [[UInt8]]
        var nodes: [StateTree.NodeID]
    }

    /// The selection of `paths` and `target`, or why it is refused.
    static func selection(_ verb: String, paths: [[UInt8]], target: [UInt8]?, tree: inout StateTree) -> Result<Selection, Err> {
        for p in paths + (target.map { [$0] } ?? []) where !PathBytes.isNormalizedAbsolute(p) {
            return .failure(Err("bad-path", message: p))
        }
        guard let first = paths.first ?? target else {
            return .failure(Err("bad-request", message: Array("\(verb) needs a path or target=".utf8)))
        }
        guard let root = tree.root(containing: first)?.path else { return .failure(Err("outside", message: first)) }
        var nodes: [StateTree.NodeID] = []
        for p in paths + (target.map { [$0] } ?? []) {
            guard PathBytes.relativeComponents(p, under: root) != nil else {
                return .failure(Err(tree.root(containing: p) == nil ? "outside" : "bad-request",
                                    message: Array("\(PathBytes.display(p)) is not under \(PathBytes.display(root))".utf8)))
            }
            guard let id = tree.find(p) else { return .failure(Err("not-found", message: p)) }
            if p != target || paths.contains(p) { nodes.append(id) }
        }
        return .success(Selection(root: root, target: target, paths: paths, nodes: nodes))
    }

    /// The provider a request names with `provider=<name>` (1.1, `provider-address`): the
    /// connection whose `TOOLBAR` line carries that name, or the error.
    private func addressed(_ name: String, clients: inout Clients) -> Result<Clients.ID, Err> {
        guard let id = toolbars.provider(named: name), clients.isActive(id) else {
            return .failure(Err("no-provider", message: Array("no sync engine named \(name) has a toolbar item".utf8)))
        }
        return .success(id)
    }

    /// `MENU`: the claimant's items for the selection, then the built-in ones; or, with
    /// `provider=`, that provider's items (paths optional).
    func menu(_ req: WireRequest, _ c: Clients.ID, roots: RootRegistry, clients: inout Clients, tree: inout StateTree) -> Effects {
        var fx = Effects()
        do {
            let m = try MenuRequest(req)
            var items: [MenuItem] = []
            if let name = m.provider {
                let provider = try addressed(name, clients: &clients).get()
                // Paths are optional here; when given, the items match their states.
                let states = m.selects ? try Self.selection(req.verb, paths: m.paths, target: m.target, tree: &tree).get().nodes.map { tree.reportedState($0) } : []
                items = self.items(of: provider, kind: m.kind, states: states)
            } else {
                let sel = try Self.selection(req.verb, paths: m.paths, target: m.target, tree: &tree).get()
                let states = sel.nodes.map { tree.reportedState($0) }
                if let provider = roots.claimant(of: sel.root) { items = self.items(of: provider, kind: m.kind, states: states) }
                if m.kind == "items" && !sel.nodes.isEmpty {
                    let ignoredByFile = roots[sel.root].map { root in sel.nodes.map { BuiltinActions.ignoredByFile($0, root: root, tree: &tree) } }
                    items += BuiltinMenu.items(states: states, ignoredByFile: ignoredByFile ?? sel.nodes.map { _ in false })
                }
            }
            for item in items { fx.write(c, item.wireLine(head: req.tag)) }
            fx.ok(c, req.tag)
        } catch {
            fx.error(c, req.tag, error)
        }
        return fx
    }

    /// `ACTION`: the built-in ones answered here (the ignore file's edit carried out by the
    /// hub), others delivered to the provider addressed or the root's claimant. Waits when the
    /// answer is the provider's `ANSWER` (1.2, `reply=1`): the client's later requests queue.
    /// `now`: the loop's time, for the answer's deadline.
    mutating func action(_ req: WireRequest, _ c: Clients.ID, roots: RootRegistry, clients: inout Clients, tree: inout StateTree,
                         now: NIODeadline) -> Effects {
        var fx = Effects()
        do {
            let a = try ActionRequest(req)
            let from = clients[c]?.name ?? ""
            if let name = a.provider, !BuiltinMenu.ids.contains(a.id) {
                let provider = try addressed(name, clients: &clients).get()
                let sel = a.selects ? try Self.selection(req.verb, paths: a.paths, target: a.target, tree: &tree).get() : nil
                deliver(req, a, target: sel?.target, paths: sel?.paths ?? [], from: (c, from), to: provider, now: now, &fx)
                return fx
            }
            let sel = try Self.selection(req.verb, paths: a.paths, target: a.target, tree: &tree).get()
            switch a.id {
            case BuiltinMenu.details:
                // Without selected paths, the details are the target's.
                let nodes = sel.nodes.isEmpty ? sel.target.flatMap { tree.find($0) }.map { [$0] } ?? [] : sel.nodes
                fx.ok(c, req.tag, Ok(message: Array(BuiltinActions.details(nodes, tree: &tree).utf8)))
            case BuiltinMenu.ignore, BuiltinMenu.unignore:
                // The selection's root was found in the tree, so the registry has it; a
                // request is answered whatever happens.
                guard let root = roots[sel.root] else {
                    fx.error(c, req.tag, "not-found", message: sel.root)
                    return fx
                }
                let updated = try BuiltinActions.editedIgnoreFile(sel.nodes, root: root, ignore: a.id == BuiltinMenu.ignore, tree: &tree).get()
                fx.append(.writeIgnoreFile(root: sel.root, contents: updated, client: c, tag: req.tag))
                fx.waits = true
            default:
                guard let provider = roots.claimant(of: sel.root), clients.isActive(provider) else {
                    fx.error(c, req.tag, "no-provider", message: Array("no sync engine has claimed \(PathBytes.display(sel.root))".utf8))
                    return fx
                }
                deliver(req, a, target: sel.target, paths: sel.paths, from: (c, from), to: provider, now: now, &fx)
            }
        } catch {
            fx.error(c, req.tag, error)
        }
        return fx
    }

    /// `* ACTION <action-id> [target=<path>] <path>... from=<client-name> [reply=<token>]` to a
    /// provider. Without `reply=1` the client's `OK` says it was delivered; with it, the
    /// provider's `ANSWER` (or the deadline) answers, and the request waits.
    private mutating func deliver(_ req: WireRequest, _ a: ActionRequest, target: [UInt8]?, paths: [[UInt8]], from: (id: Clients.ID, name: String),
                                  to provider: Clients.ID, now: NIODeadline, _ fx: inout Effects) {
        var call = ActionCall(id: a.id, target: target, paths: paths, from: from.name)
        if a.reply {
            call.reply = answers.replies.delivered(client: from.id, tag: req.tag, provider: provider, now: now)
            fx.append(.armReplyTimer)
        }
        fx.write(provider, call.wireLine(head: "*"))
        fx.append(.deliver)
        if a.reply {
            fx.waits = true
        } else {
            fx.ok(from.id, req.tag)
        }
    }

    /// `ANSWER <token> [message=] [failed=1]` (1.2, `action-reply`): the waiting client's
    /// `ACTION` is answered, then its later requests go on.
    mutating func answer(_ req: WireRequest, _ c: Clients.ID) -> Effects {
        var fx = Effects()
        let answer: Answer
        do { answer = try Answer(req) } catch {
            fx.error(c, req.tag, error)
            return fx
        }
        guard let reply = answers.replies.answered(answer.token, by: c, message: answer.message, failed: answer.failed) else {
            fx.error(c, req.tag, "not-found", message: Array("no answer is awaited for \(answer.token) from this connection".utf8))
            return fx
        }
        fx.ok(c, req.tag)
        fx.append(.replies([reply]))
        fx.append(.armReplyTimer)
        return fx
    }

    /// The clients' `ACTION ... reply=1` requests answered (`isActive`: the client is still
    /// there), each then going on.
    static func replies(_ list: [ActionReplies.Reply], isActive: (Clients.ID) -> Bool) -> Effects {
        var fx = Effects()
        for r in list where isActive(r.client) {
            let c = r.client
            switch r.outcome {
            case .answered(let message): fx.ok(c, r.tag, Ok(message: message))
            case .failed(let message): fx.error(c, r.tag, "failed", message: message)
            case .timeout: fx.error(c, r.tag, "timeout", message: Array("the sync engine did not answer in time".utf8))
            case .noProvider: fx.error(c, r.tag, "no-provider", message: Array("the sync engine went away before it answered".utf8))
            }
            fx.append(.resume(c))
        }
        return fx
    }
}

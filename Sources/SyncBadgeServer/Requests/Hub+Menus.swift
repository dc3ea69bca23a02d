#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import SyncBadgeCore
import SyncBadgeWatchEvents

/// Finder Sync's menus, actions and toolbar: defined by providers, routed to the provider that
/// claimed the root, plus the built-in items every root offers.
extension Hub {
    // MARK: Definitions (providers)

    func defineBadge(_ req: WireRequest, _ c: Clients.ID) {
        let badge: Badge
        do { badge = try Badge(definition: req) } catch {
            outbox.error(c, req.tag, error)
            return
        }
        if let i = settings.badges.firstIndex(where: { $0.id == badge.id }) { settings.badges[i] = badge } else { settings.badges.append(badge) }
        outbox.ok(c, req.tag)
        // Every client refreshes its badge cache (1.1, `badge-push`).
        let line = badge.wireLine(head: "*")
        for other in clients.all where clients.hasSaidHello(other) { push(line, .badge(badge.id), to: other) }
    }

    func defineMenu(_ req: WireRequest, _ c: Clients.ID) {
        let definition: MenuDefinition
        do { definition = try MenuDefinition(req) } catch {
            outbox.error(c, req.tag, error)
            return
        }
        menus.define(definition, by: c)
        outbox.ok(c, req.tag)
    }

    func defineToolbar(_ req: WireRequest, _ c: Clients.ID) {
        let item: ToolbarItem
        do { item = try ToolbarItem(req) } catch {
            outbox.error(c, req.tag, error)
            return
        }
        let push = menus.toolbars.defined(c, provider: clients[c]?.name ?? "", item: item)
        outbox.ok(c, req.tag)
        if let push { pushToolbar(push) }
    }

    /// `* TOOLBAR ...` (1.2, `toolbar-push`) to every client that did not say `roots=0`.
    func pushToolbar(_ push: ToolbarSet.Push) {
        let toolbar = push.toolbar
        let line = toolbar.wireLine(head: "*")
        for c in clients.all where clients[c]?.role != nil && clients[c]?.wantsRootPushes == true { self.push(line, .toolbar(toolbar.provider), to: c) }
    }

    // MARK: Using them (every role)

    /// The selection of a MENU or ACTION: its paths (and `target=`), all under one root.
    struct Selection {
        var root: [UInt8]
        var target: [UInt8]?
        var paths: [[UInt8]]
        var nodes: [StateTree.NodeID]
    }

    /// The selection of `paths` and `target`, or nil with the error sent.
    func selection(_ req: WireRequest, _ c: Clients.ID, paths: [[UInt8]], target: [UInt8]?) -> Selection? {
        for p in paths where !PathBytes.isNormalizedAbsolute(p) {
            outbox.error(c, req.tag, "bad-path", message: p)
            return nil
        }
        if let target, !PathBytes.isNormalizedAbsolute(target) {
            outbox.error(c, req.tag, "bad-path", message: target)
            return nil
        }
        guard let first = paths.first ?? target else {
            outbox.error(c, req.tag, "bad-request", message: Array("\(req.verb) needs a path or target=".utf8))
            return nil
        }
        guard let root = tree.root(containing: first)?.path else {
            outbox.error(c, req.tag, "outside", message: first)
            return nil
        }
        var nodes: [StateTree.NodeID] = []
        for p in paths + (target.map { [$0] } ?? []) {
            guard PathBytes.relativeComponents(p, under: root) != nil else {
                outbox.error(c, req.tag, tree.root(containing: p) == nil ? "outside" : "bad-request",
                        message: Array("\(PathBytes.display(p)) is not under \(PathBytes.display(root))".utf8))
                return nil
            }
            guard let id = tree.find(p) else {
                outbox.error(c, req.tag, "not-found", message: p)
                return nil
            }
            if p != target || paths.contains(p) { nodes.append(id) }
        }
        return Selection(root: root, target: target, paths: paths, nodes: nodes)
    }

    /// The provider a request names with `provider=<name>` (1.1, `provider-address`): the
    /// connection whose `TOOLBAR` line carries that name. Nil with `ERR no-provider` sent when
    /// none does.
    func addressedProvider(_ req: WireRequest, _ c: Clients.ID, name: String) -> Clients.ID? {
        let named = menus.toolbars.provider(named: name).flatMap { clients.isActive($0) ? $0 : nil }
        if named == nil { outbox.error(c, req.tag, "no-provider", message: Array("no sync engine named \(name) has a toolbar item".utf8)) }
        return named
    }

    func menu(_ req: WireRequest, _ c: Clients.ID) {
        let m: MenuRequest
        do { m = try MenuRequest(req) } catch {
            outbox.error(c, req.tag, error)
            return
        }
        let kind = m.kind
        if let name = m.provider {
            guard let provider = addressedProvider(req, c, name: name) else { return }
            // Paths are optional here; when given, the items match their states.
            var states: [SyncState] = []
            if m.selects {
                guard let sel = selection(req, c, paths: m.paths, target: m.target) else { return }
                states = sel.nodes.map { tree.reportedState($0) }
            }
            for item in menus.items(of: provider, kind: kind, states: states) { outbox.write(c, item.wireLine(head: req.tag)) }
            outbox.ok(c, req.tag)
            return
        }
        guard let sel = selection(req, c, paths: m.paths, target: m.target) else { return }
        let states = sel.nodes.map { tree.reportedState($0) }
        var items: [MenuItem] = []
        if let provider = roots.claimant(of: sel.root) {
            items = menus.items(of: provider, kind: kind, states: states)
        }
        if kind == "items" && !sel.nodes.isEmpty {
            let ignoredByFile = roots[sel.root].map { root in sel.nodes.map { BuiltinActions.ignoredByFile($0, root: root, tree: &tree) } }
            items += BuiltinMenu.items(states: states, ignoredByFile: ignoredByFile ?? sel.nodes.map { _ in false })
        }
        for item in items { outbox.write(c, item.wireLine(head: req.tag)) }
        outbox.ok(c, req.tag)
    }

    /// `ACTION`; false when the answer waits for the provider's `ANSWER` (1.2, `reply=1`): the
    /// session then holds its later requests, in order, as for any slow request.
    func action(_ req: WireRequest, _ c: Clients.ID) -> Bool {
        let a: ActionRequest
        do { a = try ActionRequest(req) } catch {
            outbox.error(c, req.tag, error)
            return true
        }
        let actionID = a.id
        let wantsReply = a.reply
        if let name = a.provider, !BuiltinMenu.ids.contains(actionID) {
            guard let provider = addressedProvider(req, c, name: name) else { return true }
            var paths: [[UInt8]] = []
            var target: [UInt8]?
            if a.selects {
                guard let sel = selection(req, c, paths: a.paths, target: a.target) else { return true }
                (paths, target) = (sel.paths, sel.target)
            }
            return deliverAction(req, actionID, target: target, paths: paths, from: c, to: provider, wantsReply: wantsReply)
        }
        guard let sel = selection(req, c, paths: a.paths, target: a.target) else { return true }
        switch actionID {
        case BuiltinMenu.details:
            // Without selected paths, the details are the target's.
            let nodes = sel.nodes.isEmpty ? sel.target.flatMap { tree.find($0) }.map { [$0] } ?? [] : sel.nodes
            outbox.ok(c, req.tag, Ok(message: Array(BuiltinActions.details(nodes, tree: &tree).utf8)))
        case BuiltinMenu.ignore, BuiltinMenu.unignore:
            return editIgnoreFile(req, c, sel, ignore: actionID == BuiltinMenu.ignore)
        default:
            guard let provider = roots.claimant(of: sel.root), clients.isActive(provider) else {
                outbox.error(c, req.tag, "no-provider", message: Array("no sync engine has claimed \(PathBytes.display(sel.root))".utf8))
                return true
            }
            return deliverAction(req, actionID, target: sel.target, paths: sel.paths, from: c, to: provider, wantsReply: wantsReply)
        }
        return true
    }

    /// `* ACTION <action-id> [target=<path>] <path>... from=<client-name> [reply=<token>]` to a
    /// provider. Without `reply=1` the client's `OK` says it was delivered; with it, the
    /// provider's `ANSWER` (or the deadline) answers, and this returns false.
    func deliverAction(_ req: WireRequest, _ actionID: String, target: [UInt8]?, paths: [[UInt8]], from c: Clients.ID,
                       to provider: Clients.ID, wantsReply: Bool) -> Bool {
        var call = ActionCall(id: actionID, target: target, paths: paths, from: clients[c]?.name ?? "")
        if wantsReply {
            call.reply = menus.answers.replies.delivered(client: c, tag: req.tag, provider: provider, now: loop.now)
            armReplyTimer()
        }
        outbox.write(provider, call.wireLine(head: "*"))
        deliver()
        if wantsReply { return false }
        outbox.ok(c, req.tag)
        return true
    }

    /// `ANSWER <token> [message=] [failed=1]` (1.2, `action-reply`): the waiting client's
    /// `ACTION` is answered, then its later requests go on.
    func answer(_ req: WireRequest, _ c: Clients.ID) {
        let answer: Answer
        do { answer = try Answer(req) } catch {
            outbox.error(c, req.tag, error)
            return
        }
        let token = answer.token
        guard let reply = menus.answers.replies.answered(token, by: c, message: answer.message, failed: answer.failed) else {
            outbox.error(c, req.tag, "not-found", message: Array("no answer is awaited for \(token) from this connection".utf8))
            return
        }
        outbox.ok(c, req.tag)
        sendReplies([reply])
        armReplyTimer()
    }

    /// Answers the clients' `ACTION ... reply=1` requests and lets each go on.
    func sendReplies(_ list: [ActionReplies.Reply]) {
        for r in list {
            let c = r.client
            guard clients.isActive(c) else { continue }
            switch r.outcome {
            case .answered(let message):
                outbox.ok(c, r.tag, Ok(message: message))
            case .failed(let message):
                outbox.error(c, r.tag, "failed", message: message)
            case .timeout:
                outbox.error(c, r.tag, "timeout", message: Array("the sync engine did not answer in time".utf8))
            case .noProvider:
                outbox.error(c, r.tag, "no-provider", message: Array("the sync engine went away before it answered".utf8))
            }
            resume(c)
        }
    }

    /// One timer for the earliest awaited answer; none while no answer is awaited.
    func armReplyTimer() {
        let next = menus.answers.replies.nextDeadline
        if let next, menus.answers.timer.isArmed(for: next) { return }
        menus.answers.timer.cancel()
        guard let next, !stopping else { return }
        let task = loop.assumeIsolated().scheduleTask(deadline: next) {
            self.menus.answers.timer.fired()
            self.sendReplies(self.menus.answers.replies.expired(now: self.loop.now))
            self.armReplyTimer()
            self.deliver()
        }
        menus.answers.timer.arm(task, at: next)
    }

    /// The built-in Ignore / Stop ignoring: edit the root's ignore file; the watcher sees the
    /// edit and the rules apply as for any other edit. The file is written on the file thread
    /// (`fileWork`), not the event loop; false while it is (the client's later requests wait).
    func editIgnoreFile(_ req: WireRequest, _ c: Clients.ID, _ sel: Selection, ignore: Bool) -> Bool {
        guard let root = roots[sel.root] else { return true }
        let updated: [UInt8]
        switch BuiltinActions.editedIgnoreFile(sel.nodes, root: root, ignore: ignore, tree: &tree) {
        case .failure(let refused):
            outbox.error(c, req.tag, refused)
            return true
        case .success(let file): updated = file
        }
        let file = PathBytes.join(sel.root, IgnoreRules.fileName)
        let rootPath = sel.root
        fileWork {
            Self.writeFile(file, updated)
        }.assumeIsolated().whenComplete { result in
            let failure: String?
            switch result {
            case .success(let err): failure = err
            case .failure(let e): failure = "\(e)"
            }
            if failure == nil { _ = self.roots.ignoreFileChanged(rootPath, contents: updated) }
            guard self.clients.isActive(c) else { return }
            if let failure {
                self.outbox.error(c, req.tag, "internal", message: Array("cannot write \(PathBytes.display(file)): \(failure)".utf8))
            } else {
                self.outbox.ok(c, req.tag)
            }
            self.resume(c)
        }
        return false
    }

    /// Writes a small file in place (no temporary file: its rename would show up as a change).
    /// Runs off the event loop (`fileWork`).
    static func writeFile(_ path: [UInt8], _ bytes: [UInt8]) -> String? {
        let fd = path.withCString { open($0, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o644) }
        guard fd >= 0 else { return String(cString: strerror(errno)) }
        defer { Glibc.close(fd) }
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return String(cString: strerror(errno))
            }
            off += n
        }
        return nil
    }

    func toolbar(_ req: WireRequest, _ c: Clients.ID) {
        for l in menus.toolbars.lines { outbox.write(c, l.wireLine(head: req.tag)) }
        outbox.ok(c, req.tag)
    }
}

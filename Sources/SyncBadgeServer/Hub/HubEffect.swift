import Logging
import NIOCore
import SyncBadgeCore
import SyncBadgeStore
import SyncBadgeWatchEvents

/// What an owner (Roots, Providers, Menus) asks the hub to carry out once it has decided: the
/// owners change only their own state and the tree, and say here what reaches the outbox, the
/// store, the watcher, the timers or another owner. The hub performs the list in order
/// (`Hub.perform`), as a swift-nio handler performs the actions its state machine returns.
enum HubEffect {
    /// A line to one client: an answer, or a provider's `* ACTION`.
    case write(Clients.ID, WireLine)
    /// The client's request that waited is answered: its queued lines go on (`Hub.resume`).
    case resume(Clients.ID)
    /// Hand what the outbox holds to the connections now.
    case deliver
    /// `* ROOT` for the root as it is now, to every client past `HELLO`, while it is a root.
    case pushRoot([UInt8])
    /// `* ROOT <path> removed` to every client past `HELLO`.
    case pushRootRemoved([UInt8])
    case pushToolbar(ToolbarSet.Push)
    /// The provider claimed its first root, or gave one up: its toolbar item may show or go.
    case toolbarClaimed(Clients.ID)
    case toolbarUnclaimed(Clients.ID)
    /// `* BADGE` to every client past `HELLO` (1.1, `badge-push`).
    case pushBadge(Badge)
    /// `* CHANGED` to the root's change subscribers (Providers).
    case changed([UInt8], Changed.What)
    /// `* RESET-CHANGES` to the root's change subscribers.
    case resetChanges([UInt8])
    /// `* RESET` to every observer of a directory in the root (after lost events), once what
    /// the tree changed is pushed.
    case resetObservers(root: [UInt8])
    /// What changed in the tree, as `ITEM` and `GONE` pushes (`Hub.publishChanges`).
    case publish
    /// A group commit; these SETs are answered once it holds them (nil: nobody waits).
    case commit(answering: [SetAnswers]?)
    case watcher(WatcherCommand)
    /// The new root's row, stored off the loop; its `ADD-ROOT` is answered after (`Roots.stored`).
    case storeRoot(StoredRoot, RootRegistry.Scan)
    /// The root's rows go from the store; `answering` a `REMOVE-ROOT` once they have.
    case unstoreRoot([UInt8], answering: (client: Clients.ID, tag: String)?)
    /// The built-in Ignore / Stop ignoring: the root's ignore file, written off the loop
    /// (`Roots.ignoreFileWritten` answers).
    case writeIgnoreFile(root: [UInt8], contents: [UInt8], client: Clients.ID, tag: String)
    /// A message for Providers from another owner (`Providers.receive`).
    case providers(Providers.Message)
    case armReleaseTimer
    case armReplyTimer
    /// `ACTION … reply=1` requests answered (Menus).
    case replies([ActionReplies.Reply])
    case log(Logger.Level, Logger.Message, Logger.Metadata)
    /// The daemon's last commit at stop ended (`CommitWaiter.call`).
    case call((Result<Void, Error>) -> Void, Result<Void, Error>)
    /// A failed commit is written again after this delay (SetPipeline's backoff).
    case retryCommit(after: TimeAmount)

    /// What the hub asks of the watcher (`WatcherControl`).
    enum WatcherCommand: Equatable {
        case addRoot([UInt8], token: UInt64, identities: Bool)
        case removeRoot([UInt8])
        case compareIdentities(under: [UInt8])
        case barrier(UInt64)
    }
}

/// One provider's SETs answered together after the commit: each line, and whether it is an `OK`
/// (which an unstored commit turns into an error: an OK promises durability).
struct SetAnswers {
    var client: Clients.ID
    var lines: [(tag: String, line: WireLine, ok: Bool)]
}

/// An owner's effects, in order, and whether the request's answer comes later (`waits`: the
/// client's later requests queue until a `resume`).
struct Effects {
    private(set) var list: [HubEffect] = []
    var waits = false

    init(_ list: [HubEffect] = []) { self.list = list }

    mutating func append(_ e: HubEffect) { list.append(e) }
    mutating func append(contentsOf other: Effects) { list.append(contentsOf: other.list) }

    mutating func write(_ c: Clients.ID, _ line: WireLine) { list.append(.write(c, line)) }
    mutating func ok(_ c: Clients.ID, _ tag: String, _ ok: Ok = .plain) { write(c, ok.wireLine(head: tag)) }
    mutating func error(_ c: Clients.ID, _ tag: String, _ err: Err) { write(c, err.wireLine(head: tag)) }
    mutating func error(_ c: Clients.ID, _ tag: String, _ code: String, message: [UInt8]? = nil) {
        error(c, tag, Err(code, message: message))
    }

    /// The request's checked paths (`WireRequest.checkedPaths`), or nil with the error answered.
    mutating func paths(_ req: WireRequest, _ c: Clients.ID) -> [[UInt8]]? {
        switch req.checkedPaths() {
        case .success(let paths): return paths
        case .failure(let err):
            error(c, req.tag, err)
            return nil
        }
    }
}

extension WireRequest {
    /// The request's path fields, each checked, as many as its verb takes (`Verb.pathCount`),
    /// or the error to answer if any is bad or there are too few or too many.
    func checkedPaths() -> Result<[[UInt8]], Err> {
        let count = Verb(rawValue: verb)?.pathCount ?? 1...Int.max
        guard count.contains(fields.count) else {
            let n = count.lowerBound == count.upperBound ? "\(count.lowerBound)" : "at least \(count.lowerBound)"
            return .failure(Err("bad-request", message: Array("\(verb) takes \(n) path\(count == 1...1 ? "" : "s")".utf8)))
        }
        for f in fields where !PathBytes.isNormalizedAbsolute(f.bytes) {
            return .failure(Err("bad-path", message: f.bytes))
        }
        return .success(fields.map(\.bytes))
    }
}

extension HubEffect.WatcherCommand {
    func send(to watcher: any WatcherControl) {
        switch self {
        case .addRoot(let path, let token, let identities): watcher.addRoot(path, token: token, identities: identities)
        case .removeRoot(let path): watcher.removeRoot(path)
        case .compareIdentities(let root): watcher.compareIdentities(under: root)
        case .barrier(let token): watcher.barrier(token: token)
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import Synchronization
import SyncBadgeClient
import SyncBadgeCore

/// What arrives on the provider connection.
public enum DaemonPush: Sendable, Equatable {
    /// Connected (again): `epoch` tells whether the daemon restarted.
    case connected(epoch: String)
    /// `from`: the old path of a move, which left a tombstone.
    case changed(path: String, gen: UInt64, from: String?)
    /// Changes were dropped for a slow reader: ask `CHANGES` again.
    case resetChanges(root: String)
    /// `reply`: the token to `ANSWER` with, when the client asked for an answer (1.2).
    case action(id: String, paths: [String], target: String?, reply: String?)
    case lost
}

/// The provider connection that holds the claims: one thread owns it, waits on it and on a
/// wake-up pipe with `poll` (no timer, no wake-up while idle), claims what `follow` asks for
/// and hands each push to `onPush`. It reconnects, with backoff, when the daemon goes away.
public final class ProviderChannel: Sendable {
    struct Wanted: Sendable {
        var roots: [String] = []
        var stopping = false
        /// Counts `follow` calls: each one hands the roots to the connection's `ClaimBook` again.
        var asked = 0
        /// Menu items and the toolbar item as they should be now; a change is defined again on
        /// the live connection.
        var menus: [MenuDefinition]
        var toolbar: ToolbarItem?
        /// Answers to send (1.2): on this connection, the one the actions came on.
        var answers: [(token: String, message: String?, failed: Bool)] = []
    }
    let socketPath: String
    let name: String
    let wanted: Mutex<Wanted>
    let wakeRead: Int32
    let wakeWrite: Int32
    let onPush: @Sendable (DaemonPush) -> Void
    let logger: Logger
    /// Whether a claim adds the root first when the daemon does not know it (a daemon that
    /// was down, or started afresh, when the adapter found its folder).
    let addingRoots: Bool

    public init(socketPath: String, name: String, menus: [MenuDefinition], toolbar: ToolbarItem?, addingRoots: Bool = false,
                logger: Logger, onPush: @escaping @Sendable (DaemonPush) -> Void) {
        self.socketPath = socketPath
        self.name = name
        self.addingRoots = addingRoots
        self.wanted = Mutex(Wanted(menus: menus, toolbar: toolbar))
        self.logger = logger
        self.onPush = onPush
        var fds: [Int32] = [0, 0]
        _ = pipe(&fds)
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    public func start() {
        let t = Thread { [self] in self.main() }
        t.start()
    }

    /// Claims exactly these roots. A root dropped is given up with `UNCLAIM` where the daemon
    /// has it (1.2), and by a new connection where it has not. A root the daemon refused is
    /// tried again on this call, and when its `* ROOT` push says it is free (`ClaimBook`).
    public func follow(roots: [String]) {
        wanted.withLock {
            $0.roots = roots
            $0.asked += 1
        }
        wake()
    }

    /// Answers an action whose push carried `reply=<token>`.
    public func answer(token: String, message: String?, failed: Bool) {
        wanted.withLock { $0.answers.append((token, message, failed)) }
        wake()
    }

    /// Replaces menu items (same kind and id) and the toolbar item, on the live connection and
    /// every later one.
    public func define(menus changed: [MenuDefinition] = [], toolbar: ToolbarItem? = nil) {
        wanted.withLock { w in
            for m in changed {
                if let i = w.menus.firstIndex(where: { $0.kind == m.kind && $0.item.id == m.item.id }) { w.menus[i] = m } else { w.menus.append(m) }
            }
            if let toolbar { w.toolbar = toolbar }
        }
        wake()
    }

    public func stop() {
        wanted.withLock { $0.stopping = true }
        wake()
    }

    func wake() {
        var b: UInt8 = 1
        _ = write(wakeWrite, &b, 1)
    }

    func drainWake() {
        var buf = [UInt8](repeating: 0, count: 64)
        while read(wakeRead, &buf, buf.count) > 0 {}
    }

    func main() {
        var reconnect = Reconnect()
        while !wanted.withLock({ $0.stopping }) {
            do {
                try serveOneConnection { _ = reconnect.connected() }
                // Claims given up by closing the connection: the next one at once.
                reconnect.dropped()
            } catch {
                if reconnect.lost(now: .now) {
                    if case ClientError.server(let code, let message) = error {
                        logger.warning("syncbadged on \(socketPath) refused the adapter's menus or toolbar: \(code) \(message ?? ""); retrying")
                    } else {
                        logger.warning("syncbadged is not answering on \(socketPath): \(error); retrying")
                    }
                    onPush(.lost)
                }
            }
            if wanted.withLock({ $0.stopping }) { break }
            // Backoff without a timer thread: poll on the wake pipe alone (a `follow` or `stop`
            // ends it early).
            var p = pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)
            _ = poll(&p, 1, reconnect.retryAt.map { PollTimeout.milliseconds(until: $0, now: .now) } ?? 0)
            drainWake()
        }
    }

    /// One connection's life: returns when the roots shrank, throws when the daemon went away.
    func serveOneConnection(connected: () -> Void) throws {
        // It reads every push, `* ROOT` ones too.
        let s = try ProviderConnection(socketPath: socketPath, name: name, rootPushes: true)
        let c = s.connection
        logger.info("provider connection to syncbadged open", metadata: ["epoch": "\(c.epoch)"])
        // Said connected (the backoff back to its shortest) only once the menus, the toolbar
        // and the first claims went through: a daemon that refuses one of them would otherwise
        // be asked again every 50 ms for as long as it refuses.
        var saidConnected = false
        var definedMenus: [MenuDefinition] = []
        var definedToolbar: ToolbarItem?
        // Answers queued for an earlier connection cannot be given on this one.
        wanted.withLock { $0.answers.removeAll() }
        onPush(.connected(epoch: c.epoch))
        let canUnclaim = s.capabilities.contains("unclaim")
        var book = ClaimBook()
        var asked: Int?
        while true {
            let (roots, nowAsked, stopping, menus, toolbar, answers) = wanted.withLock { w in
                defer { w.answers.removeAll() }
                return (w.roots, w.asked, w.stopping, w.menus, w.toolbar, w.answers)
            }
            if stopping { return }
            for m in menus where !definedMenus.contains(m) {
                try s.define(m)
            }
            definedMenus = menus
            if let toolbar, toolbar != definedToolbar {
                try s.define(toolbar)
                definedToolbar = toolbar
            }
            for a in answers {
                do {
                    try s.answer(a.token, message: a.message, failed: a.failed)
                } catch ClientError.server(let code, let message) {
                    // Too late (the client's 10 seconds passed) or the client went away.
                    logger.debug("answer \(a.token): \(code) \(message ?? "")")
                }
            }
            var actions = book.claims
            if nowAsked != asked {
                actions = book.follow(roots)
                // Claims have no undo before 1.2: a new connection claims the rest.
                if actions.contains(where: { if case .unclaim = $0 { true } else { false } }) && !canUnclaim { return }
                asked = nowAsked
            }
            try carryOut(actions, &book, s)
            if !saidConnected {
                saidConnected = true
                connected()
            }
            while let m = try c.nextPush(timeout: 0) { dispatch(m, &book) }
            // A push that freed a refused root: claimed before waiting.
            if !book.claims.isEmpty { continue }
            var fds = [pollfd(fd: c.descriptor, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            let rc = poll(&fds, 2, -1)
            if rc < 0 && errno != EINTR { throw ClientError.closed(nil) }
            if fds[1].revents != 0 { drainWake() }
            if fds[0].revents != 0 {
                // Readable or hung up: read at least one line, which throws at the end.
                if let m = try c.nextPush(timeout: nil) { dispatch(m, &book) }
            }
        }
    }

    func carryOut(_ actions: [ClaimBook.Action], _ book: inout ClaimBook, _ s: ProviderConnection) throws {
        for a in actions {
            switch a {
            case .unclaim(let r):
                do {
                    try s.unclaim(Array(r.utf8))
                } catch ClientError.server(let code, let message) {
                    // The root went first (removed), which ended the claim.
                    logger.debug("unclaim \(r): \(code) \(message ?? "")")
                }
                book.unclaimed(r)
            case .claim(let r):
                do {
                    try s.claim(Array(r.utf8), addingRoot: addingRoots)
                    book.claimed(r)
                } catch ClientError.server(let code, let message) {
                    // Not a root yet (the loop adds it first), in its first scan, or claimed by
                    // another engine: tried again when its `* ROOT` push says it is free.
                    let said = "cannot claim \(r): \(code)\(message.map { " \($0)" } ?? ""); trying again when it is free"
                    if book.refused(r, code: code) { logger.warning("\(said)") } else { logger.debug("\(said)") }
                }
            }
        }
    }

    func dispatch(_ m: WireMessage, _ book: inout ClaimBook) {
        switch m.messageKind {
        case .root:
            guard let r = Root(m) else { return }
            _ = book.root(String(decoding: r.path, as: UTF8.self), removed: r.state == nil, free: r.provider == nil && !r.scanning)
        case .changed:
            guard let c = Changed(m), let gen = c.gen else { return }
            onPush(.changed(path: String(decoding: c.path, as: UTF8.self), gen: gen, from: c.from.map { String(decoding: $0, as: UTF8.self) }))
        case .resetChanges:
            guard let r = ResetChanges(m) else { return }
            onPush(.resetChanges(root: String(decoding: r.path, as: UTF8.self)))
        case .action:
            guard let a = ActionCall(m) else { return }
            onPush(.action(id: a.id, paths: a.paths.map { String(decoding: $0, as: UTF8.self) },
                           target: a.target.map { String(decoding: $0, as: UTF8.self) }, reply: a.reply))
        default:
            break
        }
    }
}

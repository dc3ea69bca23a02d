import NIOCore
import SyncBadgeWatchEvents

// The server's only code that nothing in the daemon calls: the hooks of the fast-forward soak
// (`syncbadge-soak`, run by `make reliability`). The soak is an executable that drives a whole
// daemon in-process, not a test target that could hold them, so it reaches them through
// `@_spi(Soak)`, and they are kept here, in one place, apart from what the daemon runs.

extension Daemon {
    /// A function that applies events as if the watcher had reported them, returning once they
    /// are applied (pushed, and queued for the store): millions of events faster than a file
    /// system makes them.
    @_spi(Soak) public func injector() -> @Sendable ([WatcherMessage]) throws -> Void {
        let hub = self.hub
        return { events in
            let applied = hub.eventLoop.makePromise(of: Void.self)
            // A watcher's batch opens with the identities it read; these events come with none.
            hub.eventLoop.execute {
                // `applied` succeeds once these events (and all queued before) are applied: at
                // once unless one waits for a file's identity (Ingest), so that the soak
                // injects no faster than the hub applies.
                hub.value.ingest.queue.wait(applied)
                hub.value.apply([.identities([:])] + events)
            }
            try applied.futureResult.wait()
        }
    }
}

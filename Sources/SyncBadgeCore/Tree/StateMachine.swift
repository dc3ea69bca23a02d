/// Everything the daemon keeps about one path.
public struct EntryRecord: Sendable, Equatable {
    // Stored fields are ordered largest first: Swift lays a struct out in declaration order,
    // and every entry of the tree holds one of these (30 bytes, 32 in an array).
    public var gen: UInt64
    /// A provider's message and badge override, which few entries have: out of line, so that
    /// the others pay 8 bytes for them and not 32.
    private var notes: Notes?
    /// The digest of the file's identity when it became `synced`.
    public var syncedIdentity: FileIdentity.Digest?
    public var kind: EntryKind
    /// The entry's own state (a directory's roll-up is computed from its counts).
    public var state: SyncState
    public var progress: UInt8?
    /// Ignored because the root's ignore rules (or its ignored parent) say so.
    public var ruleIgnored: Bool = false

    public init(kind: EntryKind, state: SyncState, gen: UInt64) {
        self.kind = kind
        self.state = state
        self.gen = gen
    }

    public var message: String? {
        get { notes?.message }
        set { notes = Notes.make(message: newValue, badge: badge) }
    }

    /// A provider's badge override.
    public var badge: String? {
        get { notes?.badge }
        set { notes = Notes.make(message: message, badge: newValue) }
    }

    public var isTombstone: Bool { kind == .gone }

    /// Immutable, so a record copied with it keeps value semantics: a setter above replaces
    /// the instance and never changes one that another record shares.
    final class Notes: Sendable, Equatable {
        let message: String?
        let badge: String?

        private init(message: String?, badge: String?) {
            self.message = message
            self.badge = badge
        }

        static func make(message: String?, badge: String?) -> Notes? {
            message == nil && badge == nil ? nil : Notes(message: message, badge: badge)
        }

        static func == (a: Notes, b: Notes) -> Bool { a.message == b.message && a.badge == b.badge }
    }
}

/// The transition rules of one path (PROTOCOL.md, "The state rules"), with no I/O: each
/// function takes the current record and an event and returns the new record, or nil when the
/// event changes nothing. Generations come from `gens`, bumped only when something changes.
public enum StateMachine {
    /// A local change the watcher saw (create, write, attribute change, move in, rename target).
    /// An ignored entry, or a synced file whose identity is the recorded one, does not change.
    public static func localChange(_ r: EntryRecord, kind: EntryKind, identity: FileIdentity?, gens: inout UInt64) -> EntryRecord? {
        if r.state == .ignored { return nil }
        if r.state == .synced, r.kind == kind, let recorded = r.syncedIdentity, recorded == identity?.digest { return nil }
        return changed(r, kind: kind, gens: &gens)
    }

    /// Whether a rescan's view of an entry shows no change: only an identity recorded at
    /// `synced` can tell; without one, the entry keeps what it had.
    public static func identityUnchanged(_ r: EntryRecord, identity: FileIdentity?) -> Bool {
        guard r.state == .synced, let recorded = r.syncedIdentity, let identity else { return true }
        return recorded == identity.digest
    }

    /// The path was deleted or moved away: a `pending` tombstone. Nil when it is ignored,
    /// which needs no tombstone: the caller drops the entry.
    public static func deleted(_ r: EntryRecord, gens: inout UInt64) -> EntryRecord? {
        if r.state == .ignored || r.isTombstone { return nil }
        return changed(r, kind: .gone, gens: &gens)
    }

    /// The ignore rules now ignore the entry.
    public static func becameIgnored(_ r: EntryRecord) -> EntryRecord {
        var n = r
        n.state = .ignored
        n.ruleIgnored = true
        n.progress = nil
        return n
    }

    /// The ignore rules stopped ignoring the entry: it is `pending`, with a new gen.
    public static func stoppedIgnoring(_ r: EntryRecord, gens: inout UInt64) -> EntryRecord {
        var n = changed(r, kind: r.kind, gens: &gens)
        n.ruleIgnored = false
        return n
    }

    static func changed(_ r: EntryRecord, kind: EntryKind, gens: inout UInt64) -> EntryRecord {
        gens += 1
        var n = r
        n.kind = kind
        n.state = .pending
        n.gen = gens
        // What a provider said about the old content no longer applies.
        n.progress = nil
        n.message = nil
        n.badge = nil
        n.syncedIdentity = nil
        return n
    }
}

/// What a provider's `SET` does to one entry (the daemon's answer to the provider is a
/// `SetOutcome`).
public enum SetEffect: Sendable, Equatable {
    case applied(EntryRecord)
    /// `synced` on a tombstone: the deletion reached the remote side, the entry goes.
    case dropTombstone
    /// The provider's generation is older than the path's: nothing changes.
    case stale
    /// The entry is ignored by the root's rules: a provider's report does not change that.
    case unchanged
}

extension StateMachine {
    /// A provider's `SET`. Without a generation it applies to the current one; with an older one
    /// it is stale and changes nothing, so a file written during its upload stays `pending`.
    /// `identity` is the file's identity now, recorded when it becomes `synced`.
    public static func set(_ r: EntryRecord, _ req: SetRequest, identity: FileIdentity?) -> SetEffect {
        if let gen = req.gen, gen < r.gen { return .stale }
        if r.ruleIgnored { return .unchanged }
        if r.isTombstone && req.state == .synced { return .dropTombstone }
        var n = r
        n.state = req.state
        n.progress = req.progress
        n.message = req.message
        n.badge = req.badge
        n.syncedIdentity = req.state == .synced && !r.isTombstone ? identity?.digest : nil
        return .applied(n)
    }
}

extension StateMachine {
    /// The engine that set this path `syncing` went away while the daemon runs: the path is
    /// `pending` again, same gen, progress and badge cleared, `message` saying why. Nil when
    /// the path is no longer `syncing` (something else happened to it meanwhile).
    public static func engineGone(_ r: EntryRecord, message: String) -> EntryRecord? {
        guard r.state == .syncing else { return nil }
        var n = r
        n.state = .pending
        n.progress = nil
        n.badge = nil
        n.message = message
        return n
    }
}

#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FoundationEssentials
import SyncBadgeClient
import SyncBadgeCore
import SyncBadgeProtocol

// Every command names itself: the default name comes from `String(describing: Self.self)`,
// whose dynamic casts scan every protocol conformance of the static binary, for each
// subcommand, on every start (a third of `syncbadge status`'s start-up time).
struct SyncBadgeCLI: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncbadge",
        abstract: "Sync status badges for your files, from the syncbadged daemon.",
        discussion: """
            Register a folder with `syncbadge add DIR`; every file in it then has a sync state \
            (unknown, pending, syncing, synced, error, conflict, ignored) that sync engines report \
            and `syncbadge status`, `ls` and `watch` show. Relative paths are taken from the \
            current directory.

            The options every subcommand takes (--socket, --no-spawn, and --json where it \
            applies) may also stand before the subcommand: `syncbadge --socket S roots`.

            Exit codes: 0 success, 1 an error the daemon reported, 64 a usage error, 69 no daemon \
            answers (start one with `syncbadged &`).
            """,
        version: SyncBadgeVersion.string,
        subcommands: [Add.self, Remove.self, Roots.self, Status.self, Ls.self, Watch.self, Badges.self, SetState.self, Changes.self, Menu.self, Action.self, Toolbar.self, Wait.self, Bridge.self])
}

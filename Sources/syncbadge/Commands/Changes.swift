#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FoundationEssentials
import SyncBadgeClient
import SyncBadgeProtocol

/// `syncbadge changes`: what a sync engine has to upload.
struct Changes: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "changes",
        abstract: "List the pending paths of a root (as a sync engine); --follow streams new changes.",
        discussion: """
            Prints one path per line (with -z: NUL-terminated and unescaped, safe for any file \
            name). Deleted paths are listed too: their tombstones stay until `syncbadge set synced` \
            reports the deletion. With --follow, each later change is printed as it happens, and \
            if the daemon had to drop some, or restarted, the full list is printed again.
            """)

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The root.") var root: String
    @Flag(help: "Keep running and print changes as they happen.") var follow = false
    @Flag(name: .customShort("z"), help: "Terminate paths with NUL instead of a newline.") var nul = false
    @Flag(help: "JSON Lines: path, gen, and for followed changes what and from.") var json = false

    func run() throws {
        let path = CLI.absolute(root)
        var c = try connection.connect(role: .provider)
        guard follow else { return listAll(c, path) }
        CLI.unblockSignals()
        // When the daemon restarts, subscribe again and list everything again: what changed
        // while it was away is in that list.
        while true {
            stream(c, path)
            Output.write("syncbadge: the daemon went away; waiting for it to come back\n", to: STDERR_FILENO)
            c = connection.reconnect(role: .provider)
        }
    }

    /// Lists, then prints each change pushed, until the daemon goes away.
    func stream(_ c: Connection, _ path: [UInt8]) {
        // Subscribe first so that nothing between the listing and the feed is missed.
        _ = CLI.run(path) { try c.request(Request(.subscribeChanges, [.path(path)])) }
        listAll(c, path)
        while true {
            guard let m = try? c.nextPush(timeout: nil) else { return }
            switch m.messageKind {
            case .changed:
                guard let c = Changed(m) else { continue }
                if json {
                    var f = [JSON.path(c.path), "\"gen\":\(c.gen ?? 0)", "\"what\":\(JSON.string(c.what?.rawValue ?? ""))"]
                    if let from = c.from { f.append(JSON.path(from, key: "from")) }
                    emit("{" + f.joined(separator: ",") + "}")
                } else {
                    emit(c.path)
                }
            case .resetChanges:
                listAll(c, path)
            case .bye:
                return
            default:
                continue
            }
        }
    }

    func listAll(_ c: Connection, _ path: [UInt8]) {
        let reply = CLI.run(path) { try c.request(Request(.changes, [.path(path)])) }
        for i in reply.data.compactMap(Item.init) {
            if json { emit(JSON.item(i)) } else { emit(i.path) }
        }
    }

    func emit(_ line: String) {
        Output.write(line + (nul ? "\0" : "\n"))
    }

    func emit(_ path: [UInt8]) {
        Output.write(path + [nul ? 0 : 0x0A])
    }
}

#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FoundationEssentials
import SyncBadgeClient
import SyncBadgeProtocol

/// `syncbadge action`: trigger a menu item.
struct Action: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "action",
        abstract: "Trigger a menu item on paths (ids from `syncbadge menu`) and print the sync engine's answer.",
        discussion: """
            Built-in: syncbadge.ignore, syncbadge.unignore, syncbadge.details (prints the details). \
            Others go to the sync engine that claimed the root, or with --provider to the engine of \
            that name (a toolbar item's action needs no path). When the daemon supports it \
            (protocol 1.2), the command waits up to 10 seconds for the engine's answer and prints \
            it. Exit codes: 0 done, 1 the engine reported a failure (its message is printed) or \
            the daemon refused, 75 the engine did not answer in time (try again).
            """)

    /// sysexits: EX_TEMPFAIL, for an engine that did not answer in time.
    static let timeoutExit: Int32 = 75

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The action id.") var id: String
    @Argument(help: "The paths it applies to.") var paths: [String] = []
    @Option(help: "The directory the menu was shown in.") var target: String?
    @Option(help: "Send it to the sync engine of this name (as `syncbadge toolbar` lists it).") var provider: String?
    @Flag(help: "JSON output: {\"ok\": true|false, \"message\": ..., \"error\": ...}.") var json = false

    func validate() throws {
        guard WireParser.isID(Array(id.utf8)) else { throw ValidationError("'\(id)' is not an action id ([A-Za-z0-9._-], 1-64)") }
        guard !paths.isEmpty || target != nil || provider != nil else { throw ValidationError("give a path, --target or --provider") }
    }

    func run() throws {
        let c = try connection.connect()
        let selected = paths.map(CLI.absolute)
        let request = Request.action(id, target: target.map(CLI.absolute), provider: provider, paths: selected,
                                     reply: c.capabilities.contains("action-reply"))
        let what = selected.first ?? target.map(CLI.absolute)
        let reply: Reply
        do {
            reply = try c.request(request)
        } catch ClientError.server(let code, let message) where code == "failed" || code == "timeout" {
            let text = message ?? (code == "failed" ? "the sync engine reported a failure" : "the sync engine did not answer in time")
            if json {
                printLine("{\"ok\":false,\"error\":\(JSON.string(code)),\"message\":\(JSON.string(text))}")
            } else {
                Output.write("syncbadge: \(what.map { PathBytes.display($0) + ": " } ?? "")\(text)\n", to: STDERR_FILENO)
            }
            throw ExitCode(code == "timeout" ? Self.timeoutExit : 1)
        } catch {
            if json, case ClientError.server(let code, let message) = error {
                printLine("{\"ok\":false,\"error\":\(JSON.string(code))" + (message.map { ",\"message\":\(JSON.string($0))" } ?? "") + "}")
                throw ExitCode(1)
            }
            CLI.fail(error, about: what)
        }
        let message = Ok(reply.ok)?.message.map { String(decoding: $0, as: UTF8.self) }
        if json {
            printLine("{\"ok\":true" + (message.map { ",\"message\":\(JSON.string($0))" } ?? "") + "}")
        } else if let message {
            printLine(message)
        }
    }
}

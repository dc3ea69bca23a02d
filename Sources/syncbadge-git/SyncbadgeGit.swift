#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import GitAdapter
import Logging
import SyncBadgeCore
import SyncBadgeLogging

@main
struct SyncbadgeGit: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncbadge-git",
        abstract: "Shows git's view of working trees as SyncBadge badges.",
        usage: """
            syncbadge-git [--socket PATH] [--log-level LEVEL] [REPO...]
            syncbadge-git add DIR
            syncbadge-git remove DIR
            """,
        discussion: """
            A long-lived sync engine for syncbadged: each git working tree it follows becomes a \
            root it claims, and every file shows git's state: synced (committed and pushed), \
            pending (modified, staged, untracked, deleted, not pushed, or no upstream), conflict \
            (unmerged), ignored (by .gitignore, info/exclude or core.excludesFile, and .git \
            itself), error (git cannot read the repository, or a push or pull started from a \
            menu failed), and syncing with git's progress while such a push or pull runs.

            It follows the working trees named on its command line and those listed one per \
            line in $XDG_CONFIG_HOME/syncbadge/git-repos (~/.config/syncbadge/git-repos by \
            default), and re-reads that file when it changes: `syncbadge-git add DIR` and \
            `syncbadge-git remove DIR` edit it.

            git runs with your own configuration and credential helpers, never with a prompt \
            (GIT_TERMINAL_PROMPT=0, no terminal).

            Without a subcommand it runs (`syncbadge-git run`): in the foreground, logging to \
            stderr, until SIGTERM or SIGINT. Menus: "Show log", "Stage" and "Unstage" on files; \
            "Pull", "Push" and "Fetch" on a folder; the toolbar item shows the branch with its \
            ahead and behind counts (main ↑2 ↓1). docs/ENGINES.md has the details.
            """,
        version: SyncBadgeVersion.string,
        subcommands: [Run.self, Add.self, Remove.self],
        defaultSubcommand: Run.self)
}

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Follow the working trees (the default).",
        discussion: "Runs in the foreground until it is stopped (SIGTERM or SIGINT), logging to stderr.")

    @Option(help: "syncbadged's socket (default: as every SyncBadge client finds it).")
    var socket: String?

    @OptionGroup var logging: LoggingOptions

    @Argument(help: "Working trees to follow, beside those listed in the file.")
    var repositories: [String] = []

    func run() throws {
        let logger = logging.bootstrap(label: "syncbadge-git")
        let env = ProcessInfo.processInfo.environment
        let socketPath = SocketPath.resolve(explicit: socket, environment: env, uid: getuid())
        let file = ReposFile.path(environment: env)
        let cwd = FileManager.default.currentDirectoryPath
        let repos = repositories.map { $0.hasPrefix("/") ? $0 : cwd + "/" + $0 }
        let provider = try GitProvider(socketPath: socketPath, repositories: repos, reposFile: file, home: env["HOME"] ?? "/",
                                     git: ProcessGitRunner(environment: env), logger: logger)
        logger.info("following the working trees in \(file)\(repos.isEmpty ? "" : " and \(repos.joined(separator: ", "))") for syncbadged at \(socketPath)")
        provider.run()
    }
}

/// The directory as the list names it: absolute, and the working tree's top level when it is in one.
func topLevel(_ dir: String) throws -> String {
    let cwd = FileManager.default.currentDirectoryPath
    let path = dir.hasPrefix("/") ? dir : cwd + "/" + dir
    var isDir: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir), isDir.boolValue else {
        throw ValidationError("\(dir): no such directory")
    }
    let out = ProcessGitRunner(environment: ProcessInfo.processInfo.environment).run(["rev-parse", "--show-toplevel"], in: path)
    guard out.ok else { throw ValidationError("\(dir) is not in a git working tree: \(out.message)") }
    return String(decoding: out.stdout, as: UTF8.self).trimmingCharacters(in: .newlines)
}

struct Add: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add a working tree to the list the adapter follows.",
        discussion: "Writes its top level to $XDG_CONFIG_HOME/syncbadge/git-repos; a running syncbadge-git follows it at once.")

    @Argument(help: "A directory in the working tree.")
    var directory: String

    func run() throws {
        let env = ProcessInfo.processInfo.environment
        let file = ReposFile.path(environment: env)
        let top = try topLevel(directory)
        let text = ReposFile.read(file) ?? ""
        guard let updated = ReposFile.adding(top, to: text, home: env["HOME"] ?? "/") else {
            print("\(top) is already in \(file)")
            return
        }
        try ReposFile.write(updated, to: file)
        print("added \(top) to \(file)")
    }
}

struct Remove: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove a working tree from the list the adapter follows.",
        discussion: "A running syncbadge-git stops claiming it; the root stays registered with syncbadged (`syncbadge remove` forgets it).")

    @Argument(help: "A directory in the working tree, or the path as the list names it.")
    var directory: String

    func run() throws {
        let env = ProcessInfo.processInfo.environment
        let file = ReposFile.path(environment: env)
        let home = env["HOME"] ?? "/"
        let text = ReposFile.read(file) ?? ""
        let cwd = FileManager.default.currentDirectoryPath
        // The path as written, or the working tree it is in (which may be gone already).
        var candidates = [directory.hasPrefix("/") ? directory : cwd + "/" + directory]
        if let top = try? topLevel(directory) { candidates.append(top) }
        for c in candidates {
            if let updated = ReposFile.removing(c, from: text, home: home) {
                try ReposFile.write(updated, to: file)
                print("removed \(c) from \(file)")
                return
            }
        }
        FileHandle.standardError.write(Data("syncbadge-git: \(directory) is not in \(file)\n".utf8))
        throw ExitCode(1)
    }
}

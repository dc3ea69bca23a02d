import Logging

/// The working trees the adapter follows: those named on its command line and in the list
/// file, found with `git rev-parse`, each with its git directories watched. Reloaded when the
/// file changes; claims are the caller's.
final class RepositoryList {
    let reposFile: String
    let commandLine: [String]
    let home: String
    let git: any GitRunner
    let logger: Logger
    let watcher: GitWatcher
    private(set) var byTop: [String: Repository] = [:]
    private var trees = FollowedTrees()
    /// The watch key of the list file's directory: no top level is empty.
    static let fileKey = "\u{0}config"

    init(reposFile: String, commandLine: [String], home: String, git: any GitRunner, logger: Logger) throws {
        self.reposFile = reposFile
        self.commandLine = commandLine
        self.home = home
        self.git = git
        self.logger = logger
        watcher = try GitWatcher()
    }

    var sorted: [Repository] { byTop.values.sorted { $0.top < $1.top } }

    func containing(_ path: [UInt8]) -> Repository? {
        byTop.values.first { $0.relative(path) != nil }
    }

    /// Watches the list file's directory (made first: the file may appear later).
    func watchFile() {
        let dir = ReposFile.directory(of: reposFile)
        try? ReposFile.makeDirectories(dir)
        watcher.watchDirectory(dir, key: Self.fileKey)
    }

    /// Reads the list again: the trees no longer named (unwatched, to be unclaimed) and the new
    /// ones (watched, to be claimed).
    func reload() -> (added: [Repository], dropped: [Repository]) {
        let listed = ReposFile.read(reposFile).map { ReposFile.parse($0, home: home) } ?? []
        let found = (commandLine + listed).map { ($0, Location.find($0, git: git)) }
        let change = trees.reconcile(found, following: Set(byTop.keys))
        for (dir, why) in change.say { logger.warning("not following \(dir): \(why)") }
        var dropped: [Repository] = []
        for top in change.drop {
            guard let r = byTop.removeValue(forKey: top) else { continue }
            logger.info("no longer following \(top)")
            watcher.unwatch(key: top)
            dropped.append(r)
        }
        let added = change.add.map { loc in
            let r = Repository(loc)
            byTop[loc.top] = r
            watcher.watchRepository(key: loc.top, gitDir: loc.gitDir, commonDir: loc.commonDir)
            return r
        }
        return (added, dropped)
    }

    /// What the watcher saw: each repository whose git files changed gets a full pass (after
    /// git's writes settle). True when the list file changed, to be reloaded.
    func watcherEvents() -> Bool {
        var fileChanged = false
        let fileName = String(reposFile.split(separator: "/").last ?? "")
        for (key, names) in watcher.drain() {
            if key == Self.fileKey {
                if names.contains(fileName) { fileChanged = true }
                continue
            }
            guard let r = byTop[key] else { continue }
            logger.trace("\(r.top): git changed \(names.sorted())")
            // A push or fetch that worked, from anywhere, ends the error a failed one left.
            if r.operationError != nil, names.contains(where: { $0.contains("/refs/remotes/") }) { r.operationError = nil }
            r.schedule.requestFull(settle: true, now: .now)
        }
        return fileChanged
    }
}

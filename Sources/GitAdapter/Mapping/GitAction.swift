/// What a menu action asks of git, from its id alone, and the words of its answers.
public enum GitAction: Sendable, Equatable {
    /// A fetch in every repository (the toolbar's item).
    case fetchAll
    /// The quick ones, answered with what git said: "Show log", "Stage", "Unstage".
    case log, stage, unstage
    /// A push, pull or fetch: run in the background, its progress shown on the root.
    case operation(String)
    case unknown(String)

    public init(id: String) {
        switch id {
        case "git.fetch-all": self = .fetchAll
        case "git.log": self = .log
        case "git.stage": self = .stage
        case "git.unstage": self = .unstage
        case "git.pull", "git.push", "git.fetch": self = .operation(String(id.dropFirst(4)))
        default: self = .unknown(id)
        }
    }

    /// git's arguments and pathspec for a quick action on these paths (relative to the top
    /// level, "" for the top level itself); `hasHead`: the branch has a commit (a file is
    /// unstaged from an empty index otherwise). Nil for the others.
    public func command(_ rels: [[UInt8]], hasHead: Bool) -> (arguments: [String], paths: [[UInt8]])? {
        let named = rels.map { $0.isEmpty ? Array(".".utf8) : $0 }
        switch self {
        case .log:
            return (["--literal-pathspecs", "log", "-n", "10", "--date=short", "--format=%h %ad %an: %s"], rels.contains([]) ? [] : rels)
        case .stage:
            return (["--literal-pathspecs", "add", "-A"], named)
        case .unstage:
            return (hasHead ? ["--literal-pathspecs", "restore", "--staged"] : ["--literal-pathspecs", "rm", "--cached", "-r", "-q"], named)
        default:
            return nil
        }
    }

    /// The answer to a quick action on `count` paths, from what git left.
    public func answer(_ out: GitOutput, count: Int) -> ActionAnswer {
        guard out.ok else { return ActionAnswer(out.message, failed: true) }
        let paths = "\(count) path\(count == 1 ? "" : "s")"
        switch self {
        case .log:
            let text = String(decoding: out.stdout, as: UTF8.self).trimmingSpaces
            return ActionAnswer(text.isEmpty ? "no commit changed \(count == 1 ? "it" : "them")" : text)
        case .stage: return ActionAnswer("staged \(paths)")
        case .unstage: return ActionAnswer("unstaged \(paths)")
        default: return ActionAnswer(nil)
        }
    }

    public static func fetchingAll(_ count: Int) -> ActionAnswer {
        ActionAnswer("fetching \(count) repositor\(count == 1 ? "y" : "ies")")
    }
}

/// An `ANSWER` to an action: its message, and whether it failed.
public struct ActionAnswer: Sendable, Equatable {
    public var message: String?
    public var failed: Bool

    public init(_ message: String?, failed: Bool = false) {
        self.message = message
        self.failed = failed
    }
}

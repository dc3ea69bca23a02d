#if canImport(Glibc)
import Glibc
#endif

/// Where git keeps a working tree's state: `git rev-parse` in the directory.
struct Location: Equatable {
    var top: String
    var gitDir: String
    var commonDir: String

    static func find(_ dir: String, git: any GitRunner) -> Result<Location, GitFailure> {
        let out = git.run(["rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir", "--git-common-dir"], in: dir)
        guard out.ok else { return .failure(GitFailure(message: out.message)) }
        let lines = String(decoding: out.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
        guard lines.count == 3 else { return .failure(GitFailure(message: "\(dir) is not a git working tree")) }
        return .success(Location(top: lines[0], gitDir: lines[1], commonDir: lines[2]))
    }
}

struct GitFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// The files each commit not yet in the upstream changed, from
/// `git log -c --format=%x01 --name-only -z --no-renames <upstream>..HEAD`.
public enum UnpushedLog {
    /// How many of those commits changed each path.
    public static func parse(_ output: [UInt8]) -> [[UInt8]: Int] {
        var counts: [[UInt8]: Int] = [:]
        // Each commit is its marker record, then its names; git puts a newline before the
        // first name of a commit (the end of the empty format line).
        var firstOfCommit = false
        for r in output.split(separator: 0, omittingEmptySubsequences: true) {
            if r.count == 1 && r.first == 1 {
                firstOfCommit = true
                continue
            }
            var name = r
            if firstOfCommit && name.first == UInt8(ascii: "\n") { name = name.dropFirst() }
            firstOfCommit = false
            if name.isEmpty { continue }
            counts[Array(name), default: 0] += 1
        }
        return counts
    }
}

/// Which working trees the adapter follows, from the directories named (on the command line
/// and in the list) and where git found each: those to add, those to drop, and the directories
/// that are not working trees, each said once until its reason changes.
struct FollowedTrees: Sendable {
    /// Directories named that are not working trees, and why.
    private(set) var refused: [String: String] = [:]

    struct Change: Equatable {
        /// New, sorted by top level.
        var add: [Location] = []
        /// Followed no more, sorted.
        var drop: [String] = []
        /// Refusals that are news.
        var say: [(dir: String, why: String)] = []

        static func == (a: Change, b: Change) -> Bool {
            a.add == b.add && a.drop == b.drop && a.say.elementsEqual(b.say) { $0.dir == $1.dir && $0.why == $1.why }
        }
    }

    /// `found`: each directory named, in order, and what `git rev-parse` made of it.
    mutating func reconcile(_ found: [(dir: String, location: Result<Location, GitFailure>)], following: Set<String>) -> Change {
        var wanted: [String: Location] = [:]
        var still: [String: String] = [:]
        var change = Change()
        for (dir, location) in found {
            switch location {
            case .success(let loc):
                wanted[loc.top] = loc
            case .failure(let f):
                if refused[dir] != f.message && still[dir] == nil { change.say.append((dir, f.message)) }
                still[dir] = f.message
            }
        }
        refused = still
        change.drop = following.filter { wanted[$0] == nil }.sorted()
        change.add = wanted.filter { !following.contains($0.key) }.sorted { $0.key < $1.key }.map(\.value)
        return change
    }
}

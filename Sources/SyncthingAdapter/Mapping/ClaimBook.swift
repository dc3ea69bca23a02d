/// Which roots one provider connection holds, and which the daemon refused. A refused claim
/// (`ERR busy`: another provider holds the root, or it is still in its first scan, or it
/// overlaps another root; `ERR not-found`: not a root yet) is not held: the root is claimed
/// again when its `* ROOT` push says it may work now, or when the adapter names its roots
/// again. Each refusal is said once per reason, so a root that stays refused is not a warning
/// at every try.
public struct ClaimBook: Sendable, Equatable {
    public enum Action: Sendable, Equatable {
        case claim(String)
        case unclaim(String)
    }

    /// The roots the adapter asks for, in its order.
    public private(set) var wanted: [String] = []
    public private(set) var held: Set<String> = []
    /// Refused roots and the daemon's error code, until a push or the adapter says to try again.
    public private(set) var refused: [String: String] = [:]
    /// The code last said for each root.
    var said: [String: String] = [:]

    public init() {}

    /// The claims to make now: roots wanted, neither held nor refused.
    public var claims: [Action] {
        wanted.filter { !held.contains($0) && refused[$0] == nil }.map(Action.claim)
    }

    /// The adapter asks for exactly these roots: those held and no longer wanted are given up,
    /// and every refused one is tried once more (the adapter may have just added it).
    public mutating func follow(_ roots: [String]) -> [Action] {
        wanted = roots
        refused = [:]
        said = said.filter { roots.contains($0.key) }
        return held.subtracting(roots).sorted().map(Action.unclaim) + claims
    }

    /// `CLAIM` answered `OK`.
    public mutating func claimed(_ root: String) {
        held.insert(root)
        refused[root] = nil
        said[root] = nil
    }

    /// `UNCLAIM` answered (`OK`, or `ERR not-found` when the root went first): not held.
    public mutating func unclaimed(_ root: String) {
        held.remove(root)
    }

    /// `CLAIM` answered `ERR <code>`: not held. True when this refusal is news, to be said as a
    /// warning (a repeat of the same code is not).
    public mutating func refused(_ root: String, code: String) -> Bool {
        held.remove(root)
        refused[root] = code
        defer { said[root] = code }
        return said[root] != code
    }

    /// A `* ROOT` push: `removed`, or whether the root is free (no provider holds it and its
    /// first scan is over). A refused root named free is tried again, and so is one that a
    /// removed root overlapped (roots do not nest). One removed itself is not: the claim would
    /// add it back. A held root that is removed is held no more (REMOVE-ROOT ends its claim):
    /// it waits as refused, unsaid, and is claimed again once a push says it is a root again.
    /// Returns the claims to make now.
    public mutating func root(_ path: String, removed: Bool, free: Bool) -> [Action] {
        if removed, held.remove(path) != nil {
            refused[path] = "removed"
            said[path] = "removed"
        }
        for r in refused.keys where r == path ? free && !removed : removed && Self.overlaps(r, path) {
            refused[r] = nil
        }
        return claims
    }

    static func overlaps(_ a: String, _ b: String) -> Bool {
        a == b || a.hasPrefix(b.hasSuffix("/") ? b : b + "/") || b.hasPrefix(a.hasSuffix("/") ? a : a + "/")
    }
}

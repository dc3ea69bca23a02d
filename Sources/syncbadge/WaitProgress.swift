#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FoundationEssentials
import SyncBadgeClient
import SyncBadgeProtocol

/// What `syncbadge wait` knows of each path it waits for, and what it concludes. No I/O: the
/// command feeds it the `ITEM`s it reads (answers and pushes) and acts on `verdict`.
struct WaitProgress {
    enum Verdict: Equatable {
        case waiting
        /// Every path is `synced` (or `ignored`: nothing will sync it).
        case synced
        /// These paths are in `error` or `conflict` (a directory: somewhere below it).
        case failed([[UInt8]])
    }

    private(set) var items: [[UInt8]: Item] = [:]
    let paths: [[UInt8]]
    /// The last `syncing` entry heard of, for the progress line.
    private(set) var lastSyncing: Item?

    init(paths: [[UInt8]]) {
        self.paths = paths
    }

    /// Waited-for paths known only as tombstones: their deletion is synced when the tombstone
    /// goes, which no push says (the parent's counts change).
    var deletions: [[UInt8]] { paths.filter { items[$0]?.kind == .gone } }

    /// A tombstone waited for went: its deletion reached the other side.
    mutating func deletionSynced(_ path: [UInt8]) {
        guard var i = items[path] else { return }
        i.state = .synced
        items[path] = i
    }

    /// An `ITEM` of a path waited for, or of a sibling (a pushed child of an observed directory).
    mutating func heard(_ item: Item) {
        // A directory is `syncing` through its roll-up, which says nothing of what moves; one
        // with progress of its own carries a transfer (an engine's new file not there yet).
        if item.state == .syncing && (item.kind != .dir || item.progress != nil) {
            lastSyncing = item
        } else if lastSyncing?.path == item.path {
            lastSyncing = nil
        }
        if paths.contains(item.path) { items[item.path] = item }
    }

    var verdict: Verdict {
        let failed = paths.filter { [.error, .conflict].contains(items[$0]?.state) }
        if !failed.isEmpty { return .failed(failed) }
        let done = paths.allSatisfy { [.synced, .ignored].contains(items[$0]?.state) }
        return done ? .synced : .waiting
    }

    /// One line for a terminal: what is left, and what is syncing.
    var progressLine: String {
        let left = paths.filter { ![.synced, .ignored].contains(items[$0]?.state) }
        var counts = StateCounts()
        for p in left {
            guard let i = items[p] else { continue }
            if let c = i.counts {
                counts.add(c)
                counts[.synced] = 0
                counts[.ignored] = 0
            } else if let s = i.state {
                counts[s] += 1
            }
        }
        var parts = ["waiting for \(left.count) of \(paths.count) path\(paths.count == 1 ? "" : "s")"]
        let states = [SyncState.syncing, .pending, .unknown].filter { counts[$0] > 0 }.map { "\(counts[$0]) \($0.name)" }
        if !states.isEmpty { parts.append(states.joined(separator: ", ")) }
        if let s = lastSyncing {
            parts.append("\(PathBytes.display(s.name))\(s.progress.map { " \($0)%" } ?? "")")
        }
        return parts.joined(separator: "; ")
    }
}

/// Seconds on a clock that never jumps.
func monotonicNow() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

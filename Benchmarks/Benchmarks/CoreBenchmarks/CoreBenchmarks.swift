import Benchmark
import SyncBadgeCore

/// The daemon's hot paths, without I/O: what one request or one event costs in the core.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .throughput],
        // A thousand operations per sample: the figures are per operation, in ns or K/s.
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        maxIterations: 1_000_000)

    let root = Array("/home/user/sync".utf8)
    // A path ten directories deep below the root, with a file at the bottom.
    let dirs = (1...10).map { "level\($0)" }
    let deepDir = root + Array(("/" + dirs.joined(separator: "/")).utf8)
    let deepFile = deepDir + Array("/report final.txt".utf8)

    /// A root holding the deep path, plus 100 siblings at every level (so lookups hash
    /// through populated directories).
    func makeTree() -> StateTree {
        var scan = ScanTree()
        var parent: Int32 = -1
        for d in dirs {
            for i in 0..<100 { _ = scan.append(parent: parent, name: Array("sibling-\(i).txt".utf8), kind: .file) }
            parent = scan.append(parent: parent, name: Array(d.utf8), kind: .dir)
        }
        _ = scan.append(parent: parent, name: Array("report final.txt".utf8), kind: .file)
        var tree = StateTree()
        _ = tree.addRoot(path: root, scan: scan, rules: IgnoreRules())
        _ = tree.drainChanges()
        return tree
    }

    Benchmark("Decode a request line (STATUS with an escaped path)") { benchmark in
        let line = Array("42 STATUS /home/user/sync/level1/level2/report%20final.txt".utf8)
        for _ in benchmark.scaledIterations { blackHole(WireParser.parse(line)) }
    }

    Benchmark("Encode an ITEM line") { benchmark in
        let tree = makeTree()
        let view = tree.view(tree.find(deepFile)!)
        benchmark.startMeasurement()  // building the tree is set-up, not the figure
        for _ in benchmark.scaledIterations { blackHole(view.wireLine(head: "*").terminated()) }
    }

    Benchmark("Decode a pushed ITEM line (client side)") { benchmark in
        let line = Array("* ITEM /home/user/sync/level1/report%20final.txt pending badge=pending kind=file gen=42".utf8)
        for _ in benchmark.scaledIterations { blackHole(WireMessage(line: line)) }
    }

    Benchmark("Local change + roll-up, depth 10") { benchmark in
        var tree = makeTree()
        benchmark.startMeasurement()
        for i in benchmark.scaledIterations {
            tree.localChange(deepFile, kind: .file)
            // The daemon drains once per event batch; keep the change list from growing.
            if i % 64 == 0 { blackHole(tree.drainChanges()) }
        }
    }

    Benchmark("STATUS: lookup + ITEM line, depth 10") { benchmark in
        let tree = makeTree()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(tree.view(tree.find(deepFile)!).wireLine(head: "7").terminated())
        }
    }

    // What the daemon's STATUS path does since issue 17 (Requests/PlainStatus.swift): the fields
    // are checked and looked up in the request's own bytes and the answer is appended to a
    // buffer kept across requests (StateTree.appendPlainStatus). Its mallocs per operation
    // should be zero.
    Benchmark("STATUS in place: appendPlainStatus into a reused buffer, depth 10") { benchmark in
        var tree = makeTree()
        // A file ten levels down without a space (a request escapes the deep file's name, which
        // takes the general way): a sibling of the deepest directory.
        let line = Array("7 STATUS ".utf8) + root + Array(("/" + dirs.dropLast().joined(separator: "/") + "/sibling-7.txt").utf8)
        var found: [(id: StateTree.NodeID, start: Int, end: Int, ascii: Bool)] = []
        found.reserveCapacity(4)
        var out: [UInt8] = []
        out.reserveCapacity(512)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            out.removeAll(keepingCapacity: true)
            guard tree.appendPlainStatus(line[...], tag: 0..<1, fieldsFrom: 9, found: &found, into: &out) else {
                fatalError("the path did not resolve")
            }
            blackHole(out.count)
        }
    }

    Benchmark("Whole STATUS request: parse, lookup, answer") { benchmark in
        let tree = makeTree()
        let line = Array("7 STATUS /home/user/sync/level1/level2/level3/level4/level5/level6/level7/level8/level9/level10/report%20final.txt".utf8)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            guard case .request(let req) = WireParser.parse(line), let path = req.fields.first?.bytes, let id = tree.find(path) else {
                fatalError("the request did not parse or resolve")
            }
            var answer = tree.view(id, path: path).wireLine(head: req.tag).terminated()  // as the engine does
            answer.append(contentsOf: Array("7 OK\n".utf8))
            blackHole(answer)
        }
    }
}

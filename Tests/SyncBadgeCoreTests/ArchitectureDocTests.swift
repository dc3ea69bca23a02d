import Foundation
import Testing
@testable import SyncBadgeCore

/// docs/ARCHITECTURE.md names files and types in backticks; this keeps those names true.
///
/// - A backticked token that looks like a repository path (it contains `/` and starts with
///   `Sources/`, `Tests/`, `Examples/`, `Clients/`, `Benchmarks/`, `Reliability/`, `Fuzz/`,
///   `Badges/`, `docs/` or `.ci/`, or it ends in `.swift`, `.py`, `.md`, `.sh`, `.c`, `.h` or
///   `.tsv`) must exist: a file or a directory (a trailing `/` is allowed), `*` and `?` in its
///   last component match at least one entry, `{a,b}` stands for both. A token that does not
///   start at the repository's top (`Support/Tmux.swift`, `shim.h`) must end some file's path.
/// - A backticked token that looks like a Swift type (`UpperCamelCase`, optionally
///   `Type.member`) must be declared (`struct`, `class`, `enum`, `protocol`, `typealias`,
///   `actor` or `extension`) in Swift under `Sources/`, `Tests/` or `Fuzz/`, and its member, if
///   any, declared too (`func`, `var`, `let`, `case`, `init` or a nested type). Target names
///   (directories of `Sources/` and `Tests/`), files at the top (`Makefile`) and the types of
///   other modules (`externalTypes`) pass.
///
/// - The picture's source, docs/dataflow.dot: every node whose id is named like a type is
///   declared, and docs/images/dataflow.svg has the same nodes and edges (`make diagrams`).
/// - A number quoted beside a backticked name ("`StateTree.Node`, 56 bytes", "`EventInbox.slice`
///   (2,048)", "`Hub`, 13 stored properties", DocNumbers.swift) is the code's: the core's
///   here, the server's in SyncBadgeServerTests' ArchitectureNumbersTests, the watcher's in
///   SyncBadgeWatcherTests' ArchitectureWatcherNumbersTests; a number beside a type name that
///   none of them checks fails here.
///
/// Fenced code blocks are skipped by the name checks: the diagrams there are pictures, not references.
@Suite struct ArchitectureDocTests {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func everyPathItNamesExists() throws {
        let check = try ArchitectureDocCheck(repository: Self.repository.path)
        let doc = try String(contentsOfFile: Self.repository.appendingPathComponent("docs/ARCHITECTURE.md").path, encoding: .utf8)
        let tokens = ArchitectureDocCheck.codeSpans(inMarkdown: doc)
        let paths = tokens.filter(ArchitectureDocCheck.isPathToken)
        // Guards the parser: a doc this test reads nothing from would pass whatever it says.
        #expect(paths.count >= 20, "only \(paths.count) path names found in docs/ARCHITECTURE.md")
        for path in check.missingPaths(paths) {
            Issue.record(Comment(rawValue: "docs/ARCHITECTURE.md names `\(path)`, which is no file or directory of the repository"))
        }
    }

    @Test func everyTypeItNamesIsDeclared() throws {
        let check = try ArchitectureDocCheck(repository: Self.repository.path)
        let doc = try String(contentsOfFile: Self.repository.appendingPathComponent("docs/ARCHITECTURE.md").path, encoding: .utf8)
        let tokens = ArchitectureDocCheck.codeSpans(inMarkdown: doc)
        let types = tokens.filter { !ArchitectureDocCheck.isPathToken($0) && ArchitectureDocCheck.isTypeToken($0) }
        #expect(types.count >= 20, "only \(types.count) type names found in docs/ARCHITECTURE.md")
        for problem in check.undeclaredTypes(types) {
            Issue.record(Comment(rawValue: "docs/ARCHITECTURE.md names `\(problem.token)`, but \(problem.reason)"))
        }
    }

    /// The checks can fail: a renamed type, a member that is not there and a path that is not
    /// there are each reported; real names, target names and other modules' types are not.
    @Test func theChecksCatchNamesThatAreNotThere() throws {
        let check = try ArchitectureDocCheck(repository: Self.repository.path)
        let sample = """
            The `Hub` applies `WatcherMessage` batches (`Hub.apply`) from `SyncBadgeWatcher`;
            `HubShell` and `Hub.applyEverything` are not there, nor is
            `Sources/SyncBadgeServer/Nowhere.swift`; `Sources/SyncBadgeServer/Hub/Hub*.swift`,
            `Support/Tmux.swift`, `Makefile` and `EmbeddedEventLoop` are fine.
            ```
            `NotChecked` inside a fence
            ```
            """
        let tokens = ArchitectureDocCheck.codeSpans(inMarkdown: sample)
        #expect(!tokens.contains("NotChecked"))
        let paths = tokens.filter(ArchitectureDocCheck.isPathToken)
        #expect(check.missingPaths(paths) == ["Sources/SyncBadgeServer/Nowhere.swift"])
        let types = tokens.filter { !ArchitectureDocCheck.isPathToken($0) && ArchitectureDocCheck.isTypeToken($0) }
        #expect(check.undeclaredTypes(types).map(\.token) == ["HubShell", "Hub.applyEverything"])
    }

    // MARK: The picture

    /// docs/dataflow.dot: every node named like a type is a type of the code.
    @Test func everyTypeInThePictureIsDeclared() throws {
        let check = try ArchitectureDocCheck(repository: Self.repository.path)
        let dot = try String(contentsOfFile: Self.repository.appendingPathComponent("docs/dataflow.dot").path, encoding: .utf8)
        let types = ArchitectureDocCheck.dotNodes(dot).filter(ArchitectureDocCheck.isTypeToken)
        #expect(types.count >= 10, "only \(types.count) type names found in docs/dataflow.dot")
        for problem in check.undeclaredTypes(types) {
            Issue.record(Comment(rawValue: "docs/dataflow.dot has a node `\(problem.token)`, but \(problem.reason)"))
        }
    }

    /// docs/images/dataflow.svg was rendered from docs/dataflow.dot as it is (`make diagrams`):
    /// the same nodes and edges.
    @Test func thePictureIsRenderedFromItsSource() throws {
        let dot = try String(contentsOfFile: Self.repository.appendingPathComponent("docs/dataflow.dot").path, encoding: .utf8)
        let svg = try String(contentsOfFile: Self.repository.appendingPathComponent("docs/images/dataflow.svg").path, encoding: .utf8)
        let drawn = ArchitectureDocCheck.svgTitles(svg)
        #expect(drawn.nodes == Set(ArchitectureDocCheck.dotNodes(dot)), "docs/images/dataflow.svg is older than docs/dataflow.dot: run make diagrams")
        #expect(drawn.edges == ArchitectureDocCheck.dotEdges(dot), "docs/images/dataflow.svg is older than docs/dataflow.dot: run make diagrams")
        let doc = try String(contentsOfFile: Self.repository.appendingPathComponent("docs/ARCHITECTURE.md").path, encoding: .utf8)
        #expect(doc.contains("](images/dataflow.svg)"), "docs/ARCHITECTURE.md does not show the picture")
    }

    /// The picture's nodes and edges as read from DOT source, and from an SVG Graphviz wrote.
    @Test func thePictureChecksCanFail() throws {
        let check = try ArchitectureDocCheck(repository: Self.repository.path)
        let dot = """
            // A comment naming `Nowhere` is no node.
            digraph d {
                graph [rankdir=LR];
                subgraph cluster_a { label="a thread"; StateTree [label="StateTree\\n(the tree)"]; Nowhere; }
                kernel -> StateTree [label="Nope -> Neither"];
                StateTree -> Hub; Hub -> kernel;
            }
            """
        #expect(ArchitectureDocCheck.dotNodes(dot) == ["StateTree", "Nowhere", "kernel", "Hub"])
        #expect(ArchitectureDocCheck.dotEdges(dot) == ["kernel->StateTree", "StateTree->Hub", "Hub->kernel"])
        let types = ArchitectureDocCheck.dotNodes(dot).filter(ArchitectureDocCheck.isTypeToken)
        #expect(check.undeclaredTypes(types).map(\.token) == ["Nowhere"])
        let svg = """
            <g id="node1" class="node">
            <title>kernel</title>
            </g>
            <g id="edge1" class="edge">
            <title>kernel&#45;&gt;StateTree</title>
            </g>
            """
        let drawn = ArchitectureDocCheck.svgTitles(svg)
        #expect(drawn.nodes == ["kernel"])
        #expect(drawn.edges == ["kernel->StateTree"])
    }

    // MARK: The numbers

    /// The numbers the doc quotes beside a SyncBadgeCore name are the code's; every number
    /// quoted beside a name is checked here or in SyncBadgeServerTests' ArchitectureNumbersTests.
    @Test func theNumbersItQuotesAreTheCodes() throws {
        let doc = try String(contentsOfFile: Self.repository.appendingPathComponent("docs/ARCHITECTURE.md").path, encoding: .utf8)
        let expected: [DocNumbers.Expected] = [
            .init("StateTree.Node", MemoryLayout<StateTree.Node>.stride, .bytes),
            .init("StateTree", Mirror(reflecting: StateTree()).children.count, .storedProperties),
            .init("StateModelTests", StateModelTests.episodes * StateModelTests.stepsPerEpisode, .count),
        ]
        #expect(Set(expected.map(\.name)) == DocNumbers.checkedInCore)
        for problem in DocNumbers.problems(in: doc, expected: expected) {
            Issue.record(Comment(rawValue: "docs/ARCHITECTURE.md: \(problem)"))
        }
        let checked = DocNumbers.checkedInCore.union(DocNumbers.checkedInServer).union(DocNumbers.checkedInWatcher)
        for quote in DocNumbers.quotes(in: doc) where ArchitectureDocCheck.isTypeToken(quote.name) && !checked.contains(quote.name) {
            Issue.record(Comment(rawValue: "docs/ARCHITECTURE.md quotes `\(quote.name)` as \(quote.value) \(quote.unit.rawValue), which no test checks: add it to DocNumbers.checkedInCore, checkedInServer or checkedInWatcher and to its test"))
        }
    }

    /// The reading of quotes can fail: a wrong number, a wrong unit and a name quoted with no
    /// number are each reported.
    @Test func theNumberChecksCanFail() {
        let sample = """
            Nodes (`StateTree.Node`, 80 bytes) sit in one array; `Session.outputHighWater` (1 MiB,
            low mark 256 KiB); `SetPipeline.firstRetry` (250 ms) doubling to
            `SetPipeline.longestRetry` (30 s); the `ActionReplies.defaultTimeout` (10-second
            deadline); `EventInbox.slice` (2,048) messages; `Hub` (24 stored properties);
            `StateTree` holds the tree, and `Store.entries` (pushes) has no number; `Outbox`, 3 stored
            properties.
            """
        #expect(DocNumbers.quotes(in: sample) == [
            .init(name: "StateTree.Node", value: 80, unit: .bytes),
            .init(name: "Session.outputHighWater", value: 1 << 20, unit: .bytes),
            .init(name: "SetPipeline.firstRetry", value: 250, unit: .milliseconds),
            .init(name: "SetPipeline.longestRetry", value: 30_000, unit: .milliseconds),
            .init(name: "ActionReplies.defaultTimeout", value: 10_000, unit: .milliseconds),
            .init(name: "EventInbox.slice", value: 2048, unit: .count),
            .init(name: "Hub", value: 24, unit: .storedProperties),
            .init(name: "Outbox", value: 3, unit: .storedProperties),
        ])
        let problems = DocNumbers.problems(in: sample, expected: [
            .init("StateTree.Node", 56, .bytes),
            .init("SetPipeline.firstRetry", 250, .milliseconds),
            .init("EventInbox.slice", 2048, .bytes),
            .init("StateTree", 12, .storedProperties),
        ])
        #expect(problems == [
            "`StateTree.Node` is quoted as 80 bytes; the code says 56 bytes",
            "`EventInbox.slice` is quoted as 2048 count; the code says 2048 bytes",
            "`StateTree` is quoted with no number (expected 12 stored properties)",
        ])
    }
}

/// The reading and the lookups behind ArchitectureDocTests, without Swift Testing.
struct ArchitectureDocCheck {
    /// Types of other modules (the standard library, Foundation, SwiftNIO, GRDB, swift-log,
    /// ArgumentParser, Swift Testing) and module names that the doc may name.
    static let externalTypes: Set<String> = [
        // Swift and Foundation
        "Array", "Bool", "ContinuousClock", "Data", "Date", "Dictionary", "Duration", "Equatable",
        "FileManager", "Foundation", "FoundationEssentials", "Glibc", "Hashable", "Hasher", "Int",
        "Int32", "Int64", "MemoryLayout", "Mirror", "Never", "Process", "Result", "Sendable", "Set", "String", "Thread",
        "UInt8", "UInt32", "UInt64", "URL",
        // libdispatch, Synchronization, Swift Testing
        "Dispatch", "DispatchQueue", "DispatchSemaphore", "Synchronization", "Mutex", "Atomic",
        "Testing", "Issue",
        // SwiftNIO
        "NIOCore", "NIOPosix", "NIOEmbedded", "NIOTLS", "ByteBuffer", "ByteToMessageDecoder",
        "ByteToMessageHandler", "Channel", "ChannelHandlerContext", "ChannelInboundHandler",
        "ChannelOptions", "CircularBuffer", "EmbeddedChannel", "EmbeddedEventLoop", "EventLoop",
        "EventLoopFuture", "MultiThreadedEventLoopGroup", "NIOAsyncChannel", "NIOLoopBound",
        "NIOThreadPool", "ProtocolNegotiationHandlerStateMachine", "Scheduled", "ServerBootstrap",
        "TimeAmount",
        // GRDB, swift-log, swift-argument-parser, swift-service-lifecycle
        "GRDB", "Database", "DatabaseMigrator", "DatabasePool", "DatabaseQueue", "Row",
        "Logging", "Logger", "LoggingSystem", "StreamLogHandler",
        "ArgumentParser", "ParsableCommand", "ServiceLifecycle", "ServiceGroup",
        // AsyncHTTPClient; the file managers' GObject world (Python's gi)
        "AsyncHTTPClient", "HTTPClient", "GLib", "Gio", "Gtk", "Nautilus", "Nemo", "Caja",
    ]

    static let pathPrefixes = ["Sources/", "Tests/", "Examples/", "Clients/", "Benchmarks/", "Reliability/",
                               "Fuzz/", "Badges/", "docs/", ".ci/"]
    static let pathExtensions = [".swift", ".py", ".md", ".sh", ".c", ".h", ".tsv"]
    /// Where the declarations are looked for.
    static let swiftDirectories = ["Sources", "Tests", "Fuzz"]
    static let typeKeywords: Set<String> = ["struct", "class", "enum", "protocol", "typealias", "actor", "extension"]
    static let memberKeywords: Set<String> = ["func", "var", "let", "case"]
    /// What may follow a declared type's name.
    static let afterTypeName: Set<Character> = ["<", ":", " ", "\t", "{", "="]

    let repository: String
    /// Every file of the repository (build, VCS and cache directories left out), relative.
    let files: [String]
    /// Names declared with a type keyword (`struct Engine`, `extension Engine`, ...).
    let types: Set<String>
    /// Names declared with a member keyword or a type keyword.
    let members: Set<String>

    init(repository: String) throws {
        self.repository = repository
        files = Self.listFiles(under: repository, relative: "")
        var types = Set<String>()
        var members = Set<String>()
        for file in files where file.hasSuffix(".swift")
            && Self.swiftDirectories.contains(where: { file.hasPrefix($0 + "/") }) {
            let text = try String(contentsOfFile: repository + "/" + file, encoding: .utf8)
            Self.declarations(in: text, types: &types, members: &members)
        }
        self.types = types
        self.members = members
    }

    // MARK: Reading the markdown

    /// The contents of every inline code span outside fenced code blocks, in order.
    static func codeSpans(inMarkdown text: String) -> [String] {
        var spans: [String] = []
        var fenced = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.drop(while: { $0 == " " }).hasPrefix("```") {
                fenced.toggle()
                continue
            }
            if fenced { continue }
            let chars = Array(line)
            var i = 0
            while i < chars.count {
                guard chars[i] == "`" else {
                    i += 1
                    continue
                }
                var run = 0
                while i + run < chars.count && chars[i + run] == "`" { run += 1 }
                let start = i + run
                // The closing run: exactly as many backticks.
                var j = start
                var end: Int? = nil
                while j < chars.count {
                    if chars[j] == "`" {
                        var k = 0
                        while j + k < chars.count && chars[j + k] == "`" { k += 1 }
                        if k == run {
                            end = j
                            break
                        }
                        j += k
                    } else {
                        j += 1
                    }
                }
                guard let close = end else { break }
                var content = String(chars[start..<close])
                if run > 1 { content = content.trimmingCharacters(in: .whitespaces) }
                spans.append(content)
                i = close + run
            }
        }
        return spans
    }

    static func isPathToken(_ t: String) -> Bool {
        guard !t.isEmpty, !t.contains(" ") else { return false }
        if t.contains("/") && pathPrefixes.contains(where: { t.hasPrefix($0) }) { return true }
        return pathExtensions.contains { t.hasSuffix($0) }
    }

    /// `UpperCamelCase` (a lower-case letter somewhere, so `SET` and `OK` are words of the
    /// protocol, not types), optionally followed by `.member`.
    static func isTypeToken(_ t: String) -> Bool {
        let parts = t.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 1 || parts.count == 2, let type = parts.first, let first = type.first else { return false }
        guard first.isASCII, first.isUppercase, type.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }),
              type.contains(where: { $0.isLowercase }) else { return false }
        if parts.count == 2 {
            let member = parts[1]
            guard let m = member.first, m.isASCII, m.isLetter || m == "_",
                  member.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else { return false }
        }
        return true
    }

    // MARK: The picture's source and its rendering

    /// DOT source without its comments, quoted strings and attribute lists.
    static func dotStatements(_ dot: String) -> [Substring] {
        var plain = ""
        var inString = false, inAttributes = false, escaped = false
        for line in dot.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.drop(while: { $0 == " " || $0 == "\t" })
            if trimmed.hasPrefix("//") || trimmed.hasPrefix("#") { continue }
            for ch in line {
                if inString {
                    if escaped { escaped = false } else if ch == "\\" { escaped = true } else if ch == "\"" { inString = false }
                    continue
                }
                if ch == "\"" { inString = true; continue }
                if inAttributes { if ch == "]" { inAttributes = false }; continue }
                if ch == "[" { inAttributes = true; continue }
                plain.append(ch)
            }
            plain.append("\n")
        }
        return plain.split(whereSeparator: { $0 == ";" || $0 == "\n" || $0 == "{" || $0 == "}" })
    }

    /// The node ids of a DOT graph, in the order first met: each id of a statement that is a
    /// node or an edge chain (`a -> b -> c`), not `graph`, `node`, `edge`, `subgraph x` or `k=v`.
    static func dotNodes(_ dot: String) -> [String] {
        var out: [String] = []
        for statement in dotStatements(dot) {
            for id in dotIDs(statement) where !out.contains(id) { out.append(id) }
        }
        return out
    }

    /// Its edges as `a->b`, each hop of a chain once.
    static func dotEdges(_ dot: String) -> Set<String> {
        var out = Set<String>()
        for statement in dotStatements(dot) {
            let ids = dotIDs(statement)
            for (a, b) in zip(ids, ids.dropFirst()) { out.insert(a + "->" + b) }
        }
        return out
    }

    private static func dotIDs(_ statement: Substring) -> [String] {
        if statement.contains("=") { return [] }
        let ids = statement.components(separatedBy: "->").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let first = ids.first, !first.isEmpty else { return [] }
        if ids.count == 1 && (first.contains(" ") || ["graph", "node", "edge", "digraph", "subgraph"].contains(first)) { return [] }
        return ids.filter { !$0.isEmpty && !$0.contains(" ") }
    }

    /// The nodes and edges Graphviz drew: each `<g class="node">`'s and `<g class="edge">`'s `<title>`.
    static func svgTitles(_ svg: String) -> (nodes: Set<String>, edges: Set<String>) {
        var nodes = Set<String>(), edges = Set<String>()
        let lines = svg.split(separator: "\n").map(String.init)
        for (i, line) in lines.enumerated() where i + 1 < lines.count {
            let isNode = line.contains("class=\"node\""), isEdge = line.contains("class=\"edge\"")
            guard isNode || isEdge, let start = lines[i + 1].range(of: "<title>"),
                  let end = lines[i + 1].range(of: "</title>") else { continue }
            let title = String(lines[i + 1][start.upperBound..<end.lowerBound])
                .replacingOccurrences(of: "&#45;", with: "-").replacingOccurrences(of: "&gt;", with: ">")
                .replacingOccurrences(of: "&amp;", with: "&")
            if isNode { nodes.insert(title) } else { edges.insert(title) }
        }
        return (nodes, edges)
    }

    // MARK: Paths

    /// The path tokens that name nothing in the repository.
    func missingPaths(_ tokens: [String]) -> [String] {
        tokens.filter { token in
            !Self.expandBraces(token).allSatisfy(exists)
        }
    }

    /// `a/{b,c}.swift` → `a/b.swift`, `a/c.swift` (one group).
    static func expandBraces(_ t: String) -> [String] {
        guard let open = t.firstIndex(of: "{"), let close = t[open...].firstIndex(of: "}") else { return [t] }
        let head = t[..<open], tail = t[t.index(after: close)...]
        return t[t.index(after: open)..<close].split(separator: ",", omittingEmptySubsequences: false)
            .map { String(head) + $0 + tail }
    }

    func exists(_ token: String) -> Bool {
        var path = token
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        let last = path.split(separator: "/").last.map(String.init) ?? path
        let isGlob = last.contains("*") || last.contains("?")
        let fromTop = Self.pathPrefixes.contains { token.hasPrefix($0) }
        if fromTop || isGlob {
            if isGlob {
                let dir = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : ""
                let entries = (try? FileManager.default.contentsOfDirectory(atPath: repository + "/" + dir)) ?? []
                return entries.contains { Self.glob(last, $0) }
            }
            return FileManager.default.fileExists(atPath: repository + "/" + path)
        }
        // Named from somewhere inside (`Support/Tmux.swift`, `shim.h`): the end of some file's path.
        if FileManager.default.fileExists(atPath: repository + "/" + path) { return true }
        return files.contains { $0 == path || $0.hasSuffix("/" + path) }
    }

    /// `*` and `?` over one name.
    static func glob(_ pattern: String, _ name: String) -> Bool {
        let p = Array(pattern), s = Array(name)
        var pi = 0, si = 0
        var star: Int? = nil, starS = 0
        while si < s.count {
            if pi < p.count && (p[pi] == "?" || p[pi] == s[si]) && p[pi] != "*" {
                pi += 1
                si += 1
            } else if pi < p.count && p[pi] == "*" {
                star = pi
                starS = si
                pi += 1
            } else if let st = star {
                pi = st + 1
                starS += 1
                si = starS
            } else {
                return false
            }
        }
        while pi < p.count && p[pi] == "*" { pi += 1 }
        return pi == p.count
    }

    static func listFiles(under root: String, relative: String) -> [String] {
        let fm = FileManager.default
        let dir = relative.isEmpty ? root : root + "/" + relative
        guard let names = try? fm.contentsOfDirectory(atPath: dir) else { return [] }
        var out: [String] = []
        for name in names.sorted() {
            if name == ".git" || name.hasPrefix(".build") || name == ".swiftpm" || name == "__pycache__" { continue }
            let rel = relative.isEmpty ? name : relative + "/" + name
            let full = root + "/" + rel
            var isDir: ObjCBool = false
            guard fm.fileExists(atPath: full, isDirectory: &isDir) else { continue }
            // A linked directory (Benchmarks/Sources/SyncBadgeCore) is listed, not entered.
            let isLink = (try? fm.destinationOfSymbolicLink(atPath: full)) != nil
            if isDir.boolValue && !isLink {
                out += listFiles(under: root, relative: rel)
            } else {
                out.append(rel)
            }
        }
        return out
    }

    // MARK: Types

    struct Undeclared: Equatable {
        var token: String
        var reason: String
    }

    /// The type tokens whose type (or member) is declared nowhere, each with why.
    func undeclaredTypes(_ tokens: [String]) -> [Undeclared] {
        var out: [Undeclared] = []
        for token in tokens {
            let parts = token.split(separator: ".").map(String.init)
            let type = parts[0]
            if Self.externalTypes.contains(type) { continue }
            if parts.count == 1 && isTargetOrTopFile(type) { continue }
            guard types.contains(type) else {
                out.append(.init(token: token, reason: "no struct, class, enum, protocol, typealias, actor or extension `\(type)` is declared under Sources/, Tests/ or Fuzz/ (if it is another module's type, add it to ArchitectureDocCheck.externalTypes)"))
                continue
            }
            if parts.count == 2 && !members.contains(parts[1]) && !types.contains(parts[1]) {
                out.append(.init(token: token, reason: "nothing named `\(parts[1])` (func, var, let, case, init or type) is declared under Sources/, Tests/ or Fuzz/"))
            }
        }
        return out
    }

    /// A target (`Sources/<name>`, `Tests/<name>`) or a file at the top (`Makefile`).
    func isTargetOrTopFile(_ name: String) -> Bool {
        let fm = FileManager.default
        var isDir: ObjCBool = false
        if fm.fileExists(atPath: repository + "/Sources/" + name, isDirectory: &isDir), isDir.boolValue { return true }
        if fm.fileExists(atPath: repository + "/Tests/" + name, isDirectory: &isDir), isDir.boolValue { return true }
        return fm.fileExists(atPath: repository + "/" + name, isDirectory: &isDir) && !isDir.boolValue
    }

    /// Collects declared names from Swift source: the identifier after each type keyword (then
    /// `<`, `:`, a space, `{`, `=` or the end of the line), after each member keyword
    /// (`case a, b = 1, c(x)` declares `a`, `b` and `c`), and `init`. Comments are left out.
    static func declarations(in text: String, types: inout Set<String>, members: inout Set<String>) {
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = Substring(rawLine)
            if let comment = line.range(of: "//") { line = line[..<comment.lowerBound] }
            let words = Self.words(line)
            for (index, word) in words.enumerated() {
                // `init(`, `init?(`, `init<`: `Type.init`.
                if word.text == "init", let n = word.next, n == "(" || n == "?" || n == "<" { members.insert("init") }
                guard index + 1 < words.count else { continue }
                let (name, next) = words[index + 1]
                guard let n = name.first, n.isLetter || n == "_" else { continue }
                if typeKeywords.contains(word.text) {
                    if next.map({ afterTypeName.contains($0) }) ?? true {
                        types.insert(name)
                        members.insert(name)
                    }
                } else if memberKeywords.contains(word.text) {
                    members.insert(name)
                }
            }
            // Further names of a `case a, b = 1, c(x)` list.
            let trimmed = line.drop(while: { $0 == " " || $0 == "\t" })
            if trimmed.hasPrefix("case ") && !trimmed.hasPrefix("case .") && !trimmed.hasPrefix("case let") {
                for part in trimmed.dropFirst(5).split(separator: ",") {
                    let name = part.drop(while: { $0 == " " }).prefix { $0.isLetter || $0.isNumber || $0 == "_" }
                    if !name.isEmpty { members.insert(String(name)) }
                }
            }
        }
    }

    /// Identifiers and keywords of a line, each with the character that follows it (nil at the end).
    static func words(_ line: Substring) -> [(text: String, next: Character?)] {
        var out: [(text: String, next: Character?)] = []
        var current = ""
        for ch in line {
            if ch.isLetter || ch.isNumber || ch == "_" {
                current.append(ch)
            } else {
                if !current.isEmpty { out.append((current, ch)) }
                current = ""
            }
        }
        if !current.isEmpty { out.append((current, nil)) }
        return out
    }
}

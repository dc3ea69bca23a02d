import Testing
import SyncBadgeCore
@testable import SyncBadgeServer

/// The built-in actions' logic on a real tree, with no file written.
@Suite struct BuiltinActionsTests {
    static let root = Array("/r".utf8)

    static func tree() -> StateTree {
        var t = StateTree()
        var scan = ScanTree()
        let d = scan.append(parent: -1, name: Array("build".utf8), kind: .dir)
        _ = scan.append(parent: d, name: Array("out.o".utf8), kind: .file)
        _ = scan.append(parent: -1, name: Array("a b".utf8), kind: .file)
        _ = t.addRoot(path: root, scan: scan, rules: IgnoreRules())
        return t
    }

    static func id(_ t: StateTree, _ p: String) -> StateTree.NodeID { t.find(Array(p.utf8))! }

    @Test func detailsNameEachEntryOnlyWhenThereAreSeveral() {
        var t = Self.tree()
        let a = Self.id(t, "/r/a b"), o = Self.id(t, "/r/build/out.o")
        _ = t.set(Array("/r/a b".utf8), SetRequest(state: .syncing, progress: 40, message: "up"), identify: { _ in nil })
        let gen = t.record(a).gen
        #expect(BuiltinActions.details([a], tree: &t) == "state=syncing gen=\(gen) progress=40 message=up")
        let both = BuiltinActions.details([a, o], tree: &t)
        #expect(both.hasPrefix("/r/a b: state=syncing") && both.contains("; /r/build/out.o: state=unknown"))
    }

    @Test func theIgnoreFileIgnoresAnEntryThroughItsDirectory() {
        var t = Self.tree()
        let root = RootRegistry.Root(path: Self.root, scanning: false, ignoreDefaults: true, ignoreFile: Array("build/\n".utf8))
        #expect(BuiltinActions.ignoredByFile(Self.id(t, "/r/build/out.o"), root: root, tree: &t))
        #expect(!BuiltinActions.ignoredByFile(Self.id(t, "/r/a b"), root: root, tree: &t))
        let none = RootRegistry.Root(path: Self.root, scanning: false, ignoreDefaults: true)
        #expect(!BuiltinActions.ignoredByFile(Self.id(t, "/r/build/out.o"), root: none, tree: &t))
    }

    @Test func ignoringAndUnignoringEditTheFileAndTheRootIsRefused() {
        var t = Self.tree()
        let a = Self.id(t, "/r/a b")
        var root = RootRegistry.Root(path: Self.root, scanning: false, ignoreDefaults: true, ignoreFile: Array("*.tmp\n".utf8))
        // The same entry selected twice is one line.
        let ignored = BuiltinActions.editedIgnoreFile([a, a], root: root, ignore: true, tree: &t)
        #expect(ignored == .success(Array("*.tmp\n/a b\n".utf8)))
        root.ignoreFile = try? ignored.get()
        #expect(BuiltinActions.editedIgnoreFile([a], root: root, ignore: false, tree: &t) == .success(Array("*.tmp\n".utf8)))
        let refused = BuiltinActions.editedIgnoreFile([t.root(at: Self.root)!.node], root: root, ignore: true, tree: &t)
        #expect(refused == .failure(Err("bad-request", message: "a root cannot ignore itself")))
    }
}

#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FoundationEssentials
import SyncBadgeClient
import SyncBadgeCore
import SyncBadgeProtocol

/// What `status` does once its arguments are known, shared by the command above and the
/// fast path in main.swift.
struct StatusReport {
    var endpoint = Endpoint()
    var paths: [String] = []
    var json = false
    var porcelain = false
    var nul = false
    var exitStatus = false

    func run() throws {
        let targets = (paths.isEmpty ? ["."] : paths).map(CLI.absolute)
        let c = try endpoint.connect()
        var items: [Item] = []
        for p in targets {
            // One request per path so that an error names the path it is about.
            let reply = CLI.run(p) { try c.request(Request(.status, [.path(p)])) }
            items.append(contentsOf: reply.data.compactMap(Item.init))
        }
        if porcelain {
            // Stable: STATE, badge id and path; -z keeps the path's bytes, otherwise they are
            // percent-encoded as on the wire, so a newline in a name cannot split a line.
            var out: [UInt8] = []
            for i in items {
                out += Array("\(i.stateName)\t\(i.badge)\t".utf8)
                out += nul ? i.path : PercentEncoding.encode(i.path)
                out.append(nul ? 0 : 0x0A)
            }
            Output.write(out)
        } else {
            let style = Style(badgeLines: json ? [] : CLI.run(nil) { try c.request(Request(.badges)) }.data)
            for i in items {
                printLine(json ? JSON.item(i) : i.humanLine(style, name: PathBytes.display(i.path)))
            }
        }
        if exitStatus && items.contains(where: { $0.state != .synced }) { throw ExitCode(1) }
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@_spi(Wire) import SyncBadgeClient

/// systemd socket activation, with systemd's own test tool.
@Suite struct ActivationTests {
    static let activator = "/usr/bin/systemd-socket-activate"

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: activator), "systemd-socket-activate is not installed (package systemd)"))
    func theDaemonServesAnInheritedSocket() throws {
        let temp = try TempDir()
        let socket = temp.sub("activated.sock")
        let activator = try ChildProcess(URL(fileURLWithPath: Self.activator),
                                         ["-l", socket, Products.daemon.path, "--state-dir", temp.sub("state"), "--badges", Products.badges.path])
        defer { activator.stop() }
        let out = activator.output
        #expect(out.wait(for: "Listening on"))
        // The first connection makes the activator start the daemon on the socket it holds.
        let c = try Connection(socketPath: socket, role: .viewer, name: "activation")
        #expect(c.epoch.count == 8)
        _ = try c.request("PING")
        #expect(out.wait(for: "serving the inherited socket"))
    }
}

import Testing
@testable import SyncBadgeCore

/// PROTOCOL.md, "Transport": where the socket lives.
@Suite struct SocketPathTests {
    @Test func firstThatApplies() {
        let env = ["SYNCBADGE_SOCKET": "/env/sock", "XDG_RUNTIME_DIR": "/run/user/1000"]
        #expect(SocketPath.resolve(explicit: "/explicit", environment: env, uid: 1000) == "/explicit")
        #expect(SocketPath.resolve(explicit: nil, environment: env, uid: 1000) == "/env/sock")
        #expect(SocketPath.resolve(explicit: "", environment: env, uid: 1000) == "/env/sock")
        #expect(SocketPath.resolve(explicit: nil, environment: ["XDG_RUNTIME_DIR": "/run/user/1000"], uid: 1000)
                == "/run/user/1000/syncbadge/daemon.sock")
        #expect(SocketPath.resolve(explicit: nil, environment: [:], uid: 1000) == "/tmp/syncbadge-1000/daemon.sock")
        // Empty or relative values do not apply.
        #expect(SocketPath.resolve(explicit: nil, environment: ["SYNCBADGE_SOCKET": "", "XDG_RUNTIME_DIR": "relative"], uid: 7)
                == "/tmp/syncbadge-7/daemon.sock")
    }

    @Test func stateDirectory() {
        #expect(SocketPath.stateDirectory(explicit: "/s", environment: ["XDG_STATE_HOME": "/x"]) == "/s")
        #expect(SocketPath.stateDirectory(explicit: nil, environment: ["XDG_STATE_HOME": "/x", "HOME": "/h"]) == "/x/syncbadge")
        #expect(SocketPath.stateDirectory(explicit: nil, environment: ["XDG_STATE_HOME": "rel", "HOME": "/h"]) == "/h/.local/state/syncbadge")
    }
}

/// Where the daemon's socket lives (PROTOCOL.md, "Transport"): the first that applies of
/// `--socket PATH`, `$SYNCBADGE_SOCKET`, `$XDG_RUNTIME_DIR/syncbadge/daemon.sock`,
/// `/tmp/syncbadge-$UID/daemon.sock`.
public enum SocketPath {
    public static func resolve(explicit: String?, environment: [String: String], uid: UInt32) -> String {
        resolve(explicit: explicit, variable: { environment[$0] }, uid: uid)
    }

    /// The same, reading variables one at a time: a one-shot CLI looks up two with `getenv`
    /// rather than convert its whole environment into a dictionary.
    public static func resolve(explicit: String?, variable: (String) -> String?, uid: UInt32) -> String {
        if let explicit, !explicit.isEmpty { return explicit }
        if let env = variable("SYNCBADGE_SOCKET"), !env.isEmpty { return env }
        if let runtime = variable("XDG_RUNTIME_DIR"), runtime.hasPrefix("/") {
            return runtime + "/syncbadge/daemon.sock"
        }
        return "/tmp/syncbadge-\(uid)/daemon.sock"
    }

    /// The daemon's state directory: `--state-dir`, else `$XDG_STATE_HOME/syncbadge`, else
    /// `~/.local/state/syncbadge`.
    public static func stateDirectory(explicit: String?, environment: [String: String]) -> String {
        if let explicit, !explicit.isEmpty { return explicit }
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/syncbadge" }
        return (environment["HOME"] ?? "/tmp") + "/.local/state/syncbadge"
    }
}

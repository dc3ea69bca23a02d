#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A tmux server of one test's own, its socket in the test's temporary directory (nothing is
/// left behind in /tmp/tmux-UID), running one program in a detached session. The test reads
/// the screen with `capture-pane` every 50 ms until what it waits for shows up or a deadline
/// passes; it never sleeps and hopes.
final class TmuxScreen {
    let socket: String
    let environment: [String: String]
    let outputFile: String
    /// Said in a failure's message, e.g. the program's log.
    var diagnostics: () -> String = { "" }
    private var killed = false

    /// Starts `command` (run by tmux through `sh -c`) in a `width`×`height` window.
    init(temp: TempDir, name: String, environment: [String: String], command: String,
         width: Int = 120, height: Int = 30, directory: String = "/") throws {
        socket = temp.sub("\(name).tmux")
        outputFile = temp.sub("\(name).tmux-output")
        var env = environment
        env.removeValue(forKey: "TMUX")
        self.environment = env
        try run(["new-session", "-d", "-x", "\(width)", "-y", "\(height)", "-c", directory, command])
    }

    /// Runs a tmux client on this server; its standard output.
    @discardableResult
    func run(_ args: [String]) throws -> String {
        guard let tmux = installed("tmux") else { throw HarnessError(description: "tmux is not installed") }
        let (status, out) = try spawn(tmux, ["-u", "-f", "/dev/null", "-S", socket] + args, environment: environment, output: outputFile)
        guard status == 0 else { throw HarnessError(description: "tmux \(args.joined(separator: " ")) failed with status \(status)") }
        return out
    }

    /// The screen's lines, trailing blanks removed, empty lines dropped.
    func lines() -> [String] {
        ((try? run(["capture-pane", "-p"])) ?? "").split(separator: "\n")
            .map { String($0).replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression) }
            .filter { !$0.isEmpty }
    }

    /// The screen as text.
    func text() -> String { (try? run(["capture-pane", "-p"])) ?? "" }

    /// Types literal keys, then Enter unless told not to.
    func type(_ keys: String, enter: Bool = false) throws {
        if !keys.isEmpty { try run(["send-keys", "-l", keys]) }
        if enter { try run(["send-keys", "Enter"]) }
    }

    /// Polls the screen until `done` holds, at most `timeout` seconds; `poke` runs every
    /// `pokeEvery` seconds meanwhile (a new prompt, for shells that redraw only then). Returns
    /// how long it took; throws at the deadline with the last screen and the diagnostics.
    @discardableResult
    func wait(_ what: String, timeout: Double = 10, pokeEvery: Double? = nil, poke: (() throws -> Void)? = nil,
              until done: ([String]) -> Bool) throws -> Double {
        let start = Date()
        var lastPoke = start
        var last: [String] = []
        while true {
            last = lines()
            if done(last) { return Date().timeIntervalSince(start) }
            if Date().timeIntervalSince(start) > timeout { break }
            if let pokeEvery, let poke, Date().timeIntervalSince(lastPoke) >= pokeEvery {
                try poke()
                lastPoke = Date()
            }
            usleep(50_000)
        }
        let more = diagnostics()
        throw HarnessError(description: "the screen never showed \(what) within \(timeout) s:\n"
            + last.joined(separator: "\n") + (more.isEmpty ? "" : "\n---\n" + more))
    }

    /// Waits until the screen contains `text` somewhere.
    func wait(for text: String, timeout: Double = 10) throws {
        try wait("\"\(text)\"", timeout: timeout) { $0.contains { $0.contains(text) } }
    }

    /// Stops the server and waits until what ran in its panes has exited: the programs exit on
    /// its SIGHUP and write as they go (fish its history), which would race the removal of the
    /// test's directory and leave it in /tmp. The panes' sessions are looked at again after each
    /// wait, since what a program starts as it hangs up (an exit hook) is in them too. Whatever
    /// is still there 5 s later gets SIGKILL.
    func kill() {
        guard !killed else { return }
        killed = true
        let panes = Set(((try? run(["list-panes", "-a", "-F", "#{pane_pid}"])) ?? "")
            .split(separator: "\n").compactMap { pid_t($0) })
        _ = try? run(["kill-server"])
        let deadline = Date().addingTimeInterval(5)
        var left = Self.processes(inSessionsOf: panes)
        while !left.isEmpty && deadline.timeIntervalSinceNow > 0 {
            _ = waitForExits(of: left, untilAtMost: 0, timeout: deadline.timeIntervalSinceNow)
            left = Self.processes(inSessionsOf: panes)
        }
        if !left.isEmpty {
            print("TmuxScreen: \(left) still ran 5 s after the server's hangup: SIGKILL")
            for pid in left { Glibc.kill(pid, SIGKILL) }
            _ = waitForExits(of: left, untilAtMost: 0, timeout: 5)
        }
    }

    /// Every live process whose session one of `leaders` leads: a pane's program (tmux makes
    /// each pane a session of its own) and what it started, a shell's background jobs included.
    /// Not the exited ones whose parent has not reaped them yet (zombies).
    static func processes(inSessionsOf leaders: Set<pid_t>) -> [pid_t] {
        guard !leaders.isEmpty else { return [] }
        let all = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { pid_t($0) }
        return all.filter { pid in
            // /proc/PID/stat: "pid (comm) state ppid pgrp session ...", comm may hold spaces and
            // any byte (Latin-1 reads every one).
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .isoLatin1),
                  let comm = stat.lastIndex(of: ")") else { return false }
            let fields = stat[stat.index(after: comm)...].split(separator: " ")
            return fields.count > 3 && fields[0] != "Z" && pid_t(fields[3]).map(leaders.contains) == true
        }
    }

    deinit { kill() }

    static func quote(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: #"'\''"#) + "'" }
}

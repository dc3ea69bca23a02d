#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import SyncBadgeClient
import SyncBadgeCore

/// The shell prompt integrations in `Examples/prompt/`, end to end: the real daemon, each
/// shell in a detached tmux session, the screen read with `capture-pane`.
@Suite(.serialized) struct PromptTests {
    /// The absolute path of an executable on the PATH, or nil.
    static func installed(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = "\(dir)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    static var script: URL { Products.repository.appendingPathComponent("Examples/prompt") }

    @Test(.enabled(if: installed("zsh") != nil && installed("tmux") != nil,
                   "zsh or tmux is not installed (apt-get install zsh tmux)"))
    func zsh() throws { try PromptSession.run(.zsh) }

    @Test(.enabled(if: installed("bash") != nil && installed("tmux") != nil,
                   "bash or tmux is not installed (apt-get install bash tmux)"))
    func bash() throws { try PromptSession.run(.bash) }

    @Test(.enabled(if: installed("fish") != nil && installed("tmux") != nil,
                   "fish or tmux is not installed (apt-get install fish tmux)"))
    func fish() throws { try PromptSession.run(.fish) }

    /// Each script's percent-encoding of the current directory is the daemon's, byte for byte
    /// (PROTOCOL.md "Framing"), for names with controls, `%`, invalid and valid UTF-8.
    @Test(.enabled(if: installed("zsh") != nil, "zsh is not installed (apt-get install zsh)"))
    func zshEncodesLikeTheDaemon() throws { try Self.checkEncoding(.zsh) }

    @Test func bashEncodesLikeTheDaemon() throws { try Self.checkEncoding(.bash) }

    @Test(.enabled(if: installed("fish") != nil, "fish is not installed (apt-get install fish)"))
    func fishEncodesLikeTheDaemon() throws { try Self.checkEncoding(.fish) }

    static func checkEncoding(_ shell: Shell) throws {
        let temp = try TempDir()
        let names: [[UInt8]] = [
            Array("w\tx\ny".utf8) + [0xFF] + Array(" %éz".utf8),
            Array("⟳ok".utf8), Array("bad".utf8) + [0xE2, 0x28], Array("over".utf8) + [0xC0, 0xAF],
            Array("sur".utf8) + [0xED, 0xA0, 0x80], Array("four😀".utf8),
            Array("big".utf8) + [0xF4, 0x90, 0x80, 0x80], Array("cut".utf8) + [0xF0, 0x9F, 0x98],
            Array("del".utf8) + [0x7F], Array("plain-name_1.2~".utf8), Array("q'\"\\$`*?[{".utf8),
        ]
        for name in names {
            let path = Array(temp.path.utf8) + [UInt8(ascii: "/")] + name + [0]
            let rc = path.withUnsafeBufferPointer { buf in
                buf.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buf.count) { mkdir($0, 0o755) }
            }
            #expect(rc == 0)
        }
        let file = script.appendingPathComponent(shell.scriptName).path
        let arguments: [String]
        switch shell {
        case .zsh:
            arguments = ["-f", "-c", #"source "$1"; for d in "$2"/*; do cd "$d"; _syncbadge_here; print -r -- $REPLY; done"#,
                         "zsh", file, temp.path]
        case .bash:
            arguments = ["-c", #"source "$1"; for d in "$2"/*; do cd "$d"; _syncbadge_encode "$PWD"; printf '%s\n' "$REPLY"; done"#,
                         "bash", file, temp.path]
        case .fish:
            arguments = ["-N", "-c", #"source $argv[1]; for d in $argv[2]/*; cd $d; _syncbadge_encode (path resolve -- $PWD); end"#,
                         file, temp.path]
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: installed(shell.executable)!)
        p.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["LANG"] = "C.UTF-8"
        env.removeValue(forKey: "LC_ALL")
        p.environment = env
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        let got = Set(Array(data).split(separator: UInt8(ascii: "\n")).map { Array($0) })
        let expected = Set(names.map { PercentEncoding.encode(Array(temp.path.utf8) + [UInt8(ascii: "/")] + $0) })
        #expect(got == expected, "\(shell): \(got.symmetricDifference(expected).map { String(decoding: $0, as: UTF8.self) })")
    }
}

enum Shell: String, CustomStringConvertible, Sendable {
    case zsh, bash, fish
    var description: String { rawValue }
    var executable: String { rawValue }
    var scriptName: String { "syncbadge.\(rawValue)" }
}

/// One shell running in its own tmux server, its prompt showing `P[<badges>]> `.
final class PromptSession {
    let shell: Shell
    let temp: TempDir
    let tmuxName: String
    let env: [String: String]

    init(_ shell: Shell, temp: TempDir) {
        self.shell = shell
        self.temp = temp
        tmuxName = "syncbadge-prompt-\(shell)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        var env = ProcessInfo.processInfo.environment
        env["LANG"] = "C.UTF-8"
        env.removeValue(forKey: "LC_ALL")
        env.removeValue(forKey: "TMUX")
        env["TMUX_TMPDIR"] = temp.path
        env["HOME"] = temp.sub("home")
        env["XDG_CONFIG_HOME"] = temp.sub("home/.config")
        env["XDG_DATA_HOME"] = temp.sub("home/.local/share")
        env["XDG_CACHE_HOME"] = temp.sub("home/.cache")
        env["XDG_RUNTIME_DIR"] = temp.sub("home/run")
        env.removeValue(forKey: "SYNCBADGE_SOCKET")
        self.env = env
    }

    @discardableResult
    func tmux(_ args: [String]) throws -> String {
        let all = ["-L", tmuxName, "-f", "/dev/null"] + args
        let (status, out) = try spawn(PromptTests.installed("tmux")!, all, environment: env,
                                      capture: args.first == "capture-pane")
        guard status == 0 else {
            throw HarnessError(description: "tmux \(args.joined(separator: " ")) failed: \(status)")
        }
        return out
    }

    func send(_ keys: String, enter: Bool = true) throws {
        if !keys.isEmpty { try tmux(["send-keys", "-t", "t", "-l", keys]) }
        if enter { try tmux(["send-keys", "-t", "t", "Enter"]) }
    }

    /// The screen's non-empty lines, trailing blanks removed.
    func screen() throws -> [String] {
        try tmux(["capture-pane", "-p", "-t", "t"]).split(separator: "\n")
            .map { String($0).replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression) }
            .filter { !$0.isEmpty }
    }

    /// Polls the screen every 50 ms until `done` holds, at most `timeout` seconds; `poke` runs
    /// every `pokeEvery` seconds meanwhile (a new prompt for shells that draw only then).
    @discardableResult
    func wait(_ what: String, timeout: Double = 10, pokeEvery: Double? = nil, poke: (() throws -> Void)? = nil,
              until done: ([String]) -> Bool) throws -> Double {
        let start = Date()
        var lastPoke = start
        var last: [String] = []
        while Date().timeIntervalSince(start) < timeout {
            last = try screen()
            if done(last) { return Date().timeIntervalSince(start) }
            if let pokeEvery, let poke, Date().timeIntervalSince(lastPoke) >= pokeEvery {
                try poke()
                lastPoke = Date()
            }
            usleep(50_000)
        }
        throw HarnessError(description: "\(shell): no \(what) within \(timeout) s; the screen:\n" + last.joined(separator: "\n"))
    }

    /// Waits until the current (last) line is the prompt showing `badges`.
    @discardableResult
    func waitForPrompt(_ badges: String, newPrompts: Bool = false) throws -> Double {
        let want = "P[\(badges)]>"
        return try wait("prompt \(want)", pokeEvery: newPrompts ? 0.5 : nil, poke: { try self.send("") },
                        until: { $0.last == want })
    }

    static func quote(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: #"'\''"#) + "'" }
    static func fishQuote(_ s: String) -> String {
        "'" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }

    /// Writes the shell's start-up file; returns the command tmux runs.
    func prepare(socket: String, root: String, later: String) throws -> String {
        let fm = FileManager.default
        let home = temp.sub("home")
        try fm.createDirectory(atPath: home + "/.config/fish", withIntermediateDirectories: true)
        try fm.createDirectory(atPath: home + "/run", withIntermediateDirectories: true)
        let script = PromptTests.script.appendingPathComponent(shell.scriptName).path
        let products = Products.directory.path
        let exe = PromptTests.installed(shell.executable)!
        switch shell {
        case .zsh:
            let rc = """
                export PATH=\(Self.quote(products)):$PATH
                export SYNCBADGE_SOCKET=\(Self.quote(socket))
                R=\(Self.quote(root))
                L=\(Self.quote(later))
                unset HISTFILE
                source \(Self.quote(script))
                setopt prompt_subst
                PROMPT='P[$SYNCBADGE_PROMPT]> '
                RPROMPT=

                """
            try rc.write(toFile: home + "/.zshrc", atomically: true, encoding: .utf8)
            return "ZDOTDIR=\(Self.quote(home)) exec \(Self.quote(exe)) -d -i"
        case .bash:
            let rc = """
                export PATH=\(Self.quote(products)):$PATH
                export SYNCBADGE_SOCKET=\(Self.quote(socket))
                R=\(Self.quote(root))
                L=\(Self.quote(later))
                unset HISTFILE
                source \(Self.quote(script))
                PS1='P[$SYNCBADGE_PROMPT]> '

                """
            try rc.write(toFile: home + "/bashrc", atomically: true, encoding: .utf8)
            return "exec \(Self.quote(exe)) --noprofile --rcfile \(Self.quote(home + "/bashrc")) -i"
        case .fish:
            let rc = """
                set -gx PATH \(Self.fishQuote(products)) $PATH
                set -gx SYNCBADGE_SOCKET \(Self.fishQuote(socket))
                set -g R \(Self.fishQuote(root))
                set -g L \(Self.fishQuote(later))
                source \(Self.fishQuote(script))
                function fish_greeting; end
                function fish_prompt; echo -n "P[$(syncbadge_prompt)]> "; end

                """
            try rc.write(toFile: home + "/.config/fish/config.fish", atomically: true, encoding: .utf8)
            return "exec \(Self.quote(exe))"
        }
    }

    /// The scenario of the brief, for one shell.
    static func run(_ shell: Shell) throws {
        // How long each step took, printed when one was slow (a loaded machine, or a hang).
        var steps: [(String, Double)] = []
        var mark = Date()
        func step(_ name: String) {
            steps.append((name, Date().timeIntervalSince(mark)))
            mark = Date()
        }
        defer {
            if steps.contains(where: { $0.1 > 3 }) {
                print("PromptTests \(shell) steps: " + steps.map { "\($0.0) \(String(format: "%.2f", $0.1))s" }.joined(separator: ", "))
            }
        }
        let d = try DaemonHarness()
        // A root whose path needs encoding: a space, %, and non-ASCII UTF-8.
        let root = try d.addRoot("Sync é%", files: ["a", "b", "c"])
        step("daemon and root")
        let session = PromptSession(shell, temp: d.temp)
        // A directory that becomes a root while the shell is in it.
        let later = d.temp.sub("later")
        try FileManager.default.createDirectory(atPath: later, withIntermediateDirectories: true)
        try touchFile(later + "/x")
        let command = try session.prepare(socket: d.socket, root: root, later: later)
        defer { _ = try? session.tmux(["kill-server"]) }
        try session.tmux(["new-session", "-d", "-x", "120", "-y", "30", "-s", "t", "-c", "/", command])
        try session.waitForPrompt("")
        step("first prompt")
        let cdRoot = shell == .fish ? "cd $R" : #"cd "$R""#

        // 1. Into the root: three files nobody reported on.
        try session.send(cdRoot)
        try session.waitForPrompt("?3")
        step("1 cd root")

        // 1b. A directory whose name has a tab, a newline, a byte that is not UTF-8, a space,
        // % and é, with a file in it: both pending.
        let weird = Array(root.utf8) + [UInt8(ascii: "/")] + Array("w\tx\ny".utf8) + [0xFF] + Array(" %éz".utf8)
        let made = (weird + [0]).withUnsafeBufferPointer { buf in
            buf.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buf.count) { mkdir($0, 0o755) }
        }
        #expect(made == 0)
        let inner = weird + Array("/f".utf8)
        let fd = (inner + [0]).withUnsafeBufferPointer { buf in
            buf.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buf.count) { open($0, O_CREAT | O_WRONLY, 0o644) }
        }
        #expect(fd >= 0)
        close(fd)
        let viewer = try d.connect()
        let known = Date().addingTimeInterval(10)
        while (try? viewer.status(bytes: inner))?.state != "pending" && Date() < known { usleep(20_000) }
        try session.send(shell == .fish ? "cd $R/w*" : #"cd "$R"/w*"#)
        try session.waitForPrompt("⇡1")
        try session.send("cd ..")
        try session.waitForPrompt("⇡2 ?3")
        step("1b encoded directory")

        // 2. A provider reports an error.
        let provider = try d.connect(role: "provider", name: "prompt-test")
        _ = try provider.request("SET", [.word("error"), .path(Array((root + "/a").utf8))], timeout: 15)
        if shell == .zsh {
            // zle -F: the prompt redraws without a keypress.
            try session.waitForPrompt("✗1 ⇡2 ?2")
        } else {
            // The next prompt shows it (pressing Enter until the push has arrived).
            try session.waitForPrompt("✗1 ⇡2 ?2", newPrompts: true)
        }
        step("2 push")

        // The ASCII fallback.
        try session.send(shell == .fish ? "set -g SYNCBADGE_ASCII 1" : "SYNCBADGE_ASCII=1")
        try session.waitForPrompt("!1 +2 ?2")
        try session.send(shell == .fish ? "set -e SYNCBADGE_ASCII" : "unset SYNCBADGE_ASCII")
        try session.waitForPrompt("✗1 ⇡2 ?2")
        step("ascii")

        // 3. Outside every root: nothing at all.
        try session.send("cd /")
        try session.waitForPrompt("")
        step("3 outside")

        // 3b. The directory becomes a root, then stops being one: `* ROOT` pushes.
        try session.send(shell == .fish ? "cd $L" : #"cd "$L""#)
        try session.waitForPrompt("")
        let admin = try d.connect(role: "admin")
        _ = try admin.request("ADD-ROOT", [.path(Array(later.utf8))], timeout: 60)
        try session.waitForPrompt("?1", newPrompts: shell == .bash)
        _ = try admin.request("REMOVE-ROOT", [.path(Array(later.utf8))], timeout: 60)
        try session.waitForPrompt("", newPrompts: shell == .bash)
        try session.send("cd /")
        try session.waitForPrompt("")
        step("3b a root comes and goes")

        // 4. The daemon restarts; back in the root the prompt works again by itself.
        try d.restart()
        step("4 restart")
        try session.send(cdRoot)
        try session.waitForPrompt("✗1 ⇡2 ?2")
        step("4 back in the root")

        // 5. The daemon stops: the shell answers at once, with nothing to show.
        d.stop()
        step("5 stop")
        try session.send("echo step-5")
        let took = try session.wait("a prompt after the daemon stopped") { lines in
            lines.count >= 2 && lines[lines.count - 2] == "step-5" && lines.last == "P[]>"
        }
        #expect(took < 5, "\(shell): the prompt took \(took) s without a daemon")
        step("5 prompt without a daemon")
        // Another prompt, still quick, and no connection attempt loops meanwhile.
        try session.send("echo step-5b")
        try session.wait("another prompt") { lines in
            lines.count >= 2 && lines[lines.count - 2] == "step-5b" && lines.last == "P[]>"
        }
        // PROMPT_TESTS_SHOW=1 prints the final screen.
        if ProcessInfo.processInfo.environment["PROMPT_TESTS_SHOW"] != nil { print(try session.screen().joined(separator: "\n")) }
    }
}

/// Runs a program and waits for it, with posix_spawn and waitpid: `Process` sometimes misses
/// the exit of a child as short-lived as `tmux new-session -d` and waits forever. Standard
/// output is captured (or /dev/null: the tmux server that `new-session` starts would keep a
/// pipe open); standard input and error are /dev/null.
func spawn(_ path: String, _ args: [String], environment: [String: String], capture: Bool) throws -> (Int32, String) {
    var fds: [Int32] = [-1, -1]
    if capture { guard pipe(&fds) == 0 else { throw HarnessError(description: "pipe failed") } }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    if capture {
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_addclose(&actions, fds[0])
        posix_spawn_file_actions_addclose(&actions, fds[1])
    } else {
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    }
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    let argv = ([path] + args).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        for a in argv { free(a) }
        for e in envp { free(e) }
    }
    // Test threads block signals, and children would inherit that (tmux, and the shells it
    // starts, would never see SIGHUP): an empty mask and default dispositions.
    var attr = posix_spawnattr_t()
    posix_spawnattr_init(&attr)
    defer { posix_spawnattr_destroy(&attr) }
    var none = sigset_t()
    sigemptyset(&none)
    posix_spawnattr_setsigmask(&attr, &none)
    var all = sigset_t()
    sigfillset(&all)
    sigdelset(&all, SIGKILL)
    sigdelset(&all, SIGSTOP)
    posix_spawnattr_setsigdefault(&attr, &all)
    posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, path, &actions, &attr, argv, envp)
    if capture { close(fds[1]) }
    guard rc == 0 else {
        if capture { close(fds[0]) }
        throw HarnessError(description: "posix_spawn \(path) failed: \(rc)")
    }
    var output: [UInt8] = []
    if capture {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fds[0], $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            output += chunk[0..<n]
        }
        close(fds[0])
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 {
        guard errno == EINTR else { throw HarnessError(description: "waitpid failed: \(errno)") }
    }
    // WIFEXITED / WEXITSTATUS
    let exit = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    return (exit, String(decoding: output, as: UTF8.self))
}

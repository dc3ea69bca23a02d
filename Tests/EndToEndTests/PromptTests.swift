#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@_spi(Wire) import SyncBadgeClient
import SyncBadgeCore

/// The shell prompt integrations in `Examples/prompt/`, end to end: the real daemon, each
/// shell in a detached tmux session, the screen read with `capture-pane`.
@Suite(.serialized) struct PromptTests {
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
        var env = ProcessInfo.processInfo.environment
        env["LANG"] = "C.UTF-8"
        env.removeValue(forKey: "LC_ALL")
        let r = try runToEnd(URL(fileURLWithPath: installed(shell.executable)!), arguments, environment: env, seconds: 120)
        #expect(r.status == 0, "\(shell): \(r.err)")
        let got = Set(Array(r.out.utf8).split(separator: UInt8(ascii: "\n")).map { Array($0) })
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

/// One shell running in its own tmux server (Support/Tmux.swift), its prompt showing
/// `P[<badges>]> `.
final class PromptSession {
    let shell: Shell
    let temp: TempDir
    let env: [String: String]
    private(set) var screen: TmuxScreen?

    init(_ shell: Shell, temp: TempDir) {
        self.shell = shell
        self.temp = temp
        var env = ProcessInfo.processInfo.environment
        env["LANG"] = "C.UTF-8"
        env.removeValue(forKey: "LC_ALL")
        env["HOME"] = temp.sub("home")
        env["XDG_CONFIG_HOME"] = temp.sub("home/.config")
        env["XDG_DATA_HOME"] = temp.sub("home/.local/share")
        env["XDG_CACHE_HOME"] = temp.sub("home/.cache")
        env["XDG_RUNTIME_DIR"] = temp.sub("home/run")
        env.removeValue(forKey: "SYNCBADGE_SOCKET")
        self.env = env
    }

    /// Starts the shell (the command `prepare` returned) in `/`.
    func start(_ command: String) throws {
        screen = try TmuxScreen(temp: temp, name: "prompt-\(shell)", environment: env, command: command)
    }

    func kill() { screen?.kill() }

    func send(_ keys: String, enter: Bool = true) throws {
        guard let screen else { throw HarnessError(description: "the shell has not started") }
        try screen.type(keys, enter: enter)
    }

    /// The screen's non-empty lines, trailing blanks removed.
    func lines() -> [String] { screen?.lines() ?? [] }

    @discardableResult
    func wait(_ what: String, timeout: Double = 10, pokeEvery: Double? = nil, poke: (() throws -> Void)? = nil,
              until done: ([String]) -> Bool) throws -> Double {
        guard let screen else { throw HarnessError(description: "the shell has not started") }
        return try screen.wait("\(shell): \(what)", timeout: timeout, pokeEvery: pokeEvery, poke: poke, until: done)
    }

    /// Waits until the current (last) line is the prompt showing `badges`.
    @discardableResult
    func waitForPrompt(_ badges: String, newPrompts: Bool = false) throws -> Double {
        let want = "P[\(badges)]>"
        return try wait("prompt \(want)", pokeEvery: newPrompts ? 0.5 : nil, poke: { try self.send("") },
                        until: { $0.last == want })
    }

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
        let exe = installed(shell.executable)!
        // zsh and bash share the syntax of these lines; fish has its own (below).
        let posixStart = """
            export PATH=\(TmuxScreen.quote(products)):$PATH
            export SYNCBADGE_SOCKET=\(TmuxScreen.quote(socket))
            R=\(TmuxScreen.quote(root))
            L=\(TmuxScreen.quote(later))
            unset HISTFILE
            source \(TmuxScreen.quote(script))

            """
        switch shell {
        case .zsh:
            let rc = posixStart + """
                setopt prompt_subst
                PROMPT='P[$SYNCBADGE_PROMPT]> '
                RPROMPT=

                """
            try rc.write(toFile: home + "/.zshrc", atomically: true, encoding: .utf8)
            return "ZDOTDIR=\(TmuxScreen.quote(home)) exec \(TmuxScreen.quote(exe)) -d -i"
        case .bash:
            let rc = posixStart + """
                PS1='P[$SYNCBADGE_PROMPT]> '

                """
            try rc.write(toFile: home + "/bashrc", atomically: true, encoding: .utf8)
            return "exec \(TmuxScreen.quote(exe)) --noprofile --rcfile \(TmuxScreen.quote(home + "/bashrc")) -i"
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
            return "exec \(TmuxScreen.quote(exe))"
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
        defer { session.kill() }
        try session.start(command)
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
        // The daemon knows the file before the shell goes there: `weird` is in the root's listing
        // or its own push, then `f` in weird's.
        let viewer = try d.connect()
        if try !viewer.request("OBSERVE", [.path(Array(root.utf8))]).data.contains(where: { $0.fields.first?.bytes == weird }) {
            try viewer.waitForPush("the new directory") { $0.kind == "ITEM" && $0.fields.first?.bytes == weird }
        }
        if try !viewer.request("OBSERVE", [.path(weird)]).data.contains(where: { $0.fields.first?.bytes == inner }) {
            try viewer.waitForPush("its file") { $0.kind == "ITEM" && $0.fields.first?.bytes == inner }
        }
        #expect(try viewer.status(bytes: inner).state == .pending)
        try session.send(shell == .fish ? "cd $R/w*" : #"cd "$R"/w*"#)
        try session.waitForPrompt("⇡1")
        try session.send("cd ..")
        try session.waitForPrompt("⇡2 ?3")
        step("1b encoded directory")

        // 2. A provider reports an error.
        let provider = try d.connect(role: .provider, name: "prompt-test")
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
        let admin = try d.connect(role: .admin)
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
        if ProcessInfo.processInfo.environment["PROMPT_TESTS_SHOW"] != nil { print(session.lines().joined(separator: "\n")) }
    }
}

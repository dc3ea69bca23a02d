#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import SyncBadgeClient
import SyncBadgeProtocol

enum CLI {
    /// sysexits: EX_UNAVAILABLE.
    static let noDaemonExit: Int32 = 69

    static func fail(_ message: String, code: Int32 = 1) -> Never {
        Output.write("syncbadge: \(message)\n", to: STDERR_FILENO)
        exit(code)
    }

    /// One environment variable. `ProcessInfo.processInfo.environment` would convert every
    /// variable into a dictionary first, a cost each one-shot `status` paid twice.
    static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// Long-running commands: a parent may have blocked signals (test runners, some shells'
    /// job control do), and Ctrl-C or SIGTERM must still stop them.
    static func unblockSignals() {
        var none = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, nil)
    }

    /// Whether standard output's reader is gone: a pipe whose other end closed, or a hung-up
    /// terminal, polls as an error or hang-up without blocking.
    static func outputClosed() -> Bool {
        var p = pollfd(fd: STDOUT_FILENO, events: 0, revents: 0)
        return poll(&p, 1, 0) == 1 && p.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0
    }

    /// The current directory, from getcwd(3): not FileManager, whose set-up was 4% of a
    /// one-shot `syncbadge status` (PERFORMANCE.md).
    static var cwd: [UInt8] {
        guard let p = getcwd(nil, 0) else {
            // A relative path cannot be resolved: asking about `/name` would answer the wrong
            // question (the directory was deleted, or cannot be read).
            fail("cannot read the current directory: \(String(cString: strerror(errno)))")
        }
        defer { free(p) }
        return Array(UnsafeRawBufferPointer(start: p, count: strlen(p)))
    }

    /// A path argument made absolute against the current directory (asked only for a
    /// relative one).
    static func absolute(_ arg: String) -> [UInt8] {
        let bytes = Array(arg.utf8)
        return PathBytes.absolute(bytes, cwd: bytes.first == PathBytes.slash ? [] : cwd)
    }

    /// Runs a request; a server error ends the program with the path and the reason.
    static func run<T>(_ what: [UInt8]?, _ body: () throws -> T) -> T {
        do {
            return try body()
        } catch {
            fail(error, about: what)
        }
    }

    /// Ends the program for a request's error, naming the path and the reason.
    static func fail(_ error: Error, about what: [UInt8]?) -> Never {
        if case ClientError.server(let code, let message) = error {
            let reason = describe(code: code, message: message, path: what)
            fail(what.map { "\(PathBytes.display($0)): \(reason)" } ?? reason)
        }
        fail("\(error)")
    }

    static func describe(code: String, message: String?, path: [UInt8]?) -> String {
        let plain: String
        switch code {
        case "not-found": plain = "not found"
        case "not-a-directory": plain = "not a directory"
        case "outside": plain = "not inside any registered root (add one with `syncbadge add DIR`)"
        case "bad-path": plain = "not a valid path"
        case "busy": plain = "busy"
        case "forbidden": plain = "not allowed"
        default: plain = code
        }
        // Messages that only repeat the path add nothing.
        if let message, !message.isEmpty, path.map({ Array(message.utf8) != $0 }) ?? true {
            return "\(plain) (\(message))"
        }
        return plain
    }
}

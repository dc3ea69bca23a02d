#if canImport(Glibc)
import Glibc
#endif

/// The list of working trees the adapter follows: one absolute path a line, in
/// `$XDG_CONFIG_HOME/syncbadge/git-repos` (`~/.config/syncbadge/git-repos` by default).
/// Empty lines and lines starting with `#` are skipped; a leading `~/` is the home directory.
public enum ReposFile {
    public static func path(environment: [String: String]) -> String {
        if let x = environment["XDG_CONFIG_HOME"], x.hasPrefix("/") { return x + "/syncbadge/git-repos" }
        return (environment["HOME"] ?? "/") + "/.config/syncbadge/git-repos"
    }

    public static func parse(_ text: String, home: String) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: true).compactMap { raw in
            let line = raw.trimmingSpaces
            if line.isEmpty || line.hasPrefix("#") { return nil }
            if line == "~" { return home }
            if line.hasPrefix("~/") { return home + line.dropFirst(1) }
            return line
        }
    }

    /// The file with `dir` appended, or nil when it is listed already.
    public static func adding(_ dir: String, to text: String, home: String) -> String? {
        if parse(text, home: home).contains(dir) { return nil }
        var t = text
        if !t.isEmpty && !t.hasSuffix("\n") { t += "\n" }
        return t + dir + "\n"
    }

    /// The file without the lines that name `dir`, or nil when none does.
    public static func removing(_ dir: String, from text: String, home: String) -> String? {
        var removed = false
        let kept = text.split(separator: "\n", omittingEmptySubsequences: false).filter { line in
            if parse(String(line), home: home) == [dir] {
                removed = true
                return false
            }
            return true
        }
        return removed ? kept.joined(separator: "\n") : nil
    }

    public static func read(_ path: String) -> String? {
        guard let f = fopen(path, "r") else { return nil }
        defer { fclose(f) }
        var bytes: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = fread(&buf, 1, buf.count, f)
            if n <= 0 { break }
            bytes.append(contentsOf: buf[0..<n])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Writes the file whole, through a temporary file and a rename, so that a reader (the
    /// running adapter, woken by the rename) never sees half of it.
    public static func write(_ text: String, to path: String) throws {
        let dir = ReposFile.directory(of: path)
        try makeDirectories(dir)
        let tmp = path + ".tmp-\(getpid())"
        guard let f = fopen(tmp, "w") else { throw SpawnError(description: "cannot write \(tmp): \(String(cString: strerror(errno)))") }
        let bytes = Array(text.utf8)
        let ok = fwrite(bytes, 1, bytes.count, f) == bytes.count
        let closed = fclose(f) == 0
        guard ok, closed, rename(tmp, path) == 0 else {
            unlink(tmp)
            throw SpawnError(description: "cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }

    public static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    public static func makeDirectories(_ dir: String) throws {
        var p = ""
        for c in dir.split(separator: "/") {
            p += "/" + c
            if mkdir(p, 0o700) != 0 && errno != EEXIST {
                throw SpawnError(description: "cannot create \(p): \(String(cString: strerror(errno)))")
            }
        }
    }
}

/// What the adapter needs from Syncthing's `config.xml`: where its GUI/REST API listens and
/// the key that opens it. Only the `<gui>` element is read; the folders come from the REST
/// API, which is what Syncthing actually runs with.
public struct SyncthingGUI: Sendable, Equatable {
    /// `127.0.0.1:8384`, `[::1]:8384`, `0.0.0.0:8384`, `/path/to/socket` or `unix:///path/to/socket`.
    public var address: String
    public var apiKey: String
    public var tls: Bool

    public init(address: String, apiKey: String, tls: Bool) {
        self.address = address
        self.apiKey = apiKey
        self.tls = tls
    }

    /// Where the REST API answers. A wildcard listen address is reached on loopback: the key
    /// must never travel further than this machine.
    public var endpoint: SyncthingEndpoint {
        if address.hasPrefix("unix://") { return .unix(path: String(address.dropFirst("unix://".count)), tls: tls) }
        // 1.19 writes a Unix socket as a bare absolute path (STGUIADDRESS takes unix://).
        if address.hasPrefix("/") { return .unix(path: address, tls: tls) }
        var host = address
        if host.hasPrefix("0.0.0.0:") { host = "127.0.0.1:" + host.dropFirst("0.0.0.0:".count) }
        if host.hasPrefix("[::]:") { host = "[::1]:" + host.dropFirst("[::]:".count) }
        if host.hasPrefix(":") { host = "127.0.0.1" + host }
        return .tcp(hostPort: host, tls: tls)
    }
}

public enum SyncthingEndpoint: Sendable, Equatable, CustomStringConvertible {
    case tcp(hostPort: String, tls: Bool)
    case unix(path: String, tls: Bool)

    /// `--url`: http://host:port, https://host:port, unix:///path (https+unix:// for TLS).
    public init?(url: String) {
        var u = url
        while u.hasSuffix("/") && !u.hasSuffix("://") { u.removeLast() }
        if u.hasPrefix("unix://") { self = .unix(path: String(u.dropFirst(7)), tls: false) }
        else if u.hasPrefix("https+unix://") { self = .unix(path: String(u.dropFirst(13)), tls: true) }
        else if u.hasPrefix("http://") { self = .tcp(hostPort: String(u.dropFirst(7)), tls: false) }
        else if u.hasPrefix("https://") { self = .tcp(hostPort: String(u.dropFirst(8)), tls: true) }
        else { return nil }
    }

    public var tls: Bool {
        switch self { case .tcp(_, let t), .unix(_, let t): t }
    }

    public var description: String {
        switch self {
        case .tcp(let h, let tls): (tls ? "https://" : "http://") + h
        case .unix(let p, let tls): (tls ? "https+unix://" : "unix://") + p
        }
    }
}

extension String {
    func leftPadded(_ n: Int) -> String { count >= n ? self : String(repeating: "0", count: n - count) + self }
}

public enum ConfigFileError: Error, Equatable, CustomStringConvertible {
    case notFound(tried: [String])
    case unreadable(String)
    case noGUI(String)

    public var description: String {
        switch self {
        case .notFound(let tried): "no Syncthing config.xml in \(tried.joined(separator: ", "))"
        case .unreadable(let path): "cannot read \(path)"
        case .noGUI(let path): "\(path) has no <gui> element with an <address> and an <apikey>"
        }
    }
}

public enum SyncthingConfigFile {
    /// Syncthing's home directories, in the order Syncthing itself looks for them.
    public static func candidateHomes(environment: [String: String]) -> [String] {
        var homes: [String] = []
        let home = environment["HOME"] ?? ""
        if let state = environment["XDG_STATE_HOME"], !state.isEmpty { homes.append(state + "/syncthing") }
        if !home.isEmpty {
            homes.append(home + "/.local/state/syncthing")
        }
        if let config = environment["XDG_CONFIG_HOME"], !config.isEmpty { homes.append(config + "/syncthing") }
        if !home.isEmpty { homes.append(home + "/.config/syncthing") }
        var seen = Set<String>()
        return homes.filter { seen.insert($0).inserted }
    }

    /// The `<gui>` element of a config.xml text.
    public static func parseGUI(_ xml: String) -> SyncthingGUI? {
        guard let open = xml.range(of: "<gui"),
              let tagEnd = xml[open.upperBound...].firstIndex(of: ">"),
              let close = xml[tagEnd...].range(of: "</gui>") else { return nil }
        let attributes = String(xml[open.upperBound..<tagEnd])
        let body = String(xml[xml.index(after: tagEnd)..<close.lowerBound])
        guard let address = element("address", in: body), let key = element("apikey", in: body), !key.isEmpty else {
            return nil
        }
        let tls = attribute("tls", in: attributes)?.lowercased() == "true"
        // Syncthing also forces TLS for the GUI through STGUIADDRESS=https://…; an address
        // written with a scheme says so itself.
        var addr = address
        var useTLS = tls
        if addr.hasPrefix("https://") { addr.removeFirst(8); useTLS = true }
        if addr.hasPrefix("http://") { addr.removeFirst(7) }
        return SyncthingGUI(address: addr, apiKey: key, tls: useTLS)
    }

    static func element(_ name: String, in body: String) -> String? {
        guard let start = body.range(of: "<\(name)>"), let end = body[start.upperBound...].range(of: "</\(name)>") else {
            return nil
        }
        return unescape(String(body[start.upperBound..<end.lowerBound]).trimmingWhitespace())
    }

    static func attribute(_ name: String, in attributes: String) -> String? {
        guard let start = attributes.range(of: " \(name)=\"") else { return nil }
        guard let end = attributes[start.upperBound...].firstIndex(of: "\"") else { return nil }
        return unescape(String(attributes[start.upperBound..<end]))
    }

    /// XML's predefined entities: Go's encoder writes these for `&`, `<`, `>`, quotes.
    static func unescape(_ s: String) -> String {
        guard s.contains("&") else { return s }
        return s.replacingAll("&lt;", "<").replacingAll("&gt;", ">").replacingAll("&quot;", "\"")
            .replacingAll("&#34;", "\"").replacingAll("&apos;", "'").replacingAll("&#39;", "'").replacingAll("&amp;", "&")
    }
}

extension String {
    func replacingAll(_ a: String, _ b: String) -> String { split(separator: a, omittingEmptySubsequences: false).joined(separator: b) }
    func trimmingWhitespace() -> String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s.removeFirst() }
        while let l = s.last, l.isWhitespace { s.removeLast() }
        return String(s)
    }
}

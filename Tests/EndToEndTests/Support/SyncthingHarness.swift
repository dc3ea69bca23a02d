#if canImport(Glibc)
import Glibc
#endif
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

extension Products {
    static var syncthingAdapter: URL { directory.appendingPathComponent("syncbadge-syncthing") }
}

/// Ports this test process has handed out: the kernel may give a port just released to the
/// next bind(0), so two instances (or one instance's GUI and listen ports) could otherwise get
/// the same one.
let handedOutPorts = Mutex<Set<Int>>([])

/// A free TCP port on 127.0.0.1 (bound and released), never one handed out before in this
/// process. Another process may still take it in between; nothing else on a test machine asks.
func freeLoopbackPort() throws -> Int {
    for _ in 0..<1000 {
        let port = try anyFreeLoopbackPort()
        if handedOutPorts.withLock({ $0.insert(port).inserted }) { return port }
    }
    throw HarnessError(description: "no free port that was not handed out already")
}

private func anyFreeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = 0
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
    }
    guard ok else { throw HarnessError(description: "no free port: \(errno)") }
    return Int(UInt16(bigEndian: addr.sin_port))
}

/// Whether something accepts a TCP connection on 127.0.0.1:`port` now.
func loopbackPortAccepts(_ port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = in_port_t(UInt16(port).bigEndian)
    return withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
}

/// One real Syncthing on loopback, set up as the adapter's tests need it: generated home,
/// config.xml edited before the first start (GUI and listen address on 127.0.0.1, a fixed
/// API key, no discovery, relays, NAT, usage or crash reports, upgrades; progress every second).
final class SyncthingInstance {
    static let apiKey = "syncbadge-test-key-0123456789"
    let home: String
    let folder: String
    let guiPort: Int
    let listenPort: Int
    let deviceID: String
    let log: String
    let gui: GUI
    var process: Process?

    /// How the GUI (the REST API) listens.
    enum GUI { case http, https, unix }

    /// `ownFolder`: a folder of its own (shared with nobody) written into config.xml, for an
    /// instance that is never configured through REST.
    init(temp: TempDir, name: String, gui: GUI = .http, ownFolder: String? = nil) throws {
        home = temp.sub("\(name)-home")
        folder = temp.sub("\(name)-folder")
        log = temp.sub("\(name)-syncthing.log")
        self.gui = gui
        guiPort = try freeLoopbackPort()
        listenPort = try freeLoopbackPort()
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        guard let syncthing = installed("syncthing") else { throw HarnessError(description: "syncthing is not installed") }
        // --skip-port-probing: the default ports in config.xml even while a Syncthing of the
        // machine's user holds them, so that the edits below find what they replace.
        let (status, _) = try spawn(syncthing, ["generate", "--home=\(home)", "--no-default-folder", "--skip-port-probing"],
                                    environment: ["HOME": temp.path])
        guard status == 0 else { throw HarnessError(description: "syncthing generate failed: \(status)") }
        var xml = try String(contentsOfFile: home + "/config.xml", encoding: .utf8)
        func set(_ element: String, _ value: String) {
            xml = xml.replacingOccurrences(of: "<\(element)>[^<]*</\(element)>", with: "<\(element)>\(value)</\(element)>", options: .regularExpression)
        }
        // 1.19 takes a Unix socket as a bare absolute path (unix:// only in STGUIADDRESS).
        let address = gui == .unix ? temp.sub("\(name)-gui.sock") : "127.0.0.1:\(guiPort)"
        guard xml.contains("<address>127.0.0.1:8384</address>") else {
            throw HarnessError(description: "no <address>127.0.0.1:8384</address> in the generated config.xml")
        }
        xml = xml.replacingOccurrences(of: "<address>127.0.0.1:8384</address>", with: "<address>\(address)</address>")
        if gui == .https { xml = xml.replacingOccurrences(of: #"<gui enabled="true" tls="false""#, with: #"<gui enabled="true" tls="true""#) }
        set("apikey", Self.apiKey)
        set("listenAddress", "tcp://127.0.0.1:\(listenPort)")
        for (k, v) in [("globalAnnounceEnabled", "false"), ("localAnnounceEnabled", "false"), ("relaysEnabled", "false"),
                       ("natEnabled", "false"), ("crashReportingEnabled", "false"), ("urAccepted", "-1"),
                       ("autoUpgradeIntervalH", "0"), ("progressUpdateIntervalS", "1"), ("startBrowser", "false")] {
            set(k, v)
        }
        try xml.write(toFile: home + "/config.xml", atomically: true, encoding: .utf8)
        guard let r = xml.range(of: #"<device id="[^"]+""#, options: .regularExpression) else {
            throw HarnessError(description: "no device id in config.xml")
        }
        deviceID = String(xml[r].dropFirst(#"<device id=""#.count).dropLast())
        if let id = ownFolder {
            let folderXML = """
                <folder id="\(id)" label="\(id)" path="\(folder)" type="sendreceive" rescanIntervalS="3600" fsWatcherEnabled="true" fsWatcherDelayS="1" ignorePerms="false" autoNormalize="true">
                    <filesystemType>basic</filesystemType>
                    <device id="\(deviceID)" introducedBy=""></device>
                </folder>
                <gui
                """
            xml = xml.replacingOccurrences(of: "<gui", with: folderXML)
            try xml.write(toFile: home + "/config.xml", atomically: true, encoding: .utf8)
        }
    }

    /// Starts it and waits until its REST API answers.
    func start() throws {
        try launch()
        try waitUntilServing()
    }

    /// Starts it without waiting (two instances start side by side).
    func launch() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: installed("syncthing")!)
        p.arguments = ["serve", "--home=\(home)", "--no-browser", "--no-restart", "--no-upgrade"]
        var env = ProcessInfo.processInfo.environment
        env["STNODEFAULTFOLDER"] = "1"
        env["HOME"] = (home as NSString).deletingLastPathComponent
        p.environment = env
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let out = FileHandle(forWritingAtPath: log)!
        p.standardOutput = out
        p.standardError = out
        try p.run()
        process = p
    }

    /// Waits until its REST API answers (an HTTPS one: until its port takes connections, as
    /// `rest` speaks plain HTTP); no event announces that, so it asks every 50 ms.
    func waitUntilServing() throws {
        guard let p = process else { throw HarnessError(description: "syncthing not started") }
        // Generous: on a loaded machine a first start (keys, database) takes a while.
        let deadline = Date().addingTimeInterval(60)
        while gui == .https ? !loopbackPortAccepts(guiPort) : (try? rest("GET", "/rest/system/status")) == nil {
            guard Date() < deadline, p.isRunning else { throw HarnessError(description: "syncthing did not start: \(logText)") }
            usleep(50_000)
        }
    }

    /// Stops the Syncthing we started and waits for it. 1.19 forks a monitor even with
    /// --no-restart; a SIGTERM to the monitor takes about 9 s to stop both, one to its child
    /// (our grandchild, found by pid under /proc) under half a second, and the monitor follows.
    func stop() {
        guard let p = process else { return }
        let pid = p.processIdentifier
        let children = ((try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? "")
            .split(separator: " ").compactMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        for child in children { kill(child, SIGTERM) }
        if children.isEmpty || !waitForExits(of: [pid], untilAtMost: 0, timeout: 10).isEmpty { kill(pid, SIGTERM) }
        p.waitUntilExit()
        process = nil
    }

    var logText: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    /// A REST call with the key in a header (never on a command line).
    @discardableResult
    func rest(_ method: String, _ path: String, json: Any? = nil) throws -> Any? {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(guiPort)\(path)")!)
        request.httpMethod = method
        request.setValue(Self.apiKey, forHTTPHeaderField: "X-API-Key")
        request.timeoutInterval = 30
        if let json {
            request.httpBody = try JSONSerialization.data(withJSONObject: json)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let result = Mutex<(Data?, Int, (any Error)?)?>(nil)
        let done = DispatchSemaphore(value: 0)
        URLSession.shared.dataTask(with: request) { data, response, error in
            result.withLock { $0 = (data, (response as? HTTPURLResponse)?.statusCode ?? 0, error) }
            done.signal()
        }.resume()
        done.wait()
        let (data, code, error) = result.withLock { $0! }
        if let error { throw error }
        guard (200..<300).contains(code) else { throw HarnessError(description: "\(method) \(path): HTTP \(code)") }
        guard let data, !data.isEmpty else { return nil }
        return try JSONSerialization.jsonObject(with: data)
    }

    /// Waits until `GET /rest/config/folders/<id>` says `paused`, woken by Syncthing's own
    /// events (a long-poll on the config and pause events), not by a timer.
    func waitForFolder(_ id: String, paused: Bool, timeout: Double = 15) throws {
        let deadline = Date().addingTimeInterval(timeout)
        var since = 0
        while true {
            let folder = try rest("GET", "/rest/config/folders/\(id)") as? [String: Any]
            if folder?["paused"] as? Bool == paused { return }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else {
                throw HarnessError(description: "folder \(id) never \(paused ? "paused" : "resumed") within \(timeout) s: \(folder ?? [:])")
            }
            let events = try rest("GET", "/rest/events?events=ConfigSaved,FolderPaused,FolderResumed&since=\(since)&timeout=\(Int(left.rounded(.up)))")
            since = (events as? [[String: Any]] ?? []).compactMap { $0["id"] as? Int }.max() ?? since
        }
    }

    /// Adds `peer` and the shared folder in one `PUT /rest/config`: separate calls race (the
    /// devices connect before the folder exists, and the peer ignores it until a restart).
    /// Only a side that `dials` has the peer's address: a connection from the side configured
    /// first could reach the other before its own PUT, be refused, and be tried again only a
    /// reconnection interval later; the side configured last dials, once both know each other.
    func share(id: String, with peer: SyncthingInstance, dials: Bool, folderOptions: [String: Any] = [:], deviceOptions: [String: Any] = [:],
               options: [String: Any] = [:]) throws {
        guard var config = try rest("GET", "/rest/config") as? [String: Any],
              let defaults = config["defaults"] as? [String: Any],
              var device = defaults["device"] as? [String: Any],
              var folder = defaults["folder"] as? [String: Any] else { throw HarnessError(description: "no config defaults") }
        device["deviceID"] = peer.deviceID
        device["name"] = (peer.home as NSString).lastPathComponent
        device["addresses"] = dials ? ["tcp://127.0.0.1:\(peer.listenPort)"] : ["dynamic"]
        for (k, v) in deviceOptions { device[k] = v }
        config["devices"] = (config["devices"] as? [Any] ?? []) + [device]
        folder["id"] = id
        folder["label"] = id
        folder["path"] = self.folder
        folder["fsWatcherDelayS"] = 1
        folder["pullerPauseS"] = 2
        folder["devices"] = [deviceID, peer.deviceID].map { ["deviceID": $0, "introducedBy": "", "encryptionPassword": ""] }
        for (k, v) in folderOptions { folder[k] = v }
        config["folders"] = (config["folders"] as? [Any] ?? []) + [folder]
        if var o = config["options"] as? [String: Any] {
            // The dialling side finds a restarted peer within a second.
            o["reconnectionIntervalS"] = 1
            for (k, v) in options { o[k] = v }
            config["options"] = o
        }
        try rest("PUT", "/rest/config", json: config)
    }

    deinit { stop() }
}

extension ChildProcess {
    /// The Syncthing adapter, running against one Syncthing and the test's daemon.
    static func syncthingAdapter(socket: String, syncthing: SyncthingInstance, extra: [String] = []) throws -> ChildProcess {
        try adapter(Products.syncthingAdapter, socket: socket, arguments: ["--syncthing-home", syncthing.home] + extra)
    }
}

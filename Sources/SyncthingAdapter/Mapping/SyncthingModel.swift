// The parts of Syncthing's REST model (1.19) that the adapter reads. Unknown fields are
// skipped by Codable; every field that Syncthing may leave out or send as null is optional.

public struct SystemStatus: Codable, Sendable, Equatable {
    public var myID: String
    /// Changes at each Syncthing start: with the event ids back at 1, the sign of a restart.
    public var startTime: String
}

public struct SyncthingConfig: Codable, Sendable, Equatable {
    public struct Device: Codable, Sendable, Equatable {
        public var deviceID: String
        public var name: String?
        public init(deviceID: String, name: String? = nil) { self.deviceID = deviceID; self.name = name }
    }
    public struct FolderDevice: Codable, Sendable, Equatable {
        public var deviceID: String
        public init(deviceID: String) { self.deviceID = deviceID }
    }
    public struct Folder: Codable, Sendable, Equatable {
        public var id: String
        public var label: String?
        public var path: String
        public var paused: Bool?
        public var devices: [FolderDevice]
        public init(id: String, label: String? = nil, path: String, paused: Bool? = false, devices: [FolderDevice]) {
            self.id = id; self.label = label; self.path = path; self.paused = paused; self.devices = devices
        }
    }
    public var folders: [Folder]
    public var devices: [Device]
    public init(folders: [Folder], devices: [Device]) { self.folders = folders; self.devices = devices }
}

/// One file's record in Syncthing's database (`local` and `global` of `GET /rest/db/file`).
public struct FileRecord: Codable, Sendable, Equatable {
    public var name: String
    public var deleted: Bool?
    public var ignored: Bool?
    public var invalid: Bool?
    public var modified: String?
    public var size: Int64?
    public var numBlocks: Int?
    public var type: String?
    public var version: [String]?

    public init(name: String, deleted: Bool? = false, modified: String?, size: Int64?, numBlocks: Int? = nil,
                type: String? = "FILE_INFO_TYPE_FILE", version: [String]?) {
        self.name = name; self.deleted = deleted; self.modified = modified; self.size = size
        self.numBlocks = numBlocks; self.type = type; self.version = version
    }

    public var isDirectory: Bool { type == "FILE_INFO_TYPE_DIRECTORY" || type == "DIRECTORY" }
}

public struct DBFile: Codable, Sendable, Equatable {
    /// A device that announced the global version; `fromTemporary`: only a partial copy.
    public struct Availability: Codable, Sendable, Equatable {
        public var id: String
        public var fromTemporary: Bool?
        public init(id: String, fromTemporary: Bool? = false) { self.id = id; self.fromTemporary = fromTemporary }
    }
    public var availability: [Availability]?
    public var global: FileRecord?
    public var local: FileRecord?
    public init(availability: [Availability]? = nil, global: FileRecord?, local: FileRecord?) {
        self.availability = availability; self.global = global; self.local = local
    }
}

/// `GET /rest/db/need`: what this device still has to receive.
public struct NeedList: Codable, Sendable, Equatable {
    public var progress: [FileRecord]?
    public var queued: [FileRecord]?
    public var rest: [FileRecord]?
    public var names: [String] { ((progress ?? []) + (queued ?? []) + (rest ?? [])).map(\.name) }
}

/// `GET /rest/db/remoteneed`: what a peer still has to receive from us.
public struct RemoteNeedList: Codable, Sendable, Equatable {
    public var files: [FileRecord]?
    public var names: [String] { (files ?? []).map(\.name) }
}

public struct Completion: Codable, Sendable, Equatable {
    public var completion: Double
    public var needItems: Int?
    public var needDeletes: Int?
}

public struct IgnoresReply: Codable, Sendable, Equatable {
    public var expanded: [String]?
    public var ignore: [String]?
}

public struct FolderErrorList: Codable, Sendable, Equatable {
    public struct Entry: Codable, Sendable, Equatable {
        public var path: String
        public var error: String
        public init(path: String, error: String) { self.path = path; self.error = error }
    }
    public var errors: [Entry]?
}

public struct ConnectionsReply: Codable, Sendable, Equatable {
    public struct Entry: Codable, Sendable, Equatable { public var connected: Bool }
    public var connections: [String: Entry]
}

/// One event of `/rest/events` or `/rest/events/disk`, its data decoded by its type.
public struct SyncthingEvent: Decodable, Sendable, Equatable {
    public var id: Int
    public var globalID: Int?
    public var type: String
    public var payload: Payload

    public enum Payload: Sendable, Equatable {
        case itemStarted(folder: String, item: String)
        case itemFinished(folder: String, item: String, error: String?)
        /// folder → file → (bytesDone, bytesTotal)
        case downloadProgress([String: [String: Progress]])
        case remoteDownloadProgress(device: String, folder: String, blocks: [String: Int])
        case localIndexUpdated(folder: String, filenames: [String])
        case remoteIndexUpdated(device: String, folder: String)
        case folderCompletion(device: String, folder: String, completion: Double)
        case folderErrors(folder: String, errors: [FolderErrorList.Entry])
        case stateChanged(folder: String, to: String, error: String?)
        case configSaved(SyncthingConfig)
        case deviceConnected(device: String)
        case deviceDisconnected(device: String)
        case localChangeDetected(folder: String, path: String, action: String, type: String)
        case remoteChangeDetected(folder: String, path: String, action: String, type: String)
        case other
    }

    public struct Progress: Codable, Sendable, Equatable {
        public var bytesDone: Int64
        public var bytesTotal: Int64
        public init(bytesDone: Int64, bytesTotal: Int64) { self.bytesDone = bytesDone; self.bytesTotal = bytesTotal }
    }

    public init(id: Int, type: String, payload: Payload) {
        self.id = id; self.type = type; self.payload = payload
    }

    enum Keys: String, CodingKey { case id, globalID, type, data }

    private struct Item: Decodable { var folder: String; var item: String; var error: String? }
    private struct RemoteProgress: Decodable { var device: String; var folder: String; var state: [String: Int]? }
    private struct IndexUpdated: Decodable { var folder: String; var filenames: [String]?; var device: String? }
    private struct FolderCompletionData: Decodable { var device: String; var folder: String; var completion: Double }
    private struct FolderErrorsData: Decodable { var folder: String; var errors: [FolderErrorList.Entry]? }
    private struct StateChangedData: Decodable { var folder: String; var to: String; var error: String? }
    private struct DeviceData: Decodable { var id: String? ; var device: String? }
    private struct DiskChange: Decodable { var folder: String; var path: String; var action: String; var type: String }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        id = try c.decode(Int.self, forKey: .id)
        globalID = try c.decodeIfPresent(Int.self, forKey: .globalID)
        type = try c.decode(String.self, forKey: .type)
        // An event of a known type whose data does not decode is kept as `.other`: one odd
        // event must not stop the stream.
        payload = (try? Self.decodePayload(type: type, c)) ?? .other
    }

    private static func decodePayload(type: String, _ c: KeyedDecodingContainer<Keys>) throws -> Payload {
        switch type {
        case "ItemStarted":
            let d = try c.decode(Item.self, forKey: .data)
            return .itemStarted(folder: d.folder, item: d.item)
        case "ItemFinished":
            let d = try c.decode(Item.self, forKey: .data)
            return .itemFinished(folder: d.folder, item: d.item, error: d.error)
        case "DownloadProgress":
            return .downloadProgress(try c.decode([String: [String: Progress]].self, forKey: .data))
        case "RemoteDownloadProgress":
            let d = try c.decode(RemoteProgress.self, forKey: .data)
            return .remoteDownloadProgress(device: d.device, folder: d.folder, blocks: d.state ?? [:])
        case "LocalIndexUpdated":
            let d = try c.decode(IndexUpdated.self, forKey: .data)
            return .localIndexUpdated(folder: d.folder, filenames: d.filenames ?? [])
        case "RemoteIndexUpdated":
            let d = try c.decode(IndexUpdated.self, forKey: .data)
            return .remoteIndexUpdated(device: d.device ?? "", folder: d.folder)
        case "FolderCompletion":
            let d = try c.decode(FolderCompletionData.self, forKey: .data)
            return .folderCompletion(device: d.device, folder: d.folder, completion: d.completion)
        case "FolderErrors":
            let d = try c.decode(FolderErrorsData.self, forKey: .data)
            return .folderErrors(folder: d.folder, errors: d.errors ?? [])
        case "StateChanged":
            let d = try c.decode(StateChangedData.self, forKey: .data)
            return .stateChanged(folder: d.folder, to: d.to, error: d.error)
        case "ConfigSaved":
            return .configSaved(try c.decode(SyncthingConfig.self, forKey: .data))
        case "DeviceConnected":
            let d = try c.decode(DeviceData.self, forKey: .data)
            return .deviceConnected(device: d.id ?? d.device ?? "")
        case "DeviceDisconnected":
            let d = try c.decode(DeviceData.self, forKey: .data)
            return .deviceDisconnected(device: d.id ?? d.device ?? "")
        case "LocalChangeDetected":
            let d = try c.decode(DiskChange.self, forKey: .data)
            return .localChangeDetected(folder: d.folder, path: d.path, action: d.action, type: d.type)
        case "RemoteChangeDetected":
            let d = try c.decode(DiskChange.self, forKey: .data)
            return .remoteChangeDetected(folder: d.folder, path: d.path, action: d.action, type: d.type)
        default:
            return .other
        }
    }
}

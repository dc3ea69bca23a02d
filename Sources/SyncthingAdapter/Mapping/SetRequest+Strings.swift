import SyncBadgeProtocol

/// The adapter's paths are Syncthing's strings; its SETs are the protocol's one `SetRequest`.
extension SetRequest {
    public init(_ state: SyncState, _ path: String, gen: UInt64? = nil, progress: Int? = nil, message: String? = nil,
                recursive: Bool = false) {
        self.init(state, Array(path.utf8), gen: gen, progress: progress.map { UInt8(clamping: $0) }, message: message,
                  recursive: recursive)
    }

    /// The path as the adapter spells it.
    public var pathString: String { String(decoding: path, as: UTF8.self) }
}

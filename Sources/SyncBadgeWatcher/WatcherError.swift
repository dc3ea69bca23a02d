/// Why the watcher could not start.
public enum WatcherError: Error, CustomStringConvertible {
    case controlFile(String)
    case initialise(String)

    public var description: String {
        switch self {
        case .controlFile(let why): "cannot create the watcher's control file: \(why)"
        case .initialise(let why): "cannot initialise inotify: \(why)"
        }
    }
}

/// Whether the hub serves, or is on its way out; it stops once.
enum RunState {
    case serving
    case stopping

    /// False when already stopping.
    mutating func stop() -> Bool {
        guard self == .serving else { return false }
        self = .stopping
        return true
    }
}

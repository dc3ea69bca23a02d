import SyncBadgeProtocol

/// Reads git's `--progress` output (lines ended by CR while they update, LF when done):
/// the last phase and its percentage.
public struct ProgressReader: Sendable, Equatable {
    public var phase: String?
    public var percent: Int?
    /// Complete lines that are not progress: what git says when something fails.
    public var messages: [String] = []
    var partial: [UInt8] = []

    public init() {}

    public mutating func feed(_ bytes: [UInt8]) {
        for b in bytes {
            if b == UInt8(ascii: "\r") || b == UInt8(ascii: "\n") {
                line(partial, final: b == UInt8(ascii: "\n"))
                partial.removeAll(keepingCapacity: true)
            } else {
                partial.append(b)
            }
        }
    }

    public mutating func finish() {
        if !partial.isEmpty { line(partial, final: true) }
        partial.removeAll()
    }

    mutating func line(_ bytes: [UInt8], final: Bool) {
        let text = String(decoding: bytes, as: UTF8.self).trimmingSpaces
        guard !text.isEmpty else { return }
        // `remote: ` lines are the other side's progress or words: kept only when not progress.
        let body = text.hasPrefix("remote: ") ? String(text.dropFirst(8)) : text
        if let colon = body.firstIndex(of: ":"), let pct = body[colon...].firstIndex(of: "%") {
            let digits = body[body.index(after: colon)..<pct].trimmingSpaces
            if let p = Int(digits), (0...100).contains(p) {
                if !text.hasPrefix("remote: ") {
                    phase = String(body[..<colon])
                    percent = p
                }
                return
            }
        }
        if final, !body.hasSuffix(", done.") { messages.append(text) }
    }

    /// What git said, for an `error` message: its last lines (the `error:`/`fatal:` ones and
    /// the `!` rejections first when there are any).
    public var failureMessage: String {
        let important = messages.filter {
            $0.hasPrefix("error:") || $0.hasPrefix("fatal:") || $0.contains("[rejected]") || $0.contains("[remote rejected]")
        }
        let lines = important.isEmpty ? Array(messages.suffix(3)) : important
        return lines.joined(separator: "\n")
    }
}

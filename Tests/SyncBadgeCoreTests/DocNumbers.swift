/// The numbers docs/ARCHITECTURE.md quotes beside a name in backticks, read back so that a test
/// can hold them against the code: "`EventInbox.slice` (2,048)", "`StateTree.Node`, 56 bytes",
/// "`SetPipeline.firstRetry` (250 ms)", "`Session.outputHighWater` (1 MiB", "`StateTree` (12
/// stored properties)". A quote is the name, then `(` or `,`, then a number with its unit.
///
/// Shared by ArchitectureDocTests (SyncBadgeCoreTests), ArchitectureNumbersTests
/// (SyncBadgeServerTests) and ArchitectureWatcherNumbersTests (SyncBadgeWatcherTests), the last
/// two through links, each of which checks the names its target can see.
struct DocNumbers {
    enum Unit: String, Sendable {
        /// A plain number: `(2,048)`.
        case count
        /// `bytes`, `KiB`, `MiB`, in bytes.
        case bytes
        /// `ms`, `s`, `seconds`, `10-second`, in milliseconds.
        case milliseconds
        /// `stored properties`: what `Mirror` lists for an instance.
        case storedProperties = "stored properties"
    }

    struct Quote: Equatable, Sendable {
        var name: String
        var value: Int
        var unit: Unit
    }

    /// What the code says a quoted name's number is.
    struct Expected: Sendable {
        var name: String
        var value: Int
        var unit: Unit

        init(_ name: String, _ value: Int, _ unit: Unit) {
            self.name = name
            self.value = value
            self.unit = unit
        }
    }

    /// Every quote in the text, in order (fenced code blocks included: a number is a number).
    static func quotes(in text: String) -> [Quote] {
        let chars = Array(text)
        var out: [Quote] = []
        var i = 0
        while i < chars.count {
            guard chars[i] == "`", let close = chars[(i + 1)...].firstIndex(of: "`") else {
                i += 1
                continue
            }
            let name = String(chars[(i + 1)..<close])
            i = close + 1
            if name.isEmpty || name.contains(" ") { continue }
            if let (value, unit) = number(after: chars, at: close + 1) {
                out.append(Quote(name: name, value: value, unit: unit))
            }
        }
        return out
    }

    /// `(N unit` or `, N unit` from `start`, or nil.
    static func number(after chars: [Character], at start: Int) -> (Int, Unit)? {
        var i = start
        while i < chars.count && chars[i] == " " { i += 1 }
        guard i < chars.count, chars[i] == "(" || chars[i] == "," else { return nil }
        i += 1
        while i < chars.count && chars[i] == " " { i += 1 }
        var digits = ""
        while i < chars.count, chars[i].isASCII, chars[i].isNumber || (chars[i] == "," && i + 1 < chars.count && chars[i + 1].isNumber && !digits.isEmpty) {
            if chars[i] != "," { digits.append(chars[i]) }
            i += 1
        }
        guard let n = Int(digits) else { return nil }
        // The unit: one or two words after one space or a hyphen ("10-second").
        var rest = ""
        if i < chars.count && (chars[i] == " " || chars[i] == "-") {
            var j = i + 1
            // "stored properties" may be cut by a line break.
            while j < chars.count && (chars[j].isLetter || ((chars[j] == " " || chars[j] == "\n") && rest == "stored")) {
                rest.append(chars[j] == "\n" ? " " : chars[j])
                j += 1
            }
        }
        switch rest {
        case "bytes", "byte": return (n, .bytes)
        case "KiB": return (n << 10, .bytes)
        case "MiB": return (n << 20, .bytes)
        case "ms": return (n, .milliseconds)
        case "s", "second", "seconds": return (n * 1000, .milliseconds)
        case "stored properties": return (n, .storedProperties)
        default: return (n, .count)
        }
    }

    /// What is wrong with the text's quotes of `expected`: a name it no longer quotes, or a
    /// number other than the code's.
    static func problems(in text: String, expected: [Expected]) -> [String] {
        let all = quotes(in: text)
        var out: [String] = []
        for e in expected {
            let mine = all.filter { $0.name == e.name }
            if mine.isEmpty {
                out.append("`\(e.name)` is quoted with no number (expected \(e.value) \(e.unit.rawValue))")
            }
            for q in mine where q.value != e.value || q.unit != e.unit {
                out.append("`\(e.name)` is quoted as \(q.value) \(q.unit.rawValue); the code says \(e.value) \(e.unit.rawValue)")
            }
        }
        return out
    }
}

extension DocNumbers {
    /// The names whose numbers ArchitectureDocTests checks (what SyncBadgeCore declares).
    static let checkedInCore: Set<String> = ["StateTree.Node", "StateTree", "StateModelTests"]
    /// The names whose numbers ArchitectureNumbersTests checks (what SyncBadgeServer declares).
    static let checkedInServer: Set<String> = [
        "Hub", "Clients", "Clients.Client", "Outbox", "Session", "EventInbox.slice", "Outbox.highWater",
        "LineFramer.maxLineLength",
        "SetPipeline.firstRetry", "SetPipeline.longestRetry", "ActionReplies.defaultTimeout",
        "SyncingReleases.defaultHoldMs", "Daemon.finalCommitTimeout",
    ]
    /// The names whose numbers ArchitectureWatcherNumbersTests checks (what SyncBadgeWatcher declares).
    static let checkedInWatcher: Set<String> = [
        "RecoveryTimers.firstReturnDelay", "RecoveryTimers.maxReturnDelay", "RecoveryTimers.firstDegradedDelay",
        "RecoveryTimers.maxDegradedDelay", "RecoveryTimers.overflowStormWindow", "RecoveryTimers.maxOverflowDelay",
        "MovePairing.arrivalGrace",
    ]
}

/// A push, pull or fetch as the daemon sees it: the root's `syncing` with git's latest phase and
/// percentage (a few times a second at most: each `SET` is a durable write), the actions waiting
/// for an answer, and the answers it ends with.
public struct OperationProgress: Sendable {
    /// An action still waiting when this is over gets its answer at once ("running: the folder
    /// shows its progress"): the client waits 10 seconds at most, and the root's badge tells the rest.
    public static let answerWithin = Duration.seconds(3)
    /// Between two `SET`s of the same phase.
    public static let interval = Duration.milliseconds(200)

    public let kind: String
    public var reader = ProgressReader()
    /// Reply tokens waiting for its end, with the deadline of their interim answer.
    public private(set) var replies: [(token: String, deadline: ContinuousClock.Instant)] = []
    /// What was last sent, so that only changes go out.
    public private(set) var shown: Verdict?
    public private(set) var lastSent: ContinuousClock.Instant

    public init(kind: String, now: ContinuousClock.Instant) {
        self.kind = kind
        lastSent = now
    }

    public var verdict: Verdict {
        Verdict(.syncing, "git \(kind)" + (reader.phase.map { ": \($0)" } ?? ""), progress: reader.percent ?? 0)
    }

    /// An action that asked for an answer waits for the end, or for its deadline.
    public mutating func waiting(_ token: String, now: ContinuousClock.Instant) {
        replies.append((token, now + Self.answerWithin))
    }

    /// The verdict to send now, if it differs from what was sent; `throttled` (new output): a
    /// new percentage of the same phase waits for the interval.
    public func toShow(now: ContinuousClock.Instant, throttled: Bool) -> Verdict? {
        let v = verdict
        if throttled && v.message == shown?.message && now - lastSent < Self.interval { return nil }
        return v == shown ? nil : v
    }

    public mutating func sent(_ v: Verdict, now: ContinuousClock.Instant) {
        shown = v
        lastSent = now
    }

    /// The tokens whose deadline passed, answered with `interim` and no longer waiting.
    public mutating func due(now: ContinuousClock.Instant) -> [String] {
        let due = replies.filter { $0.deadline <= now }.map(\.token)
        if !due.isEmpty { replies.removeAll { $0.deadline <= now } }
        return due
    }

    public var nextDeadline: ContinuousClock.Instant? { replies.map(\.deadline).min() }

    public var interim: ActionAnswer { ActionAnswer("git \(kind) is running: the folder shows its progress") }

    /// Its end: nil when it worked, else the error the root shows (git's own words when it said any).
    public func error(status: Int32) -> String? {
        guard status != 0 else { return nil }
        let said = reader.failureMessage
        return said.isEmpty ? "git \(kind) failed (exit status \(status))" : said
    }

    /// The answer of every action still waiting at the end.
    public func final(error: String?) -> ActionAnswer {
        error.map { ActionAnswer($0, failed: true) } ?? ActionAnswer("git \(kind): done")
    }
}

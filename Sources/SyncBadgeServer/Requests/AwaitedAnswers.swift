import NIOCore

/// The `ACTION … reply=1` requests waiting for their provider's `ANSWER` (PROTOCOL.md 1.2,
/// `action-reply`: `ActionReplies`), and the one timer, for the earliest deadline.
struct AwaitedAnswers {
    var replies: ActionReplies
    var timer = Alarm<NIODeadline>()

    init(timeout: TimeAmount) {
        replies = ActionReplies(timeout: timeout)
    }
}

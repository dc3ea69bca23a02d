import NIOCore

/// The answers awaited for `ACTION ... reply=1` (protocol 1.2, `action-reply`): which client
/// asked (and with which tag), which provider owes the answer, and by when. No I/O: the hub
/// delivers the `* ACTION`, writes the replies these events return, and arms one timer for
/// `nextDeadline`, only while an answer is awaited.
struct ActionReplies {
    struct Awaited: Equatable {
        var client: Int
        var tag: String
        var provider: Int
        var deadline: NIODeadline
    }

    /// What the client's `ACTION` is answered with.
    enum Outcome: Equatable {
        /// `OK [message=]`.
        case answered(message: [UInt8]?)
        /// `ERR failed [message=]`: the provider said `failed=1`.
        case failed(message: [UInt8]?)
        /// `ERR timeout`: no answer in time.
        case timeout
        /// `ERR no-provider`: the provider's connection closed first.
        case noProvider
    }

    struct Reply: Equatable {
        var client: Int
        var tag: String
        var outcome: Outcome
    }

    /// The contract's 10 seconds, from delivery.
    static let defaultTimeout = TimeAmount.seconds(10)

    let timeout: TimeAmount
    private var awaited: [String: Awaited] = [:]
    private var nextToken: UInt64 = 1

    init(timeout: TimeAmount = ActionReplies.defaultTimeout) {
        self.timeout = timeout
    }

    var count: Int { awaited.count }

    /// When the next answer runs out; nil when none is awaited (then no timer is armed).
    var nextDeadline: NIODeadline? { awaited.values.map(\.deadline).min() }

    /// An `ACTION ... reply=1` was delivered: the token the provider answers with. Tokens are
    /// never reused within a daemon's life, so a late answer cannot reach a newer request.
    mutating func delivered(client: Int, tag: String, provider: Int, now: NIODeadline) -> String {
        let token = "r\(nextToken)"
        nextToken += 1
        awaited[token] = Awaited(client: client, tag: tag, provider: provider, deadline: now + timeout)
        return token
    }

    /// `ANSWER <token>` from `provider`: the reply to send, or nil (`ERR not-found`) when the
    /// token is unknown, already answered, expired, or was sent to another connection.
    mutating func answered(_ token: String, by provider: Int, message: [UInt8]?, failed: Bool) -> Reply? {
        guard let a = awaited[token], a.provider == provider else { return nil }
        awaited.removeValue(forKey: token)
        return Reply(client: a.client, tag: a.tag, outcome: failed ? .failed(message: message) : .answered(message: message))
    }

    /// The provider's connection closed: every answer it owed is `ERR no-provider`, in the
    /// order the actions were delivered.
    mutating func providerClosed(_ provider: Int) -> [Reply] {
        take { $0.provider == provider }.map { Reply(client: $0.client, tag: $0.tag, outcome: .noProvider) }
    }

    /// The asking client's connection closed: nobody waits for those answers any more, and a
    /// late `ANSWER` gets `ERR not-found`.
    mutating func clientClosed(_ client: Int) {
        _ = take { $0.client == client }
    }

    /// The timer fired: every answer due by `now` is `ERR timeout`.
    mutating func expired(now: NIODeadline) -> [Reply] {
        take { $0.deadline <= now }.map { Reply(client: $0.client, tag: $0.tag, outcome: .timeout) }
    }

    private mutating func take(_ matching: (Awaited) -> Bool) -> [Awaited] {
        let tokens = awaited.filter { matching($0.value) }.keys
            .sorted { ($0.count, $0) < ($1.count, $1) }
        return tokens.compactMap { awaited.removeValue(forKey: $0) }
    }
}

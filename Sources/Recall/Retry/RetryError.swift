/// Errors the retry layer ends a request with.
public enum RetryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The origin asked to wait `hint` (Retry-After) but only `remaining` of the deadline was left.
    case retryAfterExceedsDeadline(hint: Duration, remaining: Duration)
    /// The total deadline passed while an attempt was still running.
    case deadlineExceeded(deadline: Duration, attempts: Int)

    /// What happened and what to do.
    public var description: String {
        switch self {
        case .retryAfterExceedsDeadline(let hint, let remaining):
            "the server asked to retry after \(hint.formatted), but only \(remaining.formatted) of the deadline was left; "
                + "try again later or raise the deadline"
        case .deadlineExceeded(let deadline, let attempts):
            "the \(deadline.formatted) deadline passed during attempt #\(attempts); raise the deadline or the per-attempt timeout"
        }
    }
}

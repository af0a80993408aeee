/// Errors the retry layer ends a request with.
public struct RetryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of a ``RetryError``.
    public typealias Code = ErrorCode<RetryError>

    /// What kind of error it is.
    public let code: Code
    /// The wait the origin asked for (`Retry-After`), for ``ErrorCode/retryAfterExceedsDeadline`` and
    /// ``ErrorCode/retryAfterTooLong``: schedule the request again after it.
    public let hint: Duration?
    /// What was left of the deadline, for ``ErrorCode/retryAfterExceedsDeadline``.
    public let remaining: Duration?
    /// The longest wait the policy allows (``RetryPolicy/maxRetryAfter``), for ``ErrorCode/retryAfterTooLong``.
    public let limit: Duration?
    /// The deadline, for ``ErrorCode/deadlineExceeded``.
    public let deadline: Duration?
    /// The attempts made, for ``ErrorCode/deadlineExceeded``.
    public let attempts: Int?
    /// The origin's last answer (the `503` or `429` with the `Retry-After`), when there was one.
    public let response: RecallResponse?

    private init(
        code: Code, hint: Duration? = nil, remaining: Duration? = nil, limit: Duration? = nil, deadline: Duration? = nil,
        attempts: Int? = nil, response: RecallResponse? = nil
    ) {
        self.code = code
        self.hint = hint
        self.remaining = remaining
        self.limit = limit
        self.deadline = deadline
        self.attempts = attempts
        self.response = response
    }

    /// The origin asked to wait `hint` (Retry-After) but only `remaining` of the deadline was left.
    public static func retryAfterExceedsDeadline(hint: Duration, remaining: Duration, response: RecallResponse? = nil) -> RetryError {
        RetryError(code: .retryAfterExceedsDeadline, hint: hint, remaining: remaining, response: response)
    }

    /// The origin asked to wait `hint` (Retry-After), longer than the policy's `limit`
    /// (``RetryPolicy/maxRetryAfter``).
    public static func retryAfterTooLong(hint: Duration, limit: Duration, response: RecallResponse? = nil) -> RetryError {
        RetryError(code: .retryAfterTooLong, hint: hint, limit: limit, response: response)
    }

    /// The total deadline passed while attempt number `attempts` was still running.
    public static func deadlineExceeded(deadline: Duration, attempts: Int) -> RetryError {
        RetryError(code: .deadlineExceeded, deadline: deadline, attempts: attempts)
    }

    /// What happened and what to do.
    public var description: String {
        switch code {
        case .retryAfterExceedsDeadline:
            "the server asked to retry after \((hint ?? .zero).formatted), but only \((remaining ?? .zero).formatted) of the "
                + "deadline was left; try again later or raise the deadline"
        case .retryAfterTooLong:
            "the server asked to retry after \((hint ?? .zero).formatted), longer than the \((limit ?? .zero).formatted) "
                + "the retry policy waits (maxRetryAfter); schedule the request again after the hint"
        case .deadlineExceeded:
            "the \((deadline ?? .zero).formatted) deadline passed during attempt #\(attempts ?? 0); "
                + "raise the deadline or the per-attempt timeout"
        default:
            "retry error (\(code))"
        }
    }
}

extension ErrorCode where Owner == RetryError {
    /// See ``RetryError/retryAfterExceedsDeadline(hint:remaining:response:)``.
    public static let retryAfterExceedsDeadline = Self("retryAfterExceedsDeadline")
    /// See ``RetryError/retryAfterTooLong(hint:limit:response:)``.
    public static let retryAfterTooLong = Self("retryAfterTooLong")
    /// See ``RetryError/deadlineExceeded(deadline:attempts:)``.
    public static let deadlineExceeded = Self("deadlineExceeded")
}

/// Errors the retry layer ends a request with.
public struct RetryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of a ``RetryError``.
    public typealias Code = ErrorCode<RetryError>

    /// What kind of error it is.
    public let code: Code
    /// The wait the origin asked for (`Retry-After`), for ``Code/retryAfterExceedsDeadline``.
    public let hint: Duration?
    /// What was left of the deadline, for ``Code/retryAfterExceedsDeadline``.
    public let remaining: Duration?
    /// The deadline, for ``Code/deadlineExceeded``.
    public let deadline: Duration?
    /// The attempts made, for ``Code/deadlineExceeded``.
    public let attempts: Int?

    /// The origin asked to wait `hint` (Retry-After) but only `remaining` of the deadline was left.
    public static func retryAfterExceedsDeadline(hint: Duration, remaining: Duration) -> RetryError {
        RetryError(code: .retryAfterExceedsDeadline, hint: hint, remaining: remaining, deadline: nil, attempts: nil)
    }

    /// The total deadline passed while attempt number `attempts` was still running.
    public static func deadlineExceeded(deadline: Duration, attempts: Int) -> RetryError {
        RetryError(code: .deadlineExceeded, hint: nil, remaining: nil, deadline: deadline, attempts: attempts)
    }

    /// What happened and what to do.
    public var description: String {
        switch code {
        case .retryAfterExceedsDeadline:
            "the server asked to retry after \((hint ?? .zero).formatted), but only \((remaining ?? .zero).formatted) of the "
                + "deadline was left; try again later or raise the deadline"
        case .deadlineExceeded:
            "the \((deadline ?? .zero).formatted) deadline passed during attempt #\(attempts ?? 0); "
                + "raise the deadline or the per-attempt timeout"
        default:
            "retry error (\(code))"
        }
    }
}

extension ErrorCode where Owner == RetryError {
    /// See ``RetryError/retryAfterExceedsDeadline(hint:remaining:)``.
    public static let retryAfterExceedsDeadline = Self("retryAfterExceedsDeadline")
    /// See ``RetryError/deadlineExceeded(deadline:attempts:)``.
    public static let deadlineExceeded = Self("deadlineExceeded")
}

import Foundation

/// Why a ``ResponseBody`` could not be read.
public struct ResponseBodyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of a ``ResponseBodyError``.
    public typealias Code = ErrorCode<ResponseBodyError>

    /// What kind of error it is.
    public let code: Code
    /// The limit a body passed, for ``ErrorCode/tooLarge``.
    public let limit: Int?

    /// The body is longer than the limit it was collected with (its stream was abandoned).
    public static func tooLarge(limit: Int) -> ResponseBodyError {
        ResponseBodyError(code: .tooLarge, limit: limit)
    }

    /// A streamed body was read a second time: it can be read once (collect it to read it again).
    public static let consumed = ResponseBodyError(code: .consumed, limit: nil)

    /// What happened and what to do.
    public var description: String {
        switch code {
        case .tooLarge: "the response body is larger than the \(limit ?? 0)-byte limit it was collected with; raise the limit or read it as a stream"
        case .consumed: "the streamed response body was read already; a streamed body can be read once (collect it to keep it)"
        default: "response body error (\(code))"
        }
    }
}

extension ErrorCode where Owner == ResponseBodyError {
    /// See ``ResponseBodyError/tooLarge(limit:)``.
    public static let tooLarge = Self("tooLarge")
    /// See ``ResponseBodyError/consumed``.
    public static let consumed = Self("consumed")
}

import Foundation

/// Why ``RecallURLProtocol`` could not take a pipeline or a request.
public struct RecallURLProtocolError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of a ``RecallURLProtocolError``.
    public typealias Code = ErrorCode<RecallURLProtocolError>

    /// What kind of error it is.
    public let code: Code

    /// The pipeline's transport sends through a session that lists a `RecallURLProtocol` class:
    /// its requests would come back to the protocol. Give it a session of its own.
    public static let loop = RecallURLProtocolError(code: .loop)

    /// An upload task's body is not visible to a `URLProtocol` in swift-corelibs-foundation, so
    /// the request cannot be sent as it was made. Use a data task with `httpBody` instead.
    public static let uploadBodyUnavailable = RecallURLProtocolError(code: .uploadBodyUnavailable)

    /// What went wrong and what to do.
    public var description: String {
        switch code {
        case .loop:
            "the pipeline's transport sends through a URLSession whose configuration lists RecallURLProtocol, so its requests would loop; give it a transport with a session of its own, such as URLSessionTransport()"
        case .uploadBodyUnavailable:
            "an upload task's body is not visible to a URLProtocol on this platform; send it as a data task with httpBody, or through a session without RecallURLProtocol"
        default:
            "RecallURLProtocol error (\(code))"
        }
    }
}

extension ErrorCode where Owner == RecallURLProtocolError {
    /// See ``RecallURLProtocolError/loop``.
    public static let loop = Self("loop")
    /// See ``RecallURLProtocolError/uploadBodyUnavailable``.
    public static let uploadBodyUnavailable = Self("uploadBodyUnavailable")
}

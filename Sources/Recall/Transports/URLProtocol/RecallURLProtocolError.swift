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

    /// A new route would take requests from a route already in the same table, for every
    /// session of the process that lists the protocol class: a route for every host added
    /// beside others (or others beside it), or host patterns that share a request (one pattern
    /// twice, a wildcard and a host it covers, a host and the same host with a port). Remove the
    /// other route first, or give each set of sessions a `RecallURLProtocol` subclass with
    /// routes of its own.
    public static let routeConflict = RecallURLProtocolError(code: .routeConflict)

    /// What went wrong and what to do.
    public var description: String {
        switch code {
        case .loop:
            "the pipeline's transport sends through a URLSession whose configuration lists RecallURLProtocol, so its requests would loop; give it a transport with a session of its own, such as URLSessionTransport()"
        case .uploadBodyUnavailable:
            "an upload task's body is not visible to a URLProtocol on this platform; send it as a data task with httpBody, or through a session without RecallURLProtocol"
        case .routeConflict:
            "the new route would take over requests another route of the same protocol class already takes, for every session in the process that lists the class; remove that route first (routes.remove(id)), or give each set of sessions a RecallURLProtocol subclass with routes of its own"
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
    /// See ``RecallURLProtocolError/routeConflict``.
    public static let routeConflict = Self("routeConflict")
}

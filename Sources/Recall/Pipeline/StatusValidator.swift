import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A hook that turns a response with an unacceptable status into a failure, in the spirit of
/// Alamofire's `validate()`: the hooks **outside** it (listed before it) get `onFailure` with
/// an ``UnacceptableStatusError`` instead of `onSuccess`, and the caller gets that error unless
/// one of them recovers. The hooks inside it (listed after it) and the retrier still see the
/// response as a response.
///
/// ```swift
/// let pipeline = Pipeline(transport: transport,
///                         hooks: [failureLogger, StatusValidator(), cache],   // logger hears of 4xx/5xx
///                         retrierFactory: .exponentialBackoff())
/// ```
///
/// Put the ``HTTPCache`` inside the validator (after it in the list), as above: the cache then
/// sees a `5xx` as an answer and may serve its stored response instead (`stale-if-error`),
/// and the validator sees that stored response. A cache placed outside the validator does the
/// same when it hears of the failure (its follow-up's `onFailure`): it answers with a stored response when the rules allow it,
/// and lets the error through otherwise.
public struct StatusValidator: ServiceHook {
    /// The statuses let through.
    public let accepted: StatusSet

    /// A validator letting `accepted` through (2xx by default).
    public init(accepting accepted: StatusSet = .success) {
        self.accepted = accepted
    }

    /// The largest body of a refused response collected into its error (16 MiB): a refused
    /// response with a longer body fails with ``ResponseBodyError`` `tooLarge` instead.
    public static let maxErrorBodyBytes = 16 << 20

    /// Throws ``UnacceptableStatusError`` for a status outside ``accepted``, with the response's
    /// body collected (an error is read after the exchange ends: it holds no stream).
    public func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext) async throws -> RecallResponse {
        guard accepted.contains(response.status) else {
            throw UnacceptableStatusError(response: try await response.collected(upTo: Self.maxErrorBodyBytes), accepted: accepted)
        }
        return response
    }
}

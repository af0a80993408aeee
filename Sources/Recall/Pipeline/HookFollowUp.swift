import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a hook that passes a request on does with its outcome, decided with the request: the
/// pipeline calls it in place of the hook's own ``ServiceHook/onSuccess(_:for:context:)`` and
/// ``ServiceHook/onFailure(_:for:context:)`` (see ``HookAction/proceedThen(_:_:)``).
///
/// What the hook found while deciding travels with the request, captured by the follow-up,
/// instead of being written into the request's context and read back:
///
/// ```swift
/// func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
///     let started = ContinuousClock.now
///     return .proceedThen(request, HookFollowUp { response, _, _ in
///         log("\(response.status) in \(ContinuousClock.now - started)")
///         return response
///     })
/// }
/// ```
///
/// A hook that wraps another and carries out its decisions calls the follow-up's
/// ``onSuccess(_:for:context:)`` or ``onFailure(_:for:context:)`` itself, once.
public struct HookFollowUp: Sendable {
    private let handler: Handler

    /// Who handles the outcome.
    private enum Handler: Sendable {
        case closures(
            onSuccess: @Sendable (RecallResponse, URLRequest, RecallContext) async throws -> RecallResponse,
            onFailure: @Sendable (any Error, URLRequest, RecallContext) async throws -> RecallResponse?)
        case resending(any ResendingFollowUp)
    }

    /// A follow-up that hands a response from further in to `onSuccess` (which returns it, or a
    /// replacement) and an error to `onFailure` (which returns a response to recover, or `nil` to
    /// let the error through; the default). Each gets the request the hook passed on.
    public init(
        onSuccess:
            @escaping @Sendable (_ response: RecallResponse, _ request: URLRequest, _ context: RecallContext) async throws
            -> RecallResponse,
        onFailure:
            @escaping @Sendable (_ error: any Error, _ request: URLRequest, _ context: RecallContext) async throws
            -> RecallResponse? = { _, _, _ in nil }
    ) {
        handler = .closures(onSuccess: onSuccess, onFailure: onFailure)
    }

    /// A follow-up that may send a request again through the stages inside its hook (the HTTP
    /// cache's): an object, so handing it over allocates nothing more.
    init(_ resending: any ResendingFollowUp) {
        handler = .resending(resending)
    }

    /// Hands the follow-up `response`, the answer to `request` from further in.
    public func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext) async throws -> RecallResponse {
        try await onSuccess(response, for: request, context: context, inner: nil)
    }

    /// Hands the follow-up `error`, the failure of `request` further in: a response to recover,
    /// or `nil`.
    public func onFailure(_ error: any Error, for request: URLRequest, context: RecallContext) async throws -> RecallResponse? {
        try await onFailure(error, for: request, context: context, inner: nil)
    }

    /// ``onSuccess(_:for:context:)``, with the stages inside the hook (the pipeline's way in).
    func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext, inner: InnerStages?) async throws
        -> RecallResponse
    {
        switch handler {
        case .closures(let onSuccess, _): try await onSuccess(response, request, context)
        case .resending(let followUp): try await followUp.onSuccess(response, for: request, context: context, inner: inner)
        }
    }

    /// ``onFailure(_:for:context:)``, with the stages inside the hook (the pipeline's way in).
    func onFailure(_ error: any Error, for request: URLRequest, context: RecallContext, inner: InnerStages?) async throws
        -> RecallResponse?
    {
        switch handler {
        case .closures(_, let onFailure): try await onFailure(error, request, context)
        case .resending(let followUp): try await followUp.onFailure(error, for: request, context: context, inner: inner)
        }
    }
}

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
    /// Who handles the outcome: one reference, so a ``HookAction`` that carries a follow-up
    /// grows by two words only.
    private let handler: any ResendingFollowUp

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
        handler = Closures(onSuccess: onSuccess, onFailure: onFailure)
    }

    /// A follow-up that may send a request again through the stages inside its hook (the HTTP
    /// cache's): an object, so handing it over allocates nothing more.
    init(_ resending: any ResendingFollowUp) {
        handler = resending
    }

    /// Hands the follow-up `response`, the answer to `request` from further in.
    public func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext) async throws -> RecallResponse {
        try await handler.onSuccess(response, for: request, context: context, inner: nil)
    }

    /// Hands the follow-up `error`, the failure of `request` further in: a response to recover,
    /// or `nil`.
    public func onFailure(_ error: any Error, for request: URLRequest, context: RecallContext) async throws -> RecallResponse? {
        try await handler.onFailure(error, for: request, context: context, inner: nil)
    }

    /// ``onSuccess(_:for:context:)``, with the stages inside the hook (the pipeline's way in).
    func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext, inner: InnerStages?) async throws
        -> RecallResponse
    {
        try await handler.onSuccess(response, for: request, context: context, inner: inner)
    }

    /// ``onFailure(_:for:context:)``, with the stages inside the hook (the pipeline's way in).
    func onFailure(_ error: any Error, for request: URLRequest, context: RecallContext, inner: InnerStages?) async throws
        -> RecallResponse?
    {
        try await handler.onFailure(error, for: request, context: context, inner: inner)
    }

    /// A follow-up made of two closures, which re-send nothing.
    private final class Closures: ResendingFollowUp {
        let success: @Sendable (RecallResponse, URLRequest, RecallContext) async throws -> RecallResponse
        let failure: @Sendable (any Error, URLRequest, RecallContext) async throws -> RecallResponse?

        init(
            onSuccess: @escaping @Sendable (RecallResponse, URLRequest, RecallContext) async throws -> RecallResponse,
            onFailure: @escaping @Sendable (any Error, URLRequest, RecallContext) async throws -> RecallResponse?
        ) {
            success = onSuccess
            failure = onFailure
        }

        func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext, inner: InnerStages?) async throws
            -> RecallResponse
        {
            try await success(response, request, context)
        }

        func onFailure(_ error: any Error, for request: URLRequest, context: RecallContext, inner: InnerStages?) async throws
            -> RecallResponse?
        {
            try await failure(error, request, context)
        }
    }
}

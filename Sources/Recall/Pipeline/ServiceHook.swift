import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A middleware step in a ``Pipeline``: the HTTP cache, request coalescing, logging, metrics
/// and auth headers are all hooks.
///
/// The pipeline calls `onSchedule` from the outermost hook to the innermost, then (unless a
/// hook answered) runs the retrier and transport, then calls `onSuccess` or `onFailure` from
/// the innermost hook to the outermost. `onSuccess`/`onFailure` run **once per logical
/// request**, never once per attempt. Every method has a default that does nothing, so a hook
/// implements only the events it needs.
///
/// - A hook that answers in `onSchedule` does not get its own `onSuccess`; the hooks outside it
///   do, and see the answer's ``RecallResponse/source`` (for example `.cache`).
/// - A response returned by `onFailure` recovers the request: hooks further out see it
///   through `onSuccess`.
/// - An error thrown by any method fails the request with that error (hooks further out see
///   it through `onFailure`).
///
/// A hook keeps what it needs from `onSchedule` to `onSuccess` in the request's context, in a
/// ``ContextSlot`` of its own instance, so several instances of one hook (two caches) compose.
/// A hook that can often decide without suspending (a cache answering from memory) also
/// implements ``decideWithoutSuspending(_:context:)``: the pipeline asks it first.
public protocol ServiceHook: Sendable {
    /// Decides `onSchedule` without suspending, when the hook can: the pipeline calls it before
    /// ``onSchedule(_:context:)`` and calls that only when this returns `nil`, with the same
    /// request and context (a hook may leave what it found so far in its own ``ContextSlot``
    /// for `onSchedule` to go on from). A decision made here is the hook's `onSchedule`
    /// decision: `.proceed` is followed by `onSuccess` or `onFailure`, as after `onSchedule`.
    /// The pipeline asks every hook, and answers a decision of its first hook without an async
    /// call (a hit answered there costs none). The default returns `nil`.
    func decideWithoutSuspending(_ request: URLRequest, context: RecallContext) -> HookAction?

    /// Called before the request goes on. Return `.proceed(request)` (possibly rewritten)
    /// or `.respond(response)` to answer it here.
    func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction

    /// Called with the response from further in. Return it, or a replacement.
    /// `request` is the request this hook passed on from `onSchedule`.
    func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext) async throws -> RecallResponse

    /// Called with the error from further in. Return a response to recover, or `nil` to let
    /// the error through. `request` is the request this hook passed on from `onSchedule`.
    /// A `CancellationError` is reported but cannot be recovered from.
    func onFailure(_ error: any Error, for request: URLRequest, context: RecallContext) async throws -> RecallResponse?
}

extension ServiceHook {
    /// Leaves the decision to ``onSchedule(_:context:)``.
    public func decideWithoutSuspending(_ request: URLRequest, context: RecallContext) -> HookAction? {
        nil
    }

    /// Passes the request on unchanged.
    public func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
        .proceed(request)
    }

    /// Returns the response unchanged.
    public func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext) async throws -> RecallResponse {
        response
    }

    /// Lets the error through.
    public func onFailure(_ error: any Error, for request: URLRequest, context: RecallContext) async throws -> RecallResponse? {
        nil
    }
}

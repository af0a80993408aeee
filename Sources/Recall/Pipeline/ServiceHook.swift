import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A middleware step in a ``Pipeline``: the HTTP cache, request coalescing, logging, metrics
/// and auth headers are all hooks.
///
/// The pipeline asks each hook to decide — ``decide(_:context:)``, and `onSchedule` when that
/// leaves it the decision — from the outermost hook to the innermost, then (unless a hook
/// answered) runs the retrier and transport, then calls `onSuccess` or `onFailure` from
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
/// A hook that needs what it found while deciding once the outcome comes passes the request on
/// with a follow-up that captures it (``HookAction/proceedThen(_:_:)``, ``HookFollowUp``): the
/// pipeline calls the follow-up in place of the hook's `onSuccess`/`onFailure`, so several
/// instances of one hook (two caches) compose and nothing is parked in the request's context.
/// (A value other hooks read goes in the context: ``ContextSlot``, ``ContextKey``.)
/// A hook that can often decide without suspending (a cache answering from memory) implements
/// ``decide(_:context:)``: the pipeline asks it first, and it answers with a value — the action
/// now, or what to await for it (``HookDecision``).
public protocol ServiceHook: Sendable {
    /// Decides what `onSchedule` would, as a value: ``HookDecision/act(_:)`` when the hook can
    /// decide without suspending, ``HookDecision/suspend(_:)`` with what it found so far when it
    /// must wait first (the pipeline awaits it), or ``HookDecision/callOnSchedule`` to leave the
    /// decision to ``onSchedule(_:context:)``. The pipeline calls it for every hook, before
    /// `onSchedule` and instead of it unless it answers `.callOnSchedule`; a decision made here is
    /// the hook's `onSchedule` decision (`.proceed` is followed by `onSuccess` or `onFailure`). A
    /// decision of the pipeline's first hook made without suspending is answered without an async
    /// call (a hit answered there costs none). The default answers `.callOnSchedule`.
    ///
    /// Call one or the other, as the pipeline does: a hook that decides here need not leave
    /// anything for `onSchedule` (``HTTPCache``'s `onSchedule` looks the request up again).
    func decide(_ request: URLRequest, context: RecallContext) -> HookDecision

    /// Called before the request goes on. Return `.proceed(request)` (possibly rewritten)
    /// or `.respond(response)` to answer it here.
    func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction

    /// Called with the response from further in. Return it, or a replacement.
    /// `request` is the request this hook passed on from `onSchedule`. Not called for a request
    /// the hook passed on with a follow-up (``HookAction/proceedThen(_:_:)``): that gets it.
    func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext) async throws -> RecallResponse

    /// Called with the error from further in. Return a response to recover, or `nil` to let
    /// the error through. `request` is the request this hook passed on from `onSchedule`; a
    /// request passed on with a follow-up goes to the follow-up instead.
    /// A `CancellationError` is reported but cannot be recovered from.
    func onFailure(_ error: any Error, for request: URLRequest, context: RecallContext) async throws -> RecallResponse?
}

extension ServiceHook {
    /// Leaves the decision to ``onSchedule(_:context:)``.
    public func decide(_ request: URLRequest, context: RecallContext) -> HookDecision {
        .callOnSchedule
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

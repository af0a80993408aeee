import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a hook's ``ServiceHook/onSchedule(_:context:)`` decides for a request.
public enum HookAction: Sendable {
    /// Pass this (possibly rewritten) request on to the inner hooks and the transport.
    case proceed(URLRequest)
    /// Pass this request on, and hand its outcome to `followUp` in place of this hook's
    /// `onSuccess` and `onFailure`: what the hook found while deciding travels with the request
    /// (captured by the follow-up), not in its context.
    case proceedThen(URLRequest, HookFollowUp)
    /// Answer the request with this response: inner hooks, the retrier and the transport are skipped.
    case respond(RecallResponse)
    /// Answer with this response now, and send `refresh` through the inner hooks, the retrier
    /// and the transport in the background; its outcome reaches only this hook — its `followUp`
    /// when given, else its `onSuccess` or `onFailure` — with a new context carrying this one's
    /// values. This is how `stale-while-revalidate` refreshes an entry without making the caller
    /// wait. (Held in a box of its own: the other actions, a hit's answer first, stay as small
    /// as a response.)
    indirect case respondThenRefresh(RecallResponse, refresh: URLRequest, then: HookFollowUp? = nil)
}

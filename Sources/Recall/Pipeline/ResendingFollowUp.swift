import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What handles the outcome behind a ``HookFollowUp``: two closures, or an object of the
/// library's (the cache's request state) that may send a request again through the stages inside
/// its hook while it handles the outcome (``InnerStages``; `nil` outside a pipeline, where it
/// must do without).
protocol ResendingFollowUp: AnyObject, Sendable {
    /// The answer from further in.
    func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext, inner: InnerStages?) async throws
        -> RecallResponse

    /// The failure further in.
    func onFailure(_ error: any Error, for request: URLRequest, context: RecallContext, inner: InnerStages?) async throws
        -> RecallResponse?
}

import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A hook that may send a request again through the stages inside it while it handles an
/// outcome: the pipeline calls these two instead of ``ServiceHook``'s, with the way in as an
/// argument (``InnerStages``). Only the hook that re-sends pays for it: the pipeline finds out
/// once, when it is made, which of its hooks are such.
///
/// Called outside a pipeline (or wrapped by another hook that calls ``ServiceHook``'s
/// methods), the hook gets no stages (`inner` is `nil`) and must do without re-sending.
protocol ResendingHook: ServiceHook {
    /// ``ServiceHook/onSuccess(_:for:context:)``, with the stages inside the hook.
    func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext, inner: InnerStages?) async throws
        -> RecallResponse

    /// ``ServiceHook/onFailure(_:for:context:)``, with the stages inside the hook.
    func onFailure(_ error: any Error, for request: URLRequest, context: RecallContext, inner: InnerStages?) async throws
        -> RecallResponse?
}

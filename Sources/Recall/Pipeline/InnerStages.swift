import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The stages inside one hook of a pipeline — its inner hooks, the retrier, the transport — as
/// a value the pipeline hands a hook's follow-up (``ResendingFollowUp``) with an outcome, so that it can
/// send a request through them again (the HTTP cache, for a 304 that matches nothing stored).
///
/// A struct of one reference and an index: handing it over costs no allocation and no lock
/// (it used to be written into the request's context around every hook's outcome).
struct InnerStages: Sendable {
    let pipeline: Pipeline
    /// The index of the hook these stages are inside.
    let index: Int

    /// Sends `request` through the stages, in `context`.
    func send(_ request: URLRequest, context: RecallContext) async throws -> RecallResponse {
        try await pipeline.run(after: index, request, context: context)
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a hook's ``ServiceHook/onSchedule(_:context:)`` decides for a request.
public enum HookAction: Sendable {
    /// Pass this (possibly rewritten) request on to the inner hooks and the transport.
    case proceed(URLRequest)
    /// Answer the request with this response: inner hooks, the retrier and the transport are skipped.
    case respond(Response)
}

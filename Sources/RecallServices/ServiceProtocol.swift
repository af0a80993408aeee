import Foundation
import Recall
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An in-process service reachable through a ``ServiceRouter`` at
/// `http://<host>/<identifier>/…`.
///
/// Services are Sendable and may be called concurrently. `registered` and `unregistered`
/// tell a service when the router starts and stops routing to it; both default to nothing.
public protocol ServiceProtocol: Sendable {
    /// Answers one request. A thrown error becomes a `500` response with the error as text.
    func handle(_ request: ServiceRequest) async throws -> RecallResponse

    /// Called once the service is registered under `identifier`.
    func registered(as identifier: String) async

    /// Called once the service is no longer registered under `identifier`.
    func unregistered(from identifier: String) async
}

extension ServiceProtocol {
    /// Does nothing.
    public func registered(as identifier: String) async {}

    /// Does nothing.
    public func unregistered(from identifier: String) async {}

    /// An error answer: `status`, an optional `text/plain` body and extra header fields.
    public func respondWithErrorStatus(_ status: Int, text: String? = nil, headers: HeaderFields = [:]) -> RecallResponse {
        ServiceRouter.errorResponse(status, text: text, headers: headers)
    }

    /// A response with `status`, header fields and body; `Content-Length` is set.
    public func createResponse(status: Int = 200, headers: HeaderFields = [:], body: Data = Data()) -> RecallResponse {
        var headers = headers
        headers["Content-Length"] = String(body.count)
        return RecallResponse(status: status, headers: headers, body: body)
    }

    /// A response whose body streams: `produce` writes its chunks, in a task of its own, as the
    /// caller reads them (the caller leaving cancels it); `Content-Length` is set when `length`
    /// is given, and the body must reach it.
    public func createResponse(
        status: Int = 200, headers: HeaderFields = [:], length: Int? = nil,
        streaming produce: @escaping @Sendable (ResponseBody.Writer) async throws -> Void
    ) -> RecallResponse {
        var headers = headers
        if let length { headers["Content-Length"] = String(length) }
        return RecallResponse(status: status, headers: headers, body: ResponseBody.producing(expectedLength: length, produce))
    }

    /// A `200` (or `status`) response whose body is `value` encoded as JSON.
    public func createResponse<Body: Encodable>(
        status: Int = 200, headers: HeaderFields = [:], json value: Body,
        encoder: JSONEncoder = JSONEncoder()
    ) throws -> RecallResponse {
        var headers = headers
        if !headers.contains("Content-Type") { headers.add("Content-Type", "application/json") }
        return createResponse(status: status, headers: headers, body: try encoder.encode(value))
    }
}

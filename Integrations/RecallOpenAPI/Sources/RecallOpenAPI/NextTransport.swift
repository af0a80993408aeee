import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import HTTPTypes
import OpenAPIRuntime
import Recall

/// The rest of an OpenAPI client's chain as a Recall ``/Recall/Transport``, for the length of
/// one ``RecallMiddleware/intercept(_:body:baseURL:operationID:next:)`` call.
struct NextTransport: Transport {
    let next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    /// The base URL the client gave: passed on unchanged while the request stays under it.
    let baseURL: URL
    /// A body that may be read only once, passed on as it is (the request is then not retried).
    let passedOnBody: HTTPBody?
    /// The longest response body passed on; nil for any length.
    let maxResponseBodyBytes: Int?

    /// `next` may not outlive the middleware's call: no background refreshes.
    var allowsBackgroundRequests: Bool { false }

    /// Attempts run in the caller's task, so that none outlives the call (OpenAPI transports
    /// stop when cancelled).
    var respondsToCancellation: Bool { true }

    func send(_ request: URLRequest) async throws -> RecallResponse {
        let (converted, base) = try HTTPRequest.from(request, under: baseURL)
        let body = request.httpBody.map { HTTPBody($0) } ?? passedOnBody
        let response: HTTPResponse, responseBody: HTTPBody?
        do {
            (response, responseBody) = try await next(converted, body, base)
        } catch let error as ClientError {
            // The runtime wraps the transport's failure; the retrier and the cache classify the
            // failure itself (a refused connection is retryable and "never sent").
            throw error.underlyingError
        }
        let headers = HeaderFields(response.headerFields)
        let length = ResponseBody.declaredLength(status: response.status.code, headers: headers, requestMethod: request.httpMethod)
        let streamed = responseBody.map { stream($0, expectedLength: length, url: request.url) } ?? ResponseBody()
        return RecallResponse(status: response.status.code, headers: headers, body: streamed, url: request.url)
    }

    /// `body` as a Recall stream, read as the caller takes it; the caller leaving cancels the
    /// reading (and with it the transport's download).
    private func stream(_ body: HTTPBody, expectedLength: Int?, url: URL?) -> ResponseBody {
        let limit = maxResponseBodyBytes
        return ResponseBody.producing(expectedLength: expectedLength, url: url) { writer in
            var received = 0
            for try await chunk in body {
                received += chunk.count
                if let limit, received > limit {
                    throw TransportError(.other, url: url, message: "a response body of more than \(limit) bytes, over the middleware's maxResponseBodyBytes")
                }
                try await writer.write(Data(chunk))
            }
        }
    }
}

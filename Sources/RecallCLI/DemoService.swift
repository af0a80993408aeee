import Foundation
import Recall
import RecallServices

/// The in-process API behind `recall demo`: a small catalog that is cacheable, versioned
/// with ETags, and flaky in scripted ways.
///
/// - `/items/<id>`: `max-age=30`, an ETag per item, 10 ms of latency; 304 for a matching `If-None-Match`.
/// - `/prices`: `no-cache` with an ETag, so every use revalidates.
/// - `/flaky`: answers 503 twice (with `Retry-After: 0`), then 200.
/// - `/news`: `max-age=1, stale-if-error=300`; after the first hit it fails with 500.
/// - `/down`: always 503.
final class DemoService: ServiceProtocol {
    private let hits = Locked<[String: Int]>([:])

    /// How many requests reached the service, per path.
    var hitCounts: [String: Int] { hits.withLock { $0 } }

    /// The total number of requests that reached the service.
    var totalHits: Int { hitCounts.values.reduce(0, +) }

    func handle(_ request: ServiceRequest) async throws -> RecallResponse {
        let count = hits.withLock { hits -> Int in
            hits[request.path, default: 0] += 1
            return hits[request.path]!
        }
        let segments = request.path.split(separator: "/").map(String.init)
        switch segments.first {
        case "items" where segments.count == 2:
            try await Task.sleep(for: .milliseconds(10))  // a little latency, so concurrent misses overlap
            let tag = "\"item-\(segments[1])-v1\""
            if request.headers["If-None-Match"] == tag {
                return createResponse(status: 304, headers: ["ETag": tag, "Cache-Control": "max-age=30"])
            }
            return try createResponse(
                headers: ["Cache-Control": "max-age=30", "ETag": tag, "Date": HTTPDate.format(Date())],
                json: ["id": segments[1], "name": "Item \(segments[1])"])
        case "prices":
            let tag = "\"prices-7\""
            if request.headers["If-None-Match"] == tag {
                return createResponse(status: 304, headers: ["ETag": tag, "Cache-Control": "no-cache"])
            }
            return try createResponse(
                headers: ["Cache-Control": "no-cache", "ETag": tag, "Date": HTTPDate.format(Date())],
                json: ["currency": "EUR", "rate": "1.08"])
        case "flaky":
            if count <= 2 { return respondWithErrorStatus(503, text: "busy, try again", headers: ["Retry-After": "0"]) }
            return try createResponse(headers: ["Date": HTTPDate.format(Date())], json: ["status": "recovered"])
        case "news":
            if count > 1 { return respondWithErrorStatus(500, text: "news database unavailable") }
            return try createResponse(
                headers: ["Cache-Control": "max-age=1, stale-if-error=300", "Date": HTTPDate.format(Date().addingTimeInterval(-5))],
                json: ["headline": "Recall ships"])
        case "down":
            return respondWithErrorStatus(503, text: "maintenance")
        default:
            return respondWithErrorStatus(404, text: "no such resource: \(request.path)")
        }
    }
}

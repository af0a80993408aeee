import Foundation
import Recall
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Time stamps the inner transport's calls: when the last call began and ended.
final class StampingTransport: Transport, @unchecked Sendable {
    let inner: any Transport
    let lock = NSLock()
    var began = ContinuousClock.now, ended = ContinuousClock.now
    init(_ inner: any Transport) { self.inner = inner }
    var respondsToCancellation: Bool { inner.respondsToCancellation }
    func send(_ request: URLRequest) async throws -> RecallResponse {
        let start = ContinuousClock.now
        defer {
            let end = ContinuousClock.now
            lock.withLock {
                began = start; ended = end
            }
        }
        return try await inner.send(request)
    }
}

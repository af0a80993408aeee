import Foundation
import Recall
import RecallTesting
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The loopback origin server (`origin_server.py`) as the tests use it: one process per test
/// run, started on first use (see ``LoopbackOrigin``).
final class OriginServer: Sendable {
    /// The server shared by every test; tests use distinct paths, so hit counts never mix.
    static let shared = Task { try OriginServer() }

    let origin: LoopbackOrigin
    var port: Int { origin.port }

    private init() throws {
        guard let script = Bundle.module.url(forResource: "origin_server", withExtension: "py") else {
            throw TransportError(.other, message: "origin_server.py is missing from the test bundle")
        }
        origin = try LoopbackOrigin(script: script)
    }

    /// A URL on the server: `path` plus query items that tell the server how to answer.
    func url(_ path: String, _ query: [String: String] = [:], extra: [URLQueryItem] = []) -> URL {
        origin.url(path, query.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } + extra.map { ($0.name, $0.value ?? "") })
    }

    /// How many requests reached `path` so far.
    func hits(_ path: String) async throws -> Int {
        let response = try await URLSessionTransport().send(URLRequest(url: url("/__hits", ["path": path]))).collected()
        let json = try JSONSerialization.jsonObject(with: response.data) as? [String: Any]
        return json?["hits"] as? Int ?? -1
    }

    /// The `Range` and `If-Range` fields of the last request that reached `path` (`nil` when absent).
    func lastRange(_ path: String) async throws -> (range: String?, ifRange: String?) {
        let response = try await URLSessionTransport().send(URLRequest(url: url("/__hits", ["path": path]))).collected()
        let json = try JSONSerialization.jsonObject(with: response.data) as? [String: Any]
        return (json?["range"] as? String, json?["ifRange"] as? String)
    }

    /// Lets a stream held at `gate` (`gate=NAME`) send the rest of its body.
    func open(gate: String) async throws {
        _ = try await URLSessionTransport().send(URLRequest(url: url("/__open", ["gate": gate]))).collected()
    }

    /// A path no other test uses.
    static func uniquePath(_ name: String) -> String {
        "/\(name)-\(UUID().uuidString.prefix(8))"
    }
}

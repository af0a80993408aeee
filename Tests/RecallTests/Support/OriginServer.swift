import Foundation
import Recall
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The loopback origin server (`origin_server.py`) as the tests use it: one python3 process
/// per test run, started on first use on an ephemeral port, ended when the test process
/// exits (the server quits when its standard input closes).
final class OriginServer: Sendable {
    /// The server shared by every test; tests use distinct paths, so hit counts never mix.
    static let shared = Task { try OriginServer() }

    let port: Int
    private let process: Process
    private let input: Pipe

    private init() throws {
        guard let script = Bundle.module.url(forResource: "origin_server", withExtension: "py") else {
            throw TransportError(.other, message: "origin_server.py is missing from the test bundle")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { throw TransportError(.other, message: "origin server exited before listening (is python3 installed?)") }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix("PORT "), let port = Int(text.dropFirst(5)) else {
            throw TransportError(.other, message: "origin server said '\(text)'")
        }
        self.port = port
        self.process = process
        self.input = input
    }

    /// A URL on the server: `path` plus query items that tell the server how to answer.
    func url(_ path: String, _ query: [String: String] = [:], extra: [URLQueryItem] = []) -> URL {
        var components = URLComponents()
        components.scheme = "http"
        components.host = "127.0.0.1"
        components.port = port
        components.path = path
        let items = query.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) } + extra
        if !items.isEmpty { components.percentEncodedQuery = Self.encode(items) }
        return components.url!
    }

    /// How many requests reached `path` so far.
    func hits(_ path: String) async throws -> Int {
        let url = url("/__hits", ["path": path])
        let response = try await URLSessionTransport().send(URLRequest(url: url))
        let json = try JSONSerialization.jsonObject(with: response.body) as? [String: Any]
        return json?["hits"] as? Int ?? -1
    }

    /// A path no other test uses.
    static func uniquePath(_ name: String) -> String {
        "/\(name)-\(UUID().uuidString.prefix(8))"
    }

    private static func encode(_ items: [URLQueryItem]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return items.map { item in
            let name = item.name.addingPercentEncoding(withAllowedCharacters: allowed) ?? item.name
            let value = (item.value ?? "").addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
            return "\(name)=\(value)"
        }.joined(separator: "&")
    }
}

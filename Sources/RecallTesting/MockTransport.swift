import Foundation
import Recall
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A scriptable ``/Recall/Transport`` for tests: routes by method and path to canned responses,
/// closures or sequences (fail, fail, succeed), and records every request it saw.
///
/// ```swift
/// let mock = MockTransport()
/// mock.route("GET", "/items", .error(TransportError(.connectionLost)), .text("ok"))
/// ```
/// A sequence plays its replies in order and then repeats the last one. A request that
/// matches no route answers `501 Not Implemented`.
public final class MockTransport: Transport {
    /// One scripted reply.
    public enum Reply: Sendable {
        /// Answer with this response (its URL is filled in from the request when nil).
        case response(RecallResponse)
        /// Throw this error, as a failing transport would.
        case error(any Error)
        /// Compute the answer from the request.
        case handler(@Sendable (URLRequest) async throws -> RecallResponse)

        /// A `text/plain` answer.
        public static func text(_ text: String, status: Int = 200, headers: HeaderFields = [:]) -> Reply {
            .response(.text(text, status: status, headers: headers))
        }

        /// An answer with `status`, header fields and an optional body.
        public static func status(_ status: Int, headers: HeaderFields = [:], body: Data = Data()) -> Reply {
            .response(RecallResponse(status: status, headers: headers, body: body))
        }
    }

    private struct Route {
        let method: String?
        let path: String
        let replies: [Reply]
        var played = 0
    }

    private struct State {
        var routes: [Route] = []
        var requests: [URLRequest] = []
    }

    private let state = Locked(State())

    /// Whether the transport returns promptly once cancelled (see ``/Recall/Transport/respondsToCancellation``):
    /// canned replies always do; claim it for handlers only when they do too.
    public let respondsToCancellation: Bool

    /// Creates a transport with no routes. `respondsToCancellation` (true by default) says whether
    /// its handlers return promptly once cancelled; pass `false` to have the pipeline treat it as a
    /// transport that may not.
    public init(respondsToCancellation: Bool = true) {
        self.respondsToCancellation = respondsToCancellation
    }

    /// Routes `method` (any method when nil) and `path` to `replies`, played in order with the
    /// last one repeating. A later route for the same method and path replaces an earlier one.
    /// `path` matches the URL's path, or path and query when it contains `?`.
    public func route(_ method: String? = "GET", _ path: String, _ replies: Reply...) {
        route(method, path, replies: replies)
    }

    /// Routes `method` and `path` to a list of replies; see ``route(_:_:_:)``.
    public func route(_ method: String?, _ path: String, replies: [Reply]) {
        precondition(!replies.isEmpty, "a route needs at least one reply")
        state.withLock { state in
            state.routes.removeAll { $0.method == method?.uppercased() && $0.path == path }
            state.routes.append(Route(method: method?.uppercased(), path: path, replies: replies))
        }
    }

    /// Routes `method` and `path` to a closure.
    public func route(
        _ method: String? = "GET", _ path: String,
        handler: @escaping @Sendable (URLRequest) async throws -> RecallResponse
    ) {
        route(method, path, .handler(handler))
    }

    /// Every request received, in order.
    public var requests: [URLRequest] { state.withLock { $0.requests } }

    /// The requests received for `path` (matched as in ``route(_:_:_:)``).
    public func requests(for path: String) -> [URLRequest] {
        requests.filter { Self.matches(path, $0.url) }
    }

    /// How many requests were received for `path`.
    public func count(for path: String) -> Int { requests(for: path).count }

    /// Forgets recorded requests and restarts every sequence; routes are kept.
    public func reset() {
        state.withLock { state in
            state.requests.removeAll()
            for index in state.routes.indices { state.routes[index].played = 0 }
        }
    }

    /// Plays the next reply of the matching route.
    public func send(_ request: URLRequest) async throws -> RecallResponse {
        let method = (request.httpMethod ?? "GET").uppercased()
        let reply = state.withLock { state -> Reply? in
            state.requests.append(request)
            guard
                let index = state.routes.lastIndex(where: {
                    ($0.method == nil || $0.method == method) && Self.matches($0.path, request.url)
                })
            else { return nil }
            let route = state.routes[index]
            state.routes[index].played += 1
            return route.replies[min(route.played, route.replies.count - 1)]
        }
        try Task.checkCancellation()
        var response: RecallResponse
        switch reply {
        case nil:
            response = .text("MockTransport has no route for \(method) \(request.url?.path ?? "")", status: 501)
        case .response(let canned)?:
            response = canned
        case .error(let error)?:
            throw error
        case .handler(let handler)?:
            response = try await handler(request)
        }
        if response.url == nil { response.url = request.url }
        return response
    }

    private static func matches(_ path: String, _ url: URL?) -> Bool {
        guard let url else { return false }
        let urlPath = url.path.isEmpty ? "/" : url.path
        if path.contains("?") {
            return path == urlPath + (url.query.map { "?" + $0 } ?? "")
        }
        return path == urlPath
    }
}

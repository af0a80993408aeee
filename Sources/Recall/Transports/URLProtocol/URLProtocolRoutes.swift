import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Which ``Pipeline`` a ``RecallURLProtocol`` sends a request through: routes are tried newest
/// first, and the first whose hosts match the request's takes it; a request no route matches is
/// left to the other protocols of the session (the network, untouched).
///
/// `URLSession` makes protocol objects itself, so the routes live with the protocol class:
/// ``RecallURLProtocol/routes`` is ``shared`` unless a subclass keeps its own (to give two
/// sessions of one process different pipelines for the same host).
public final class URLProtocolRoutes: Sendable {
    /// The routes ``RecallURLProtocol`` itself uses.
    public static let shared = URLProtocolRoutes()

    /// A route: a pipeline and the hosts it answers for.
    public struct Route: Sendable {
        /// Identifies the route, to remove it.
        public let id: UInt64
        /// The host patterns: `api.example.com`, `*.example.com` (any subdomain), or
        /// `127.0.0.1:8080` (host and port); `nil` for every host.
        public let hosts: [String]?
        /// The pipeline matching requests go through.
        public let pipeline: Pipeline

        /// The host patterns, parsed (`nil`: every host).
        let patterns: [HostPattern]?

        init(id: UInt64, hosts: [String]?, pipeline: Pipeline) {
            self.id = id
            self.hosts = hosts
            self.pipeline = pipeline
            patterns = hosts?.map(HostPattern.init)
        }

        /// Whether the route takes `url` (an `http` or `https` URL).
        func matches(_ url: URL) -> Bool {
            guard let patterns else { return true }
            guard let host = url.host?.lowercased() else { return false }
            return patterns.contains { $0.matches(host: host, port: url.port) }
        }

        /// Whether the route would take any request a route for `others` takes (`nil`: every host).
        func overlaps(_ others: [HostPattern]?) -> Bool {
            guard let patterns, let others else { return true }
            return patterns.contains { mine in others.contains(where: mine.overlaps) }
        }
    }

    private let state = Locked((next: UInt64(1), routes: [Route]()))

    /// An empty set of routes (a ``RecallURLProtocol`` subclass's own).
    public init() {}

    /// Sends requests for `hosts` (every host when `nil`) through `pipeline`, before any route
    /// added earlier; returns the route's identifier, for ``remove(_:)``.
    ///
    /// - Throws: ``RecallURLProtocolError`` when the pipeline's transport is a
    ///   ``URLSessionTransport`` over a session that lists a `RecallURLProtocol` class: its
    ///   requests would come back to the protocol and loop. Give the pipeline a transport with
    ///   a session of its own (the default `URLSessionTransport()`); ``RecallURLProtocolError/routeConflict``
    ///   when the route would take any request another route of this table takes (a route for
    ///   every host beside any other; a host pattern another route has; `*.example.com` beside
    ///   `api.example.com`; `api.example.com` beside `api.example.com:8443`): routes are
    ///   process-wide, so that would silently move another module's sessions to this pipeline —
    ///   the newest route never wins an overlap, it is refused.
    ///   The same pipeline for the same hosts again returns the route already there.
    @discardableResult
    public func add(_ pipeline: Pipeline, hosts: [String]? = nil) throws -> UInt64 {
        if let session = (pipeline.transport as? URLSessionTransport)?.session,
            session.configuration.protocolClasses?.contains(where: { $0 is RecallURLProtocol.Type }) == true
        {
            throw RecallURLProtocolError.loop
        }
        let patterns = hosts.map { $0.map { $0.trimmingOWS } }
        return try state.withLock { state in
            let lowered = Set(patterns?.map { $0.lowercased() } ?? [])
            // The same pipeline for the same hosts again (a second configuration of the same
            // sessions): the route there is, not a conflict.
            if let same = state.routes.first(where: { route in
                route.pipeline.isSame(as: pipeline) && (route.hosts.map { Set($0.map { $0.lowercased() }) } == (patterns == nil ? nil : lowered))
            }) {
                return same.id
            }
            let parsed = patterns?.map(HostPattern.init)
            let conflict = state.routes.contains { $0.overlaps(parsed) }
            if conflict { throw RecallURLProtocolError.routeConflict }
            defer { state.next += 1 }
            state.routes.insert(Route(id: state.next, hosts: patterns, pipeline: pipeline), at: 0)
            return state.next
        }
    }

    /// Removes the route `id` (requests it took go to the next matching route, or the network).
    public func remove(_ id: UInt64) {
        state.withLock { $0.routes.removeAll { $0.id == id } }
    }

    /// Removes every route.
    public func removeAll() {
        state.withLock { $0.routes.removeAll() }
    }

    /// The routes, newest first.
    public var routes: [Route] { state.withLock { $0.routes } }

    /// The route that takes `request`, if any: `http` and `https` requests only.
    func route(for request: URLRequest) -> Route? {
        guard let url = request.url, let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return nil }
        return state.withLock { $0.routes.first { $0.matches(url) } }
    }
}

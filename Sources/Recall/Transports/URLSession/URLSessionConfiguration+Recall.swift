import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension URLSessionConfiguration {
    /// Sends the requests of sessions made from this configuration through `pipeline`: for
    /// `hosts` (every host when `nil`; see ``URLProtocolRoutes/Route/hosts``), by way of
    /// `protocolClass` (``RecallURLProtocol`` by default, put first in `protocolClasses`) and its
    /// routes. Returns the route's identifier, to remove it from `protocolClass.routes` later.
    ///
    /// ```swift
    /// let configuration = URLSessionConfiguration.default
    /// try configuration.sendThroughRecall(Pipeline(transport: URLSessionTransport(), hooks: [HTTPCache()],
    ///                                             retrierFactory: .exponentialBackoff()))
    /// let session = URLSession(configuration: configuration)   // call sites unchanged
    /// ```
    ///
    /// Routes belong to `protocolClass`, not to this configuration: **every** session of the
    /// process that lists the class uses them. So a route that would take another's requests —
    /// a second `sendThroughRecall(_:)` for every host, or one for a host another route has —
    /// is refused (``RecallURLProtocolError/routeConflict``) rather than silently taking over
    /// the first one's sessions. Sessions that need different pipelines for the same host use
    /// subclasses with routes of their own (see ``RecallURLProtocol``). A route keeps its pipeline alive until it is
    /// removed: `protocolClass.routes.remove(id)` when the sessions are done.
    ///
    /// Routing every host (`hosts` nil), it also sets `urlCache` to `nil`: Recall is then the
    /// sessions' cache. A session asks its `URLCache` before every load — on corelibs by way of a
    /// background queue, with a look on disk for a cache that has one — and Recall's answers are
    /// never stored there, so the look-up could only cost (on this machine it was most of the
    /// time from `resume()` to the pipeline). With `hosts`, the others keep the `URLCache`.
    ///
    /// - Throws: ``RecallURLProtocolError/loop`` when `pipeline` sends through a session that
    ///   lists a `RecallURLProtocol` class; ``RecallURLProtocolError/routeConflict`` (above).
    @discardableResult
    public func sendThroughRecall(
        _ pipeline: Pipeline, hosts: [String]? = nil,
        protocolClass: RecallURLProtocol.Type = RecallURLProtocol.self
    ) throws -> UInt64 {
        let id = try protocolClass.routes.add(pipeline, hosts: hosts)
        let others = (protocolClasses ?? []).filter { $0 != protocolClass }
        protocolClasses = [protocolClass] + others
        if hosts == nil { urlCache = nil }
        return id
    }
}

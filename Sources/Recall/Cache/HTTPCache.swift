import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A private HTTP cache (RFC 9111, with RFC 5861's `stale-while-revalidate` and
/// `stale-if-error`) as a ``ServiceHook``.
///
/// ```swift
/// let cache = HTTPCache(storage: TieredStorage(memory: MemoryStorage(), lower: try DiskStorage(directory: dir)))
/// let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache], retrierFactory: .exponentialBackoff())
/// ```
///
/// - `onSchedule` answers fresh entries (source `.cache`), serves stale ones where allowed
///   (`.stale`), or adds validators (`If-None-Match`, `If-Modified-Since`) and lets the request go on.
/// - `onSuccess` stores cacheable responses, merges a 304 into the stored entry (`.revalidated`),
///   serves stale on a 5xx when `stale-if-error` allows, and invalidates on unsafe methods.
/// - `onFailure` serves stale when `stale-if-error` allows (also after the retrier gave up),
///   and answers 504 for a `must-revalidate` entry whose origin cannot be reached.
/// - Concurrent misses on one key share one origin request (coalescing).
///
/// Place it outside the retrier (it is a hook, so it is) and outside hooks that change
/// responses; see docs/caching.md for every rule and option.
public final class HTTPCache: ServiceHook {
    /// Where entries live.
    public let storage: any CacheStorage
    /// The settings.
    public let configuration: CacheConfiguration
    /// The RFC rules, as pure functions.
    public let rules: CacheRules
    private let now: @Sendable () -> Date
    private let counters = Locked(CacheStatistics())
    private let flights = Locked<[String: InFlight]>([:])
    private let refreshes = Locked<[String: InFlight]>([:])
    private let memo = CanonicalURLMemo()

    /// Creates a cache over `storage`; `now` gives the current date (inject it in tests).
    public init(storage: any CacheStorage = MemoryStorage(), configuration: CacheConfiguration = CacheConfiguration(),
                now: @escaping @Sendable () -> Date = { Date() }) {
        self.storage = storage
        self.configuration = configuration
        self.rules = CacheRules(configuration: configuration)
        self.now = now
    }

    /// What the cache did so far, with the storage's counters.
    public var statistics: CacheStatistics {
        var statistics = counters.withLock { $0 }
        statistics.storage = storage.statistics
        return statistics
    }

    /// Waits until every background refresh (`stale-while-revalidate`) started so far has finished.
    public func waitForBackgroundRefreshes() async {
        for flight in refreshes.withLock({ Array($0.values) }) { await flight.wait() }
    }

    /// The storage key of `request`: namespace, canonical URL, configured header fields and a
    /// hash of the credential fields; `nil` when the request cannot be cached.
    public func key(for request: URLRequest) -> String? {
        guard var key = configuration.keyPolicy.key(for: request, memo: memo) else { return nil }
        let credentials = configuration.credentialFields.compactMap { name in
            request.value(forHTTPHeaderField: name).map { "\(name.lowercased())=\($0)" }
        }
        if !credentials.isEmpty { key += "\ncredentials: " + SHA256.hex(credentials.joined(separator: "\n")) }
        return configuration.namespace.isEmpty ? key : configuration.namespace + "|" + key
    }

    // MARK: Per-request state

    struct State: Sendable {
        var key: String
        var requestTime: Date
        var candidate: CacheEntry?
        var validating = false
        var callerConditional = false
        var unsafeMethod = false
        var isRefresh = false
        var flightKey: String?
    }

    enum StateKey: ContextKey { typealias Value = State }

    private enum Decision {
        case serve(Response)
        case serveAndRefresh(Response, refresh: URLRequest, entry: CacheEntry, validating: Bool)
        case network(URLRequest, candidate: CacheEntry?, validating: Bool)
        case gatewayTimeout
    }

    private static let unsafeMethods: Set<String> = ["POST", "PUT", "DELETE", "PATCH"]
    private static let conditionalFields = ["If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range"]

    // MARK: Hook events

    /// Answers from cache, or passes the request on (with validators when revalidating).
    public func onSchedule(_ request: URLRequest, context: RequestContext) async throws -> HookAction {
        let method = (request.httpMethod ?? "GET").uppercased()
        func has(_ name: String) -> Bool { request.value(forHTTPHeaderField: name) != nil }
        guard !configuration.bypassFields.contains(where: has), let key = key(for: request) else {
            count { $0.bypassed += 1 }
            return .proceed(request)
        }
        let requestTime = now()
        if Self.unsafeMethods.contains(method) {
            context[StateKey.self] = State(key: key, requestTime: requestTime, unsafeMethod: true)
            count { $0.bypassed += 1 }
            return .proceed(request)
        }
        guard method == "GET" || method == "HEAD", !has("Range") else {
            count { $0.bypassed += 1 }
            return .proceed(request)
        }
        if Self.conditionalFields.contains(where: has) {
            // The caller's own conditional request: pass it through, freshen on a matching 304.
            context[StateKey.self] = State(key: key, requestTime: requestTime, callerConditional: true)
            count { $0.bypassed += 1 }
            return .proceed(request)
        }

        var decision = await decide(request, key: key, now: requestTime)
        var flightKey: String?
        if case .network = decision, configuration.coalescesRequests {
            let coalescingKey = Self.coalescingKey(key, request)
            let (flight, leader) = flights.withLock { flights -> (InFlight, Bool) in
                if let existing = flights[coalescingKey] { return (existing, false) }
                let flight = InFlight()
                flights[coalescingKey] = flight
                return (flight, true)
            }
            if leader {
                flightKey = coalescingKey
                // Another leader may have stored the entry between our lookup and our registration.
                decision = await decide(request, key: key, now: requestTime)
            } else {
                count { $0.waiting += 1 }
                await flight.wait()
                count { $0.waiting -= 1 }
                try Task.checkCancellation()
                count { $0.coalesced += 1 }
                decision = await decide(request, key: key, now: now())
            }
        }

        switch decision {
        case .serve(let response):
            finishFlight(flightKey)
            return .respond(response)
        case .serveAndRefresh(let response, let refresh, let entry, let validating):
            finishFlight(flightKey)
            let started = refreshes.withLock { refreshes -> Bool in
                guard refreshes[key] == nil else { return false }
                refreshes[key] = InFlight()
                return true
            }
            guard started else { return .respond(response) } // one refresh at a time per key
            context[StateKey.self] = State(key: key, requestTime: requestTime, candidate: entry, validating: validating, isRefresh: true)
            return .respondThenRefresh(response, refresh: refresh)
        case .gatewayTimeout:
            finishFlight(flightKey)
            count { $0.gatewayTimeouts += 1 }
            return .respond(Self.gatewayTimeout(request, reason: "only-if-cached and no usable stored response"))
        case .network(let outgoing, let candidate, let validating):
            if !validating { count { $0.misses += 1 } }
            context[StateKey.self] = State(key: key, requestTime: requestTime, candidate: candidate,
                                           validating: validating, flightKey: flightKey)
            return .proceed(outgoing)
        }
    }

    /// Stores, merges 304s, serves stale on 5xx where allowed, invalidates on unsafe methods.
    public func onSuccess(_ response: Response, for request: URLRequest, context: RequestContext) async throws -> Response {
        guard let state = context[StateKey.self] else { return response }
        defer { finish(state) }
        let receivedAt = now()
        if state.unsafeMethod {
            if (200..<400).contains(response.status) { await invalidate(after: request, response: response) }
            return response
        }
        guard response.source == .network else { return response }
        if state.callerConditional {
            if response.status == 304 { await freshen(key: state.key, request: request, with: response, state: state, at: receivedAt) }
            return response
        }
        if response.status == 304, state.validating, let candidate = state.candidate {
            guard rules.notModified(response, matches: candidate) else {
                await storage.remove(state.key)
                throw CacheError.unmatchedNotModified(request.url)
            }
            let merged = rules.merge(candidate, with: response, requestTime: state.requestTime, responseTime: receivedAt)
            await store(merged, key: state.key)
            if !state.isRefresh { count { $0.revalidated += 1 } }
            return rules.response(from: merged, for: request, now: receivedAt, source: .revalidated)
        }
        if [500, 502, 503, 504].contains(response.status), let candidate = state.candidate,
           rules.allowsStaleIfError(candidate, for: request, now: receivedAt) {
            if !state.isRefresh { count { $0.staleServed[.staleIfError, default: 0] += 1 } }
            return rules.response(from: candidate, for: request, now: receivedAt, source: .stale)
        }
        if state.validating, !state.isRefresh { count { $0.revalidatedChanged += 1 } }
        let facts = CacheEntry.Facts(response.headers)
        if rules.isStorable(response, facts: facts, for: request) {
            let entry = CacheEntry(status: response.status, headers: response.headers, facts: facts, body: response.body,
                                   url: response.url ?? request.url, requestTime: state.requestTime, responseTime: receivedAt,
                                   varyValues: rules.varyValues(for: facts.varyNames, in: request))
            await store(entry, key: state.key)
        } else if state.candidate != nil, response.status < 500, (request.httpMethod ?? "GET").uppercased() == "GET" {
            // A new representation (or its absence) that cannot be stored: the stored one is outdated.
            // A 5xx says nothing about the resource, so the stored response is kept.
            await storage.remove(state.key)
        }
        return response
    }

    /// Serves stale when `stale-if-error` allows; answers 504 for `must-revalidate` entries.
    public func onFailure(_ error: any Error, for request: URLRequest, context: RequestContext) async throws -> Response? {
        guard let state = context[StateKey.self] else { return nil }
        defer { finish(state) }
        guard !(error is CancellationError), let candidate = state.candidate, !state.unsafeMethod else {
            if state.validating, !state.isRefresh { count { $0.misses += 1 } }
            return nil
        }
        let failedAt = now()
        if rules.allowsStaleIfError(candidate, for: request, now: failedAt) {
            if !state.isRefresh { count { $0.staleServed[.staleIfError, default: 0] += 1 } }
            return rules.response(from: candidate, for: request, now: failedAt, source: .stale)
        }
        if state.validating, !state.isRefresh { count { $0.misses += 1 } }
        if candidate.cacheControl.mustRevalidate, !state.isRefresh {
            return Self.gatewayTimeout(request, reason: "must-revalidate and the origin could not be reached: \(error)")
        }
        return nil
    }

    // MARK: Decisions

    private func decide(_ request: URLRequest, key: String, now: Date) async -> Decision {
        let directives = rules.requestDirectives(request)
        let onlyIfCached = directives.onlyIfCached || request.cachePolicy == .returnCacheDataDontLoad
        guard let entry = await candidate(for: request, key: key) else {
            return onlyIfCached ? .gatewayTimeout : .network(request, candidate: nil, validating: false)
        }
        switch rules.use(of: entry, for: request, directives: directives, now: now) {
        case .fresh:
            count { $0.hits += 1 }
            return .serve(rules.response(from: entry, for: request, now: now, source: .cache))
        case .stale(let reason):
            count { $0.staleServed[reason, default: 0] += 1 }
            return .serve(rules.response(from: entry, for: request, now: now, source: .stale))
        case .staleWhileRevalidate:
            count { $0.staleServed[.staleWhileRevalidate, default: 0] += 1 }
            let stale = rules.response(from: entry, for: request, now: now, source: .stale)
            let conditional = rules.conditionalRequest(request, for: entry)
            var refresh = conditional ?? request
            refresh.httpMethod = "GET"
            return .serveAndRefresh(stale, refresh: refresh, entry: entry, validating: conditional != nil)
        case .validate:
            if onlyIfCached { return .gatewayTimeout }
            if let conditional = rules.conditionalRequest(request, for: entry) {
                return .network(conditional, candidate: entry, validating: true)
            }
            return .network(request, candidate: entry, validating: false)
        }
    }

    /// The stored variant of `key` matching `request`'s `Vary` fields.
    private func candidate(for request: URLRequest, key: String) async -> CacheEntry? {
        // Storages compare keys too; checking here keeps the guarantee for any storage a user plugs in.
        guard let record = await storage.record(for: key), record.key == key else { return nil }
        return record.variants.first { rules.varyMatches($0, request) }
    }

    // MARK: Writing

    private func store(_ entry: CacheEntry, key: String) async {
        // An entry without Vary answers every request for the key: older variants are unreachable,
        // so the record is just this entry (and the miss path saves a storage read).
        let existing = entry.facts.varyNames.isEmpty ? [] : await storage.record(for: key)?.variants ?? []
        let variants = [entry] + existing.filter { $0.varyValues != entry.varyValues }
        await storage.store(CacheRecord(key: key, variants: Array(variants.prefix(max(1, configuration.maxVariants)))))
        count { $0.stores += 1 }
    }

    private func freshen(key: String, request: URLRequest, with response: Response, state: State, at date: Date) async {
        guard let entry = await candidate(for: request, key: key), rules.notModified(response, matches: entry),
              response.headers["ETag"] != nil || response.headers["Last-Modified"] != nil else { return }
        await store(rules.merge(entry, with: response, requestTime: state.requestTime, responseTime: date), key: key)
    }

    private func invalidate(after request: URLRequest, response: Response) async {
        guard let url = request.url else { return }
        var targets = [url]
        for name in ["Location", "Content-Location"] {
            guard let value = response.headers[name], let target = URL(string: value, relativeTo: url)?.absoluteURL,
                  target.scheme?.lowercased() == url.scheme?.lowercased(), target.host?.lowercased() == url.host?.lowercased(),
                  target.port == url.port else { continue }
            targets.append(target)
        }
        for target in targets {
            var lookup = request
            lookup.url = target
            lookup.httpMethod = "GET"
            guard let key = key(for: lookup) else { continue }
            if await storage.record(for: key) != nil { count { $0.invalidations += 1 } }
            await storage.remove(key)
        }
    }

    // MARK: Helpers

    private func finish(_ state: State) {
        finishFlight(state.flightKey)
        if state.isRefresh { refreshes.withLock { $0.removeValue(forKey: state.key) }?.finish() }
    }

    private func finishFlight(_ key: String?) {
        guard let key else { return }
        flights.withLock { $0.removeValue(forKey: key) }?.finish()
    }

    private func count(_ update: (inout CacheStatistics) -> Void) {
        counters.withLock { update(&$0) }
    }

    /// Requests coalesce only when they also carry the same header fields, so a response that
    /// varies on any of them is never handed to a request it was not made for.
    private static func coalescingKey(_ key: String, _ request: URLRequest) -> String {
        guard let fields = request.allHTTPHeaderFields, !fields.isEmpty else { return key }
        var result = key
        for (name, value) in fields.sorted(by: { $0.key.lowercased() < $1.key.lowercased() }) {
            result += "\n" + name.lowercased() + ": " + value
        }
        return result
    }

    static func gatewayTimeout(_ request: URLRequest, reason: String) -> Response {
        var response = Response.text("504 Gateway Timeout: \(reason)", status: 504, url: request.url)
        response.source = .cache
        response.headers["Cache-Control"] = "no-store"
        return response
    }
}

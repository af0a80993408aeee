import Foundation
import Recall
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Parts of a miss path, for the tools that find where a miss spends (MissOverhead,
// ConcurrentLoad): hooks that do a little of a cache's work, down to nothing.

/// A hook that does nothing, asynchronously: the price of the hook machinery alone.
public struct NoopHook: ServiceHook {
    public init() {}
}

/// Ways to key a request, from the least work to the cache's own.
public enum Keying {
    /// The URL's text as it is (not a cache key anyone should use: equivalent URLs differ).
    public static let urlText: @Sendable (URLRequest) -> String? = { $0.url?.absoluteString }
    /// The canonical URL alone (``CacheKeyPolicy/canonicalURL(_:)``).
    public static let canonical: @Sendable (URLRequest) -> String? = { [policy = CacheKeyPolicy()] in $0.url.flatMap(policy.canonicalURL) }
    /// The cache's key (``HTTPCache/key(for:)``): canonical URL, secrets redacted, memo.
    public static let cacheKey: @Sendable (URLRequest) -> String? = { [cache = HTTPCache(storage: MemoryStorage())] in cache.key(for: $0) }
}

/// The least a cache can do: a key (by default the cache's own), one locked table read, and
/// after the answer one locked table write (emptied when it holds 10,000). No HTTP rules, no
/// coalescing, no ordering of writes, no eviction policy: not a cache anyone should use, but a
/// floor for what any cache costs here.
public final class MinimalCache: ServiceHook, @unchecked Sendable {
    private let key: @Sendable (URLRequest) -> String?
    private let lock = NSLock()
    private var table: [String: RecallResponse] = [:]
    /// As many responses as ``MemoryStorage``'s default count limit.
    static let countLimit = 10_000
    /// Puts `value` into `table` under `key`, emptying it first when it holds ``countLimit``
    /// (bounded as a cache is, by emptying: a table that only grew would measure page faults);
    /// answers what it emptied, for the caller to release outside its lock.
    static func insert<Value>(_ value: Value, for key: String, into table: inout [String: Value]) -> [String: Value] {
        var dropped: [String: Value] = [:]
        if table.count >= countLimit { swap(&dropped, &table) }
        table[key] = value
        return dropped
    }
    public init(key: @escaping @Sendable (URLRequest) -> String? = Keying.cacheKey) { self.key = key }
    public func decide(_ request: URLRequest, context: RecallContext) -> HookDecision {
        .act(action(for: request))
    }
    public func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
        action(for: request)
    }
    private func action(for request: URLRequest) -> HookAction {
        guard let key = key(request) else { return .proceed(request) }
        if let found = lock.withLock({ table[key] }) { return .respond(found) }
        return .proceed(request)
    }
    public func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext) async throws -> RecallResponse {
        if let key = key(request) {
            let dropped = lock.withLock { Self.insert(response, for: key, into: &table) }
            _ = dropped  // released outside the lock
        }
        return response
    }
}

/// The least a cache that follows RFC 9111's storing rules does on a miss, over
/// ``MinimalCache``'s key and table: before the network, a `GET` without `Range` and without a
/// request `no-store` is looked up (a stored entry served while younger than its `max-age`), and
/// a miss passed on with a follow-up that carries its key and request time (RFC 9111 §4.2.3 ages
/// a response from the time its request was sent); after it, the response made a ``CacheEntry``
/// (which parses its caching fields: `Cache-Control`, `Date`, `Age`, `Expires`, `Last-Modified`,
/// `Vary`, `ETag`) and stored when its status is cacheable by default (RFC 9110 §15.1, without
/// `206`), its directives allow it (`no-store`, `Vary: *`) and it has a lifetime (`max-age` or
/// `Expires`).
///
/// Left out, as no miss-and-store needs them: serving by `Age`, `Date`, `Expires` or the request's
/// freshness directives, `Vary` matching (the request's values are not recorded), validation,
/// invalidation. Left out as the rest of a cache's work: partitions, coalescing, ordered writes, an
/// eviction policy, statistics. A floor for an RFC 9111 cache's miss here, to tell the RFC's own
/// work from the rest of `HTTPCache`'s (issue #55).
public final class RFCFloorCache: ServiceHook, @unchecked Sendable {
    private let key: @Sendable (URLRequest) -> String?
    private let lock = NSLock()
    private var table: [String: CacheEntry] = [:]
    private var stores = 0
    /// The statuses RFC 9110 §15.1 calls heuristically cacheable, but `206` (a piece is not the
    /// representation; a response stored with an explicit lifetime needs no more here).
    static let cacheable: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]
    public init(key: @escaping @Sendable (URLRequest) -> String? = Keying.cacheKey) { self.key = key }
    /// How many responses it stored (a run checks that the floor did store).
    public var storeCount: Int { lock.withLock { stores } }
    public func decide(_ request: URLRequest, context: RecallContext) -> HookDecision {
        .act(action(for: request))
    }
    public func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
        action(for: request)
    }
    /// Whether `request` is looked up: a `GET` without `Range` and without a request `no-store`.
    static func looksUp(_ request: URLRequest) -> Bool {
        request.httpMethod ?? "GET" == "GET" && request.value(forHTTPHeaderField: "Range") == nil
            && !CacheDirectives(request.value(forHTTPHeaderField: "Cache-Control")).noStore
    }
    /// `found` as an answer, when it is younger than its `max-age` at `now`.
    static func answer(_ found: CacheEntry?, at now: Date) -> RecallResponse? {
        guard let found, let maxAge = found.cacheControl.maxAge, now.timeIntervalSince(found.requestTime) < Double(maxAge) else {
            return nil
        }
        return RecallResponse(status: found.status, headers: found.headers, body: found.body, url: found.url, source: .cache)
    }
    /// `response` (to a request sent at `requestTime`) made an entry, when the storing rules allow
    /// storing it.
    static func storable(_ response: RecallResponse, requestTime: Date) -> CacheEntry? {
        guard cacheable.contains(response.status), let body = response.body.bytes else { return nil }
        let entry = CacheEntry(
            status: response.status, headers: response.headers, body: body, url: response.url, requestTime: requestTime,
            responseTime: Date())
        let directives = entry.cacheControl
        guard !directives.noStore, !entry.headers.values(for: "Vary").contains(where: { $0.contains("*") }),
            (directives.maxAge ?? 0) > 0 || !entry.headers.values(for: "Expires").isEmpty
        else { return nil }
        return entry
    }
    private func action(for request: URLRequest) -> HookAction {
        guard Self.looksUp(request), let key = key(request) else { return .proceed(request) }
        let now = Date()
        if let answer = Self.answer(lock.withLock({ table[key] }), at: now) { return .respond(answer) }
        return .proceedThen(
            request,
            HookFollowUp { [self] response, _, _ in
                store(response, key: key, requestTime: now)
                return response
            })
    }
    /// Stores `response` under `key` when the storing rules allow it.
    private func store(_ response: RecallResponse, key: String, requestTime: Date) {
        guard let entry = Self.storable(response, requestTime: requestTime) else { return }
        let dropped = lock.withLock { () -> [String: CacheEntry] in
            stores += 1
            return MinimalCache.insert(entry, for: key, into: &table)
        }
        _ = dropped  // released outside the lock
    }
}

/// Everything a lone miss of ``HTTPCache`` must do, fused into one hook with nothing between
/// its parts: ``RFCFloorCache``'s rules, over a real ``MemoryStorage`` (its eviction policy and
/// per-core copies; read without suspending, stored as `HTTPCache` stores), with what sharing a
/// miss costs a request that has nobody to share it with (a flight taken and ended under a lock),
/// the miss's and the store's events in the request's context and the cache's counts. Left out:
/// partitions and the credentials in scope, `Vary`, validation, invalidation and the ordering of
/// writes against it, streaming, the evictions' events. What a miss could cost with the cache's
/// parts but none of its orchestration (the look-up's outcome, the strategy's decisions as
/// values, the request's state): how far a fused path could go (issue #55).
public final class FusedFloorCache: ServiceHook, @unchecked Sendable {
    private let key: @Sendable (URLRequest) -> String?
    private let storage = MemoryStorage()
    private let lock = NSLock()
    private var flights: Set<String> = []
    private var misses = 0, stores = 0
    public init(key: @escaping @Sendable (URLRequest) -> String? = Keying.cacheKey) { self.key = key }
    /// How many responses it stored (a run checks that the floor did store).
    public var storeCount: Int { lock.withLock { stores } }
    /// How many requests missed.
    public var missCount: Int { lock.withLock { misses } }
    public func decide(_ request: URLRequest, context: RecallContext) -> HookDecision {
        .act(action(for: request, context: context))
    }
    public func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
        action(for: request, context: context)
    }
    private func action(for request: URLRequest, context: RecallContext) -> HookAction {
        guard RFCFloorCache.looksUp(request), let key = key(request) else { return .proceed(request) }
        let now = Date()
        if let answer = RFCFloorCache.answer(storage.recordWithoutSuspending(for: key)?.variants.first, at: now) {
            return .respond(answer)
        }
        // The flight a follower would wait for; a lone miss takes it and ends it.
        let leads = lock.withLock {
            misses += 1
            return flights.insert(key).inserted
        }
        context.record(.cache(.miss))
        /// Ends the flight taken above.
        @Sendable func land() { if leads { _ = lock.withLock { flights.remove(key) } } }
        return .proceedThen(
            request,
            HookFollowUp(
                onSuccess: { [self] response, _, context in
                    await store(response, key: key, requestTime: now, context: context)
                    land()
                    return response
                },
                onFailure: { _, _, _ in
                    land()
                    return nil
                }))
    }
    /// Stores `response` under `key` when the storing rules allow it, and records the store.
    private func store(_ response: RecallResponse, key: String, requestTime: Date, context: RecallContext) async {
        guard let entry = RFCFloorCache.storable(response, requestTime: requestTime) else { return }
        await storage.store(CacheRecord(key: key, variants: [entry]), expires: nil)
        lock.withLock { stores += 1 }
        context.record(.cache(.stored))
    }
}

/// Every order of `items` (six for three): sides measured in rounds go through all of them, so
/// that none always runs first, last or between the same two.
public func permutations<T>(_ items: [T]) -> [[T]] {
    guard items.count > 1 else { return [items] }
    return items.indices.flatMap { index in
        var rest = items
        let first = rest.remove(at: index)
        return permutations(rest).map { [first] + $0 }
    }
}

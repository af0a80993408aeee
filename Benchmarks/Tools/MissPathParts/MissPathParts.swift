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
            // (Bounded as a cache is, by emptying: a table that only grew would measure page faults.)
            let dropped = lock.withLock { () -> [String: RecallResponse] in
                var dropped: [String: RecallResponse] = [:]
                if table.count >= Self.countLimit { swap(&dropped, &table) }
                table[key] = response
                return dropped
            }
            _ = dropped  // released outside the lock
        }
        return response
    }
}

/// The least a cache that follows RFC 9111's storing rules does on a miss, over
/// ``MinimalCache``'s key and table: before the network, the request's `Cache-Control` read (a
/// `no-store` request is neither looked up nor stored) and a stored entry served only while
/// fresh; after it, the response made a ``CacheEntry`` (which parses its caching fields:
/// `Cache-Control`, `Date`, `Age`, `Expires`, `Last-Modified`, `Vary`, `ETag`) and stored when its
/// status is cacheable by default, its directives allow it and it has a lifetime (`max-age` or
/// `Expires`). No coalescing, no ordered writes, no partitions, no eviction policy, no
/// statistics, no validation: a floor for any RFC 9111 cache here, to tell the RFC's own work
/// on a miss from the rest of `HTTPCache`'s (issue #55).
public final class RFCFloorCache: ServiceHook, @unchecked Sendable {
    private let key: @Sendable (URLRequest) -> String?
    private let lock = NSLock()
    private var table: [String: CacheEntry] = [:]
    /// The statuses RFC 9110 §15.1 calls heuristically cacheable (a response stored with an
    /// explicit lifetime needs no more here).
    private static let cacheable: Set<Int> = [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]
    public init(key: @escaping @Sendable (URLRequest) -> String? = Keying.cacheKey) { self.key = key }
    /// How many entries the table holds (a run checks that the floor did store).
    public var count: Int { lock.withLock { table.count } }
    public func decide(_ request: URLRequest, context: RecallContext) -> HookDecision {
        .act(action(for: request))
    }
    public func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
        action(for: request)
    }
    private func action(for request: URLRequest) -> HookAction {
        guard !CacheDirectives(request.value(forHTTPHeaderField: "Cache-Control")).noStore, let key = key(request),
            let found = lock.withLock({ table[key] })
        else { return .proceed(request) }
        // Fresh while younger than its max-age (the floor keeps no other lifetime).
        let age = Date().timeIntervalSince(found.responseTime)
        guard let maxAge = found.cacheControl.maxAge, age < Double(maxAge) else { return .proceed(request) }
        return .respond(RecallResponse(status: found.status, headers: found.headers, body: found.body, url: found.url, source: .cache))
    }
    public func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext) async throws -> RecallResponse {
        guard Self.cacheable.contains(response.status), let body = response.body.bytes,
            !CacheDirectives(request.value(forHTTPHeaderField: "Cache-Control")).noStore, let key = key(request)
        else { return response }
        let now = Date()
        let entry = CacheEntry(
            status: response.status, headers: response.headers, body: body, url: response.url, requestTime: now, responseTime: now)
        let directives = entry.cacheControl
        guard !directives.noStore, (directives.maxAge ?? 0) > 0 || !entry.headers.values(for: "Expires").isEmpty else { return response }
        let dropped = lock.withLock { () -> [String: CacheEntry] in
            var dropped: [String: CacheEntry] = [:]
            if table.count >= MinimalCache.countLimit { swap(&dropped, &table) }
            table[key] = entry
            return dropped
        }
        _ = dropped  // released outside the lock
        return response
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

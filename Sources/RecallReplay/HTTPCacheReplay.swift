import Foundation
import Recall
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Replays a HAR capture through Recall's real `HTTPCache` and a pipeline, as if the
/// application that made the capture had used Recall: each entry becomes a request at the
/// capture's time (a clock that follows `startedDateTime`), answered, when the cache asks, by the
/// response the capture recorded. The result obeys the responses' real `Cache-Control`, `ETag`,
/// `Last-Modified` and `Vary`.
///
/// Validators the capturing client added from its own cache (`If-None-Match`,
/// `If-Modified-Since` and the like) are removed from the requests: Recall adds its own.
public enum HTTPCacheReplay {
    /// Request fields that come from the capturing client's cache, not from the application.
    static let clientValidatorFields = ["If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range"]

    /// Replays `entries` (in the order given) through a fresh `HTTPCache` over `storage`.
    ///
    /// Bodies are carried as their sizes (an empty body and a size field), never made, so the
    /// storage holds the responses' fields only: the default one, bounded by 1 GiB and 2^20
    /// records, in effect keeps every response a cache may store (eviction is what
    /// ``EvictionComparison`` measures). Range requests are therefore not replayed (a cache
    /// cannot cut a range from a size): they are counted in ``HTTPReplayReport/rangeRequests``.
    public static func run(
        _ entries: [HAREntry], storage: any CacheStorage = MemoryStorage(byteLimit: 1 << 30, countLimit: 1 << 20),
        configuration: CacheConfiguration = CacheConfiguration()
    ) async -> HTTPReplayReport {
        let clock = Locked(Date(timeIntervalSince1970: 0))
        let cache = HTTPCache(storage: storage, configuration: configuration, now: { clock.withLock { $0 } })
        let origin = CaptureOrigin(for: entries)
        let pipeline = Pipeline(transport: origin, hooks: [cache])
        var report = HTTPReplayReport()
        report.entries = entries.count
        for entry in entries {
            guard entry.status > 0, let request = request(for: entry) else {
                report.skipped += 1
                continue
            }
            if entry.status == 206 || request.value(forHTTPHeaderField: "Range") != nil {
                report.rangeRequests += 1
                continue
            }
            report.replayed += 1
            switch entry.clientCache {
            case .memory: report.clientMemoryHits += 1
            case .disk: report.clientDiskHits += 1
            case .network: if entry.status == 304 { report.clientRevalidated += 1 }
            }
            clock.withLock { $0 = entry.started }
            origin.answer(with: entry)
            if let response = try? await pipeline.send(request) {
                report.bodyBytes += CaptureOrigin.bodySize(of: response, method: entry.method)
            }
        }
        await cache.flush()  // the last misses' stores land after their answers (write-behind)
        report.cache = cache.statistics
        (report.originRequests, report.originBodyBytes) = origin.counts
        return report
    }

    /// The request an application would have sent for `entry`; nil for URLs that are not http(s).
    static func request(for entry: HAREntry) -> URLRequest? {
        guard let url = URL(string: entry.url), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            url.host?.isEmpty == false
        else { return nil }
        var request = URLRequest(url: url)
        request.httpMethod = entry.method
        for field in entry.requestHeaders
        where !clientValidatorFields.contains(where: { HeaderFields.namesEqual($0, field.name) }) {
            request.addValue(field.value, forHTTPHeaderField: field.name)
        }
        return request
    }
}

import Foundation
import Recall
import RecallReplay
import Testing

@Suite("Replay: a HAR through the real HTTPCache")
struct HTTPCacheReplayTests {
    @Test("follows the capture's clock, validators and methods: hit, revalidation, no-store, invalidation")
    func scripted() async throws {
        let etag = [("Cache-Control", "max-age=60"), ("ETag", #"\"a1\""#)]
        let path = ReplayFixtures.file(
            ReplayFixtures.har([
                ReplayFixtures.entry(0, "GET", "https://o.test/a", response: etag, size: 100),  // miss, stored
                ReplayFixtures.entry(10, "GET", "https://o.test/a", response: etag, size: 100),  // fresh: hit
                ReplayFixtures.entry(
                    70, "GET", "https://o.test/a", status: 304, response: etag,  // stale: Recall revalidates, 304
                    request: [("If-None-Match", #"\"a1\""#)], size: 0, extra: #""_fromCache": "disk","#),
                ReplayFixtures.entry(71, "GET", "https://o.test/b", response: [("Cache-Control", "no-store")], size: 7),
                ReplayFixtures.entry(72, "GET", "https://o.test/b", response: [("Cache-Control", "no-store")], size: 7),
                ReplayFixtures.entry(73, "POST", "https://o.test/a", status: 201, size: 0),  // invalidates /a
                ReplayFixtures.entry(74, "GET", "https://o.test/a", response: etag, size: 100),  // miss again
                ReplayFixtures.entry(75, "GET", "data:text/plain,hi", size: 2),  // skipped
                ReplayFixtures.entry(76, "GET", "https://o.test/c", status: 0, size: 0)  // failed in the capture: skipped
            ]))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let report = await HTTPCacheReplay.run(try HARReader.read(path: path))
        #expect(report.entries == 9)
        #expect(report.replayed == 7)
        #expect(report.skipped == 2)
        #expect(report.cache.hits == 1)
        #expect(report.cache.revalidated == 1)
        #expect(report.cache.misses == 4)
        #expect(report.cache.bypassed == 1)
        #expect(report.originRequests == 6)
        #expect(report.originRequestsSaved == 1)
        #expect(report.bodyBytes == 100 * 4 + 7 * 2)
        #expect(report.originBodyBytes == 100 * 2 + 7 * 2)  // the 304 sent no body
        #expect(report.bytesSaved == 200)
        #expect(report.clientDiskHits == 1)
        #expect(report.clientRevalidated == 0)  // the 304 came from the client's disk cache entry
        #expect(abs(report.cache.hitRatio - 2.0 / 6.0) < 1e-9)
    }

    @Test("the sample capture: what Recall would have saved a cacheless client")
    func sample() async throws {
        let entries = try HARReader.read(path: ReplayFixtures.sampleCapture)
        let report = await HTTPCacheReplay.run(entries)
        #expect(report.replayed == 228)
        // Each request ends as exactly one outcome, and only misses, revalidations and
        // unsafe methods reach the origin.
        #expect(
            report.cache.hits + report.cache.stale + report.cache.revalidated + report.cache.revalidatedChanged + report.cache.misses + report.cache.bypassed
                == 228)
        #expect(report.originRequests == report.cache.misses + report.cache.revalidated + report.cache.revalidatedChanged + report.cache.bypassed)
        // The capture's shape: no-store searches always miss (30), no-cache news revalidates
        // (29 times after the first), the feed goes stale every 2 s and revalidates, the
        // immutable script is fetched once. The replay is deterministic: the clock follows the capture.
        #expect(report.cache.hits == 137)
        #expect(report.cache.revalidated == 37)
        #expect(report.cache.misses == 51)
        #expect(report.cache.bypassed == 3)
        #expect(report.bytesSaved > report.originBodyBytes)
        #expect(report.clientMemoryHits + report.clientDiskHits + report.clientRevalidated == 0)  // a cacheless client
    }

    @Test("the eviction comparison of a capture: a cache as large as the working set hits every repeat, with every policy and Belady")
    func evictionComparison() throws {
        let entries = try HARReader.read(path: ReplayFixtures.sampleCapture)
        let trace = Trace.objects(of: entries, name: "sample")
        #expect(trace.requests.count == entries.filter { $0.method == "GET" && [200, 203, 304].contains($0.status) }.count)
        let everything = EvictionComparison.CacheSize(label: "all", bytes: trace.workingSetBytes)
        let comparison = EvictionComparison(trace: trace, sizes: [everything], evictions: [.lru])
        let repeats = trace.requests.count - trace.objectCount
        #expect(comparison.counts(for: "LRU")?.first?.objectHits == repeats)
        #expect(comparison.counts(for: "Belady")?.first?.objectHits == repeats)
        #expect(comparison.svg.hasPrefix("<svg"))
        #expect(comparison.svg.contains("LRU"))
        #expect(comparison.markdown.split(separator: "\n").count == 2 + 2)
    }
}

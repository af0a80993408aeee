import Foundation
@testable import RecallReplay
import Testing

/// Review point 7: what a capture claims costs no memory. Bodies are carried as their sizes;
/// the eviction replay's stored bodies are views of zero bytes no page of which is resident.
@Suite("recall replay: memory follows the file, not the sizes it claims", .timeLimit(.minutes(3)))
struct ReplayMemoryTests {
    @Test("a 2 KB capture whose entries claim 2 GB bodies replays in small memory, and counts the bytes it claims")
    func claimedBodies() async throws {
        let claimed = 2_000_000_000
        let entries = (0..<4).map { index in
            ReplayFixtures.entry(Double(index), "GET", "https://x.test/big/\(index % 2)", response: [("Cache-Control", "max-age=600")], size: claimed)
        }
        let path = ReplayFixtures.file(ReplayFixtures.har(entries))
        defer { unlink(path) }
        let result = try await ChildProcess.run("recall", ["replay", path], deadline: .seconds(120))
        #expect(result.status == 0, "\(result.error)")
        // Each URL is fetched once and answered from the cache once: 2 × 2 GB from the origin, of 4 × 2 GB.
        #expect(result.output.contains("hits 2,"), "\(result.output.prefix(600))")
        #expect(result.output.contains("body bytes from the origin 3.7 GB of 7.5 GB"), "\(result.output.prefix(600))")
        // A debug build needs some 40 MB for this; before, 3.9 GB.
        #expect(result.peakResidentBytes > 0 && result.peakResidentBytes < 256 << 20, "peak resident \(result.peakResidentBytes >> 20) MB")
    }

    @Test("an access log claiming 4 GiB responses replays in small memory")
    func claimedLogSizes() async throws {
        let lines = (0..<2_000).map { #"10.0.0.1 - - [23/Nov/2026:10:00:00 +0000] "GET /big/\#($0 % 500) HTTP/1.1" 200 4294967296"# }
        let path = ReplayFixtures.file(lines.joined(separator: "\n") + "\n", suffix: ".log")
        defer { unlink(path) }
        let result = try await ChildProcess.run("recall", ["replay", path, "--sizes", "50%,100%"], deadline: .seconds(120))
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("| 100.0 % | LRU | 75.0 % |"), "\(result.output)")
        #expect(result.peakResidentBytes > 0 && result.peakResidentBytes < 256 << 20, "peak resident \(result.peakResidentBytes >> 20) MB")
    }

    @Test("range requests are counted, not replayed: a cache cannot cut a range out of a size")
    func rangeRequests() async throws {
        let path = ReplayFixtures.file(
            ReplayFixtures.har([
                ReplayFixtures.entry(0, "GET", "https://m.test/v", response: [("Cache-Control", "max-age=600")], size: 1_000),
                ReplayFixtures.entry(
                    1, "GET", "https://m.test/v", status: 206, response: [("Content-Range", "bytes 0-99/1000")],
                    request: [("Range", "bytes=0-99")], size: 100),
                ReplayFixtures.entry(2, "GET", "https://m.test/v", request: [("range", "bytes=0-")], size: 1_000),
                ReplayFixtures.entry(3, "GET", "https://m.test/v", response: [("Cache-Control", "max-age=600")], size: 1_000)
            ]))
        defer { unlink(path) }
        let report = await HTTPCacheReplay.run(try HARReader.read(path: path))
        #expect(report.rangeRequests == 2)
        #expect(report.replayed == 2)
        #expect(report.cache.hits == 1)
        #expect(report.bodyBytes == 2_000)
        #expect(report.originBodyBytes == 1_000)
        let text = try await TrafficReplay.report(path: path)
        #expect(text.contains("4 entries (2 replayed; 0 skipped: not http(s), or no response; 2 range requests not replayed"), "\(text)")
    }

    @Test("stored bodies of any traced size are zero bytes that share one mapping")
    func zeroBytes() {
        let huge = ZeroBytes.data(count: 3 << 30)
        #expect(huge.count == 3 << 30)
        #expect(huge.prefix(4096).allSatisfy { $0 == 0 })
        #expect(ZeroBytes.data(count: 1 << 40).count == ZeroBytes.capacity)
        #expect(ZeroBytes.data(count: -1).isEmpty)
        #expect(EvictionReplay.entry(size: 5 << 30).body.count == ZeroBytes.capacity)
    }

    @Test("Belady, its heap rebuilt as hits leave stale entries behind, keeps the counts of a direct implementation")
    func beladyMatchesDirect() {
        var random = SystemRandomNumberGenerator()
        for round in 0..<4 {
            let objects = [7, 50, 300, 2_000][round]
            let sizes = (0..<objects).map { _ in Int.random(in: 1...5_000, using: &random) }
            let requests = (0..<20_000).map { _ in Int32(Int.random(in: 0..<objects, using: &random)) }
            let trace = Trace(name: "random", requests: requests, sizes: sizes)
            let capacity = sizes.reduce(0, +) / 4
            #expect(EvictionReplay.belady(trace, capacity: capacity) == Self.directBelady(trace, capacity: capacity), "round \(round)")
        }
    }

    /// Belady's heuristic as stated: admit on a miss, then evict the held object whose next use
    /// is furthest (never used again first; the lowest number among those) until the bytes fit.
    private static func directBelady(_ trace: Trace, capacity: Int) -> HitCount {
        let requests = trace.requests.map(Int.init)
        var nextUse = [Int](repeating: Int.max, count: requests.count)
        var last = [Int: Int]()
        for index in requests.indices.reversed() {
            nextUse[index] = last[requests[index]] ?? Int.max
            last[requests[index]] = index
        }
        var held: [Int: Int] = [:]  // object → its next use
        var used = 0
        var count = HitCount()
        for (index, id) in requests.enumerated() {
            let hit = held[id] != nil
            count.count(hit: hit, size: trace.sizes[id])
            if !hit { used += trace.sizes[id] }
            held[id] = nextUse[index]
            while used > capacity {
                let victim = held.max { $0.value != $1.value ? $0.value < $1.value : $0.key > $1.key }!.key
                held[victim] = nil
                used -= trace.sizes[victim]
            }
        }
        return count
    }
}

import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
@testable import Recall
import RecallTesting
import Testing

/// The cache's writes on their own: a storage, the strategy, and no pipeline.
@Suite("CacheWriter: writes in order per key, never undoing a removal", .timeLimit(.minutes(1)))
struct CacheWriterTests {
    static let t0 = CacheStrategyTests.t0

    struct Fixture {
        let storage = InMemoryByteStore()
        let counts = CacheCounters()
        let locator: CacheLocator
        let writer: CacheWriter

        init() {
            let configuration = CacheConfiguration()
            let partitioner = CachePartitioner(secret: Array(repeating: 7, count: 32), configuration: configuration)
            locator = CacheLocator(configuration: configuration, partitioner: partitioner)
            writer = CacheWriter(
                storage: storage, memory: nil, records: CacheRecordRules(rules: CacheRules(configuration: configuration), partitioner: partitioner),
                counts: counts)
        }

        func location(_ path: String) -> CacheLocator.Location {
            locator.location(of: URLRequest(url: URL(string: "https://origin.test" + path)!))!
        }
    }

    static func entry(_ body: String, partition: String = "", fields: [String: String] = ["Cache-Control": "max-age=60"]) -> CacheEntry {
        var entry = CacheStrategyTests.entry(fields, body: body)
        entry.partition = partition
        return entry
    }

    @Test("a store composes the record over what is stored (other partitions kept), hands the expiry hint, and counts")
    func store() async throws {
        let fixture = Fixture()
        let location = fixture.location("/a")
        let before = fixture.writer.writes
        await fixture.writer.store(Self.entry("alice", partition: "A"), at: location, prior: .unread, since: nil, context: nil)
        await fixture.writer.store(Self.entry("bob", partition: "B"), at: location, prior: .unread, since: nil, context: nil)
        let record = try #require(await fixture.writer.lookup(location.key))
        #expect(record.variants.map { String(decoding: $0.body, as: UTF8.self) } == ["bob", "alice"])
        #expect(
            fixture.storage.expiry(of: location.key) == Self.t0.addingTimeInterval(60 + 604_800),
            "fresh for 60 s, then the offline allowance (7 days)")
        #expect(fixture.writer.writes == before + 2)
        #expect(fixture.counts.statistics.stores == 2)
    }

    @Test("an answer to a request that began before its key's removal is not stored")
    func removalWins() async throws {
        let fixture = Fixture()
        let location = fixture.location("/a")
        let since = fixture.writer.epochs.snapshot(stripe: location.epochStripe)  // the request begins
        await fixture.writer.remove(location.key)  // a write removes the URL
        await fixture.writer.store(Self.entry("old"), at: location, prior: .found(nil), since: since, context: nil)
        #expect(await fixture.writer.lookup(location.key) == nil)
        #expect(fixture.counts.statistics.stores == 0)
        // A request that began after the removal stores.
        let later = fixture.writer.epochs.snapshot(stripe: location.epochStripe)
        await fixture.writer.store(Self.entry("new"), at: location, prior: .found(nil), since: later, context: nil)
        #expect(await fixture.writer.lookup(location.key) != nil)
    }

    @Test("a discard removes only the outdated response; the last one removes the key")
    func discard() async throws {
        let fixture = Fixture()
        let location = fixture.location("/a")
        let alice = Self.entry("alice", partition: "A"), bob = Self.entry("bob", partition: "B")
        await fixture.writer.store(alice, at: location, prior: .unread, since: nil, context: nil)
        await fixture.writer.store(bob, at: location, prior: .unread, since: nil, context: nil)
        await fixture.writer.discard(alice, key: location.key)
        #expect(try #require(await fixture.writer.lookup(location.key)).variants.map(\.partition) == ["B"])
        await fixture.writer.discard(bob, key: location.key)
        #expect(fixture.storage.keys.isEmpty)
    }

    @Test("writes of one key take turns: a store waits while the key is locked, and lands after")
    func order() async throws {
        let fixture = Fixture()
        let location = fixture.location("/a")
        await fixture.writer.keys.lock(location.key)
        let store = Task { await fixture.writer.store(Self.entry("v"), at: location, prior: .found(nil), since: nil, context: nil) }
        while fixture.writer.keys.waiters(for: location.hashedKey) == 0 { await Task.yield() }  // the store waits for the key
        #expect(fixture.storage.keys.isEmpty, "stored while another write held the key")
        fixture.writer.keys.unlock(location.key)
        await store.value
        #expect(fixture.storage.keys == [location.key])
    }

    @Test("an invalidation counts only when something was stored")
    func invalidationCount() async {
        let fixture = Fixture()
        let location = fixture.location("/a")
        await fixture.writer.remove(location.key, counting: true)
        #expect(fixture.counts.statistics.invalidations == 0)
        await fixture.writer.store(Self.entry("v"), at: location, prior: .found(nil), since: nil, context: nil)
        await fixture.writer.remove(location.key, counting: true)
        #expect(fixture.counts.statistics.invalidations == 1)
    }
}

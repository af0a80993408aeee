import Foundation
import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The storage boundary: a backend moves bytes by key, the records are encoded and checked once
/// by `CacheByteStore`, and `TieredStorage` composes any two storages.
@Suite("Storage boundary: bytes by key, tiers of any two", .timeLimit(.minutes(1)))
struct ByteStoreTests {
    @Test("a byte store holds encoded records and gives them back whole")
    func roundTrip() async {
        let store = InMemoryByteStore()
        let record = makeRecord("https://a.test/x", bodySize: 300)
        await store.store(record)
        let bytes = await store.bytes(for: record.key)?.data
        #expect(bytes.map { Array($0.prefix(4)) } == Array("RCL1".utf8), "the store sees encoded bytes, not a record")
        #expect(await store.record(for: record.key) == record)
        #expect(await store.record(for: "https://a.test/other") == nil)
    }

    @Test(
        "bytes that are not a record are a miss, removed and counted as corrupt",
        arguments: [
            Data(), Data("garbage that is not a record".utf8), Data("RCL1".utf8) + Data(repeating: 0xFF, count: 40)
        ])
    func corruptBytes(bytes: Data) async {
        let store = InMemoryByteStore()
        store.put(bytes, for: "k")
        #expect(await store.record(for: "k") == nil)
        #expect(store.keys.isEmpty)
        #expect(store.statistics.corruptRemoved == 1)
    }

    @Test("bad bytes read before a valid record was stored do not take the valid record with them")
    func corruptRemovalKeepsNewerRecord() async {
        let store = InMemoryByteStore()
        store.put(Data("garbage".utf8), for: "k")
        store.holdReads()
        let slowRead = Task { await store.record(for: "k") }  // reads the garbage, delivers it late
        await store.waitForHeldReads(1)  // it has taken the garbage and waits
        let valid = makeRecord("k")
        await store.store(valid)
        store.releaseReads()
        #expect(await slowRead.value == nil)
        #expect(await store.record(for: "k") == valid, "the valid record stored meanwhile was removed as corrupt")
        #expect(store.statistics.corruptRemoved == 0)
    }

    @Test("a torn record (cut anywhere) is a miss, never a wrong answer")
    func tornRecord() async {
        let store = InMemoryByteStore()
        await store.store(makeRecord("k", bodySize: 64))
        let whole = (await store.bytes(for: "k"))!.data
        for cut in stride(from: 0, to: whole.count, by: 7) {
            store.put(whole.prefix(cut), for: "k")
            #expect(await store.record(for: "k") == nil, "cut at \(cut)")
        }
    }

    @Test("another key's record under a key (a hashing backend's collision, a misplaced row) is a miss and is removed")
    func collision() async {
        let store = InMemoryByteStore()
        await store.store(makeRecord("https://a.test/one"))
        store.put((await store.bytes(for: "https://a.test/one"))!.data, for: "https://a.test/two")
        #expect(await store.record(for: "https://a.test/two") == nil)
        #expect(store.keys == ["https://a.test/one"])
        #expect(store.statistics.corruptRemoved == 1)
    }

    @Test("HTTPCache over a byte store: misses, stores, hits, invalidates — end to end over the mock transport")
    func cacheOverByteStore() async throws {
        let store = InMemoryByteStore()
        let mock = MockTransport()
        mock.route("GET", "/r", .text("stored", headers: ["Cache-Control": "max-age=60"]))
        mock.route("POST", "/r", .status(204))
        let pipeline = Pipeline(transport: mock, hooks: [HTTPCache(storage: store)])
        let url = URL(string: "https://origin.test/r")!
        #expect(try await pipeline.send(URLRequest(url: url)).source == .network)
        let hit = try await pipeline.send(URLRequest(url: url))
        #expect(hit.source == .cache && hit.data == Data("stored".utf8))
        #expect(store.keys.count == 1)
        var post = URLRequest(url: url)
        post.httpMethod = "POST"
        _ = try await pipeline.send(post)
        #expect(store.keys.isEmpty, "the POST invalidated the URL in the byte store")
    }

    @Test("TieredStorage of two storages that suspend: reads promote, writes and removals reach both, flush reaches both")
    func anyTwoTiers() async {
        let upper = InMemoryByteStore(), lower = InMemoryByteStore()
        let tiers = TieredStorage(upper: upper, lower: lower)
        let record = makeRecord("k")
        await tiers.store(record)
        #expect(upper.keys == ["k"] && lower.keys == ["k"])
        await upper.removeAll()
        #expect(await tiers.record(for: "k") == record)
        #expect(upper.keys == ["k"], "promoted")
        await tiers.remove("k")
        #expect(upper.keys.isEmpty && lower.keys.isEmpty)
        await tiers.flush()
        #expect(upper.flushes == 1 && lower.flushes == 1)
    }

    @Test("TieredStorage over a suspending upper tier: a read under way never puts back a record removed meanwhile")
    func noResurrection() async throws {
        let upper = InMemoryByteStore()
        let lower = InMemoryByteStore()
        let tiers = TieredStorage(upper: upper, lower: lower)
        let record = makeRecord("k")
        await lower.store(record)  // only below: a read promotes it
        lower.holdReads()
        let slowRead = Task { await tiers.record(for: "k") }
        await lower.waitForHeldReads(1)  // the read is waiting on the lower tier
        await tiers.remove("k")
        lower.releaseReads()
        #expect(await slowRead.value == record, "the read did not start before the removal: nothing was tested")
        #expect(await tiers.record(for: "k") == nil, "the removed record came back")
        #expect(upper.keys.isEmpty)
    }

    @Test("a lower tier changed elsewhere (it tells its subscribers): the upper copy goes, and a memory read under way does not put the old record back")
    func forgetUpperDuringRead() async throws {
        let upper = MemoryStorage()
        let lower = InMemoryByteStore()
        let tiers = TieredStorage(upper: upper, lower: lower)
        let old = makeRecord("k")
        await lower.store(old)
        lower.holdReads()
        let slowRead = Task { await tiers.record(for: "k") }
        await lower.waitForHeldReads(1)  // the read is waiting on the lower tier
        lower.put(makeRecord("k", bodySize: 10).encoded(), for: "k")  // another process replaced it…
        await lower.changeElsewhere("k")  // …and said so
        lower.releaseReads()
        #expect(await slowRead.value == old, "the read did not start before the change: nothing was tested")
        #expect(await upper.record(for: "k") == nil, "the old record was promoted after the change")
        await tiers.store(old)
        #expect(await upper.record(for: "k") == old)
        await lower.changeElsewhere(nil)
        #expect(await upper.record(for: "k") == nil)
    }

    /// A byte store that breaks the memo's contract: one memo for whatever bytes it holds.
    final class OneMemoStore: CacheByteStore {
        let inner = InMemoryByteStore()
        let memo = DecodingMemo()
        func bytes(for key: String) async -> StoredBytes? {
            (await inner.bytes(for: key)).map { StoredBytes($0.data, memo: memo) }
        }
        func write(_ data: Data, for key: String, expires: Date?) async { await inner.write(data, for: key, expires: expires) }
        func removeCorrupt(_ key: String, ifStill data: Data) async { await inner.removeCorrupt(key, ifStill: data) }
        func remove(_ key: String) async { await inner.remove(key) }
        func removeAll() async { await inner.removeAll() }
        var statistics: StorageStatistics { inner.statistics }
    }

    @Test("a memo handed out with bytes of another length is not trusted: they are decoded afresh, never half old, half new")
    func memoNotTrustedBlindly() async throws {
        let store = OneMemoStore()
        let first = makeRecord("k", bodySize: 10), second = makeRecord("k", bodySize: 50)
        await store.store(first)
        #expect(await store.record(for: "k") == first)  // decoded, kept in the memo
        await store.store(second)
        #expect(await store.record(for: "k") == second)
        #expect(store.statistics.corruptRemoved == 0)
    }

    @Test("tiers over tiers hear the bottom tier's changes made elsewhere, each dropping its copy")
    func nestedTiersHearChanges() async {
        let bottom = InMemoryByteStore()
        let middle = MemoryStorage(), top = MemoryStorage()
        let tiers = TieredStorage(upper: top, lower: TieredStorage(upper: middle, lower: bottom))
        let record = makeRecord("k")
        await tiers.store(record)
        #expect(middle.recordNow(for: "k") == record && top.recordNow(for: "k") == record)
        await bottom.changeElsewhere("k")
        #expect(middle.recordNow(for: "k") == nil && top.recordNow(for: "k") == nil)
    }

    @Test("the cache hands each write its expiry hint: when nothing stored can be served any more; none for what can be revalidated")
    func expiryHint() async throws {
        let store = InMemoryByteStore()
        let now = TestNow()
        var configuration = CacheConfiguration()
        configuration.servesStaleWhenDisconnected = false
        let mock = MockTransport()
        mock.route("GET", "/short", .text("a", headers: ["Cache-Control": "max-age=60, stale-while-revalidate=30"]))
        mock.route("GET", "/tagged", .text("b", headers: ["Cache-Control": "max-age=60", "ETag": "\"v1\""]))
        let cache = HTTPCache(storage: store, configuration: configuration, now: { now.value })
        let pipeline = Pipeline(transport: mock, hooks: [cache])
        let short = URL(string: "https://origin.test/short")!, tagged = URL(string: "https://origin.test/tagged")!
        _ = try await pipeline.send(URLRequest(url: short))
        _ = try await pipeline.send(URLRequest(url: tagged))
        await cache.flush()
        let shortKey = try #require(cache.key(for: URLRequest(url: short)))
        let taggedKey = try #require(cache.key(for: URLRequest(url: tagged)))
        let hint = try #require(store.expiry(of: shortKey))
        #expect(hint == now.value.addingTimeInterval(90), "fresh for 60 s, then 30 s of stale-while-revalidate")
        #expect(store.keys.contains(taggedKey) && store.expiry(of: taggedKey) == nil)
    }

    @Test("DiskStorage under a byte-store upper tier: flush through TieredStorage lands the file; reopened, it is read back")
    func diskBelowAnyUpper() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let record = makeRecord("https://a.test/disk", bodySize: 2_000)
        do {
            let tiers = TieredStorage(upper: InMemoryByteStore(), lower: try DiskStorage(directory: directory))
            await tiers.store(record)
            await tiers.flush()
            let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".rce") }
            #expect(files.count == 1)
        }
        let reopened = try DiskStorage(directory: directory)
        #expect(await reopened.record(for: record.key) == record)
    }
}

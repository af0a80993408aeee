import Foundation
@testable import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue #15, target 1: over a memory storage, each core serves the responses it hits again and
/// again from copies of its own. A copy must answer exactly as the storage would, and never once
/// the storage has changed.
@Suite("HTTPCache: per-core copies of hot responses", .timeLimit(.minutes(1)))
struct PerCoreCopiesTests {
    static let fresh: HeaderFields = ["Cache-Control": "max-age=600"]

    /// A harness whose `/a` answers "one", then "new"; `/a` fetched and stored, then hit until
    /// the calling thread's core holds a copy of it (and more, so that both cores likely do).
    private func warmed(storage: MemoryStorage = MemoryStorage(), configuration: CacheConfiguration = CacheConfiguration())
        async throws -> CacheHarness
    {
        let h = CacheHarness(configuration: configuration, storage: storage)
        h.origin("/a", [(200, Self.fresh, "one"), (200, Self.fresh, "new")])
        #expect(try await h.get("/a").source == .network)
        await h.cache.flush()
        try await hitUntilCopied(h, "/a")
        return h
    }

    private func hitUntilCopied(_ h: CacheHarness, _ path: String) async throws {
        var hits = 0
        while (h.cache.copyUsage?.copies ?? 0) == 0, hits < 200 {
            #expect(try await h.get(path).bodyText == "one")
            hits += 1
        }
        try #require((h.cache.copyUsage?.copies ?? 0) > 0, "no copy made after \(hits) hits")
        for _ in 0..<40 { #expect(try await h.get(path).bodyText == "one") }
    }

    @Test("over a memory tier (TieredStorage), hits are copied per core too, and a miss in the tier is found below (#55: a capability, not a type)")
    func tieredStorageGetsTheFastPath() async throws {
        let lower = MemoryStorage()
        let below = CacheHarness(storage: lower)
        below.origin("/a", [(200, Self.fresh, "one")])
        #expect(try await below.get("/a").source == .network)
        await below.cache.flush()
        // A new memory tier over the storage that holds /a: its memory misses, the lower tier answers.
        let tiered = CacheHarness(storage: TieredStorage(upper: MemoryStorage(), lower: lower))
        tiered.origin("/a", [(200, Self.fresh, "other")])
        #expect(try await tiered.get("/a").bodyText == "one", "a miss in the memory tier is not a miss of the storage")
        #expect(tiered.hits("/a") == 0)
        try #require(tiered.cache.copyUsage != nil, "no per-core copies over a memory tier")
        try await hitUntilCopied(tiered, "/a")
        #expect(tiered.hits("/a") == 0)
    }

    @Test("a hit served from a copy is the hit the storage gives: status, fields, body, URL, source")
    func copiesAnswerAlike() async throws {
        let h = CacheHarness()
        h.origin(
            "/a", status: 200,
            headers: [
                "Cache-Control": "max-age=600", "ETag": "\"v1\"", "Vary": "Accept",
                "X-Long": String(repeating: "long value ", count: 8)
            ], body: "body of a")
        _ = try await h.get("/a", headers: ["Accept": "text/plain"])
        await h.cache.flush()
        h.now.advance(5)
        let first = try await h.get("/a", headers: ["Accept": "text/plain"])  // from the storage: nothing copied yet
        #expect(h.cache.copyUsage?.copies == 0)
        for _ in 0..<100 {
            let hit = try await h.get("/a", headers: ["Accept": "text/plain"])
            #expect(hit.status == first.status)
            #expect(hit.headers == first.headers)
            #expect(hit.body == first.body)
            #expect(hit.url == first.url)
            #expect(hit.source == .cache)
        }
        #expect((h.cache.copyUsage?.copies ?? 0) > 0)
        #expect(try await h.get("/a", headers: ["Accept": "text/html"]).source == .network, "another variant is not the copy's")
        #expect(h.hits("/a") == 2)
    }

    /// A change made to the storage after the copies were made.
    enum Change: String, CaseIterable, CustomTestStringConvertible {
        case storedAround, removed, removedAll, evicted, invalidatedByAnotherCache
        var testDescription: String { rawValue }
    }

    @Test(
        "no copy is served once the storage changed: a store around the cache, a removal, removeAll, an eviction, another cache's invalidation",
        arguments: Change.allCases)
    func copiesEndWithChanges(change: Change) async throws {
        // LRU for the eviction: S3-FIFO would rather evict the one-off records stored around /a.
        let storage = MemoryStorage(countLimit: 2, eviction: change == .evicted ? .lru : .s3fifo)
        let h = try await warmed(storage: storage)
        let key = try #require(h.cache.key(for: h.request("/a")))
        var expected = "new"  // the origin's second answer
        switch change {
        case .storedAround:
            var record = try #require(storage.recordNow(for: key))
            record.variants[0].body = Data("two".utf8)
            storage.storeNow(record)
            expected = "two"
        case .removed:
            storage.removeNow(key)
        case .removedAll:
            await storage.removeAll()
        case .evicted:
            let other = CacheEntry(status: 200, headers: Self.fresh, body: Data(), url: nil, requestTime: h.now.value, responseTime: h.now.value)
            var evicted = false
            for index in 0..<50 where !evicted {
                evicted = storage.storeNow(CacheRecord(key: "other \(index)", variants: [other])).contains(key)
            }
            try #require(evicted, "the stores above evicted /a")
        case .invalidatedByAnotherCache:
            let other = CacheHarness(storage: storage)
            other.origin("/a", method: "POST", status: 204, body: "")
            var post = other.request("/a")
            post.httpMethod = "POST"
            #expect(try await other.pipeline.send(post).status == 204)
            #expect(other.cache.statistics.invalidations == 1)
        }
        for _ in 0..<60 {
            #expect(try await h.get("/a").bodyText == expected)
            await h.cache.flush()
        }
        #expect(h.hits("/a") == (change == .storedAround ? 1 : 2))
    }

    @Test("under concurrent stores, no answer is older than the last store made before its request began")
    func copiesAreNeverStale() async throws {
        let storage = MemoryStorage()
        let h = CacheHarness(storage: storage)
        h.origin("/v", status: 200, headers: Self.fresh, body: "0")
        _ = try await h.get("/v")
        await h.cache.flush()
        let key = try #require(h.cache.key(for: h.request("/v")))
        let template = try #require(storage.recordNow(for: key))
        let published = Locked(0)
        let writer = Task {
            for version in 1...300 {
                var record = template
                record.variants[0].body = Data(String(version).utf8)
                storage.storeNow(record)
                published.withLock { $0 = version }
                // Let the readers copy this version before the next store retires it.
                for _ in 0..<3 { await Task.yield() }
            }
        }
        let stale = Locked(0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    for _ in 0..<2_000 {
                        let floor = published.withLock { $0 }
                        guard let answer = try? await h.get("/v"), let version = Int(answer.bodyText) else {
                            stale.withLock { $0 += 1 }
                            continue
                        }
                        if version < floor { stale.withLock { $0 += 1 } }
                    }
                }
            }
        }
        await writer.value
        #expect(stale.withLock { $0 } == 0, "answers older than a store completed before their request")
        #expect(h.hits("/v") == 1, "every answer came from the cache")
    }

    @Test("the copies stay within their bytes per core; responses over a sixteenth of it are never copied")
    func copiesAreBounded() async throws {
        var configuration = CacheConfiguration()
        configuration.copyBytesPerCore = 64 << 10  // records up to 4 KiB are copied
        let h = CacheHarness(configuration: configuration)
        let paths = (0..<20).map { "/s\($0)" }  // few enough to be seen twice, too big together to fit
        for path in paths { h.origin(path, status: 200, headers: Self.fresh, body: String(repeating: "s", count: 3000)) }
        h.origin("/large", status: 200, headers: Self.fresh, body: String(repeating: "x", count: 8192))
        for path in paths { _ = try await h.get(path) }
        _ = try await h.get("/large")
        await h.cache.flush()
        var most = 0
        for _ in 0..<10 {
            for path in paths {
                #expect(try await h.get(path).source == .cache)
                let usage = try #require(h.cache.copyUsage)
                #expect(usage.bytes <= (64 << 10) * usage.tables)
                #expect(usage.copies <= 64 * usage.tables)
                most = max(most, usage.copies)
            }
        }
        #expect(most > 0)
        let storage = try #require(h.cache.storage as? MemoryStorage)
        let sizes = paths.map { path in h.cache.key(for: h.request(path)).flatMap { storage.recordNow(for: $0) }?.byteCount ?? 0 }
        #expect(sizes.allSatisfy { $0 > 0 && $0 <= 4096 } && sizes.reduce(0, +) > 64 << 10, "each fits; together they do not")

        let before = h.cache.copyUsage?.copies
        for _ in 0..<100 { #expect(try await h.get("/large").data.count == 8192) }
        let key = try #require(h.cache.key(for: h.request("/large")))
        #expect(try #require(storage.recordNow(for: key)).byteCount > 4096)
        #expect(h.cache.copyUsage?.copies == before, "no copy of a record over the size limit")
    }

    @Test("a look's copy is current until the storage changes its key: a store landing after the look retires it")
    func copyCheckedAgainAfterTheLook() throws {
        let generations = RecordGenerations()
        let pinned: PerCoreCopies<Int>.CurrentCore = { 0 }
        let copies = try #require(PerCoreCopies<Int>(bytesPerCore: 1 << 16, generations: generations, currentCore: pinned))
        let url = "https://origin.test/a"
        let entry = CacheEntry(
            status: 200, headers: ["Cache-Control": "max-age=60"], body: Data("one".utf8), url: URL(string: url),
            requestTime: Date(), responseTime: Date())
        let record = CacheRecord(key: "a", variants: [entry])
        let stripe = RecordGenerations.stripe(of: "a")
        var lookup = try #require(copies.look(for: url))
        while !lookup.admits { lookup = try #require(copies.look(for: url)) }  // a third sight admits
        copies.offer(record, for: lookup.key, stripe: stripe, generation: generations.current(stripe)) {
            record.unsharedCopy().map { (1, $0, url.unsharedCopy) }
        }
        let hit = try #require(copies.look(for: url))
        #expect(hit.hit?.record == record)
        let copied = try #require(hit.copied)
        #expect(copies.isCurrent(stripe: copied.stripe, generation: copied.generation))
        generations.bump(hash: "a".hashValue)  // a store of the key lands between the look and the caller's check
        #expect(!copies.isCurrent(stripe: copied.stripe, generation: copied.generation), "the copy the look found is out of date now")
        #expect(copies.look(for: url)?.hit == nil, "and the next look finds none")
        #expect(try #require(copies.look(for: url)).copied == nil, "a look without a copy has nothing to check")
    }

    @Test("a table whose copies serve under one look in 8 goes dormant (7 looks in 8 skipped); a hot URL wakes it")
    func copiesSleepWhenTheyCannotServe() throws {
        let generations = RecordGenerations()
        let pinned: PerCoreCopies<Int>.CurrentCore = { 0 }
        let copies = try #require(PerCoreCopies<Int>(bytesPerCore: 1 << 16, generations: generations, currentCore: pinned))
        for index in 0..<PerCoreCopies<Int>.windowLength {
            #expect(copies.look(for: "https://origin.test/cold/\(index)")?.hit == nil)
        }
        #expect(copies.usage.dormant == 1, "a window of looks that found nothing")
        let skipped = (0..<80).filter { copies.look(for: "https://origin.test/cold/\($0)") == nil }.count
        #expect(skipped == 70, "dormant: 7 looks in 8 return at once")

        let hot = "https://origin.test/hot"
        let entry = CacheEntry(
            status: 200, headers: ["Cache-Control": "max-age=60"], body: Data("hot".utf8), url: URL(string: hot),
            requestTime: Date(), responseTime: Date())
        let record = CacheRecord(key: "hot", variants: [entry])
        var looks = 0, served = 0
        while copies.usage.dormant == 1, looks < 100_000 {
            looks += 1
            guard let lookup = copies.look(for: hot) else { continue }
            if lookup.hit != nil { served += 1 }
            if lookup.admits {
                let stripe = RecordGenerations.stripe(of: "hot")
                copies.offer(record, for: lookup.key, stripe: stripe, generation: generations.current(stripe)) {
                    record.unsharedCopy().map { (1, $0, hot.unsharedCopy) }
                }
            }
        }
        #expect(copies.usage.dormant == 0, "awake again after \(looks) looks")
        #expect(served > 200, "the sampled looks were served from the copy")
        #expect(copies.look(for: hot)?.hit?.record == record)
    }

    @Test("a larger budget holds more copies (one per 4 KiB, 64 at least), and a working set seen in turn is copied nearly whole")
    func largerBudgetsHoldMoreCopies() throws {
        let generations = RecordGenerations()
        let pinned: PerCoreCopies<Int>.CurrentCore = { 0 }
        #expect(
            PerCoreCopies<Int>(
                bytesPerCore: CacheConfiguration().copyBytesPerCore, generations: generations,
                currentCore: pinned)?.maximumCopies == 64, "the default budget keeps the first edition's 64")
        #expect(PerCoreCopies<Int>(bytesPerCore: 64 << 10, generations: generations, currentCore: pinned)?.maximumCopies == 64)
        let unlimited = try #require(PerCoreCopies<Int>(bytesPerCore: .max, generations: generations, currentCore: pinned))
        #expect(
            unlimited.maximumCopies == 1 << 14 && unlimited.doorkeeperSlots == 1 << 16 && unlimited.sweepInterval == 1 << 16,
            "a budget of no limit has bounded tables, and sweeps as rarely per copy held")
        let copies = try #require(PerCoreCopies<Int>(bytesPerCore: 4 << 20, generations: generations, currentCore: pinned))
        #expect(copies.maximumCopies == 1024)
        #expect(copies.doorkeeperSlots == 4096)
        // Every slot is used: the keys' hashes are odd, and the slot is not their low bits.
        let oddHashes = (0..<4096).map { PerCoreCopies<Int>.Key(text: "", hash: 2 * $0 + 1) }
        #expect(Set(oddHashes.map { PerCoreCopies<Int>.doorkeeperSlot(of: $0, slots: 4096) }).count == 4096)
        // 600 URLs hit in turn, as a client walking a catalogue does: each is seen again only
        // after all the others, so the doorkeeper must remember far more than 256 of them. Two
        // URLs whose hashes share a slot may push each other out on every pass and never be
        // copied; with four slots per copy, about one in eight of 600 (it depends on the
        // process's hash seed).
        let urls = (0..<600).map { "https://origin.test/items/\($0)" }
        let slots = urls.map { PerCoreCopies<Int>.doorkeeperSlot(of: .init($0), slots: copies.doorkeeperSlots) }
        let alone = Set(urls.indices.filter { index in slots.count { $0 == slots[index] } == 1 }.map { urls[$0] })
        #expect(alone.count > 400, "\(alone.count) of 600 URLs have a doorkeeper slot of their own")
        // The first passes find no copies, so the table goes dormant and looks at one URL in 8:
        // it takes some dozens of passes to copy them all, as it takes a real workload some
        // dozens of hits of each.
        var copied = Set<String>()
        var passes = 0
        while !alone.isSubset(of: copied), passes < 1_000 {
            passes += 1
            for url in urls {
                guard let lookup = copies.look(for: url), lookup.admits else { continue }
                let entry = CacheEntry(
                    status: 200, headers: ["Cache-Control": "max-age=60"], body: Data("x".utf8), url: URL(string: url),
                    requestTime: Date(), responseTime: Date())
                let record = CacheRecord(key: url, variants: [entry])
                let stripe = RecordGenerations.stripe(of: url)
                copies.offer(record, for: lookup.key, stripe: stripe, generation: generations.current(stripe)) {
                    record.unsharedCopy().map { (1, $0, url.unsharedCopy) }
                }
                copied.insert(url)
            }
        }
        let held = copies.usage.copies
        #expect(alone.isSubset(of: copied), "after \(passes) passes, every URL with a slot of its own was copied")
        #expect(held == copied.count && held <= copies.maximumCopies, "\(held) copies held, \(copied.count) made")
        let served = urls.filter { copies.look(for: $0)?.hit != nil }.count
        #expect(served == held, "every copy serves its URL")
    }

    @Test("a full table sweeps once per 256 refused copies; a dormant one 16 times more rarely")
    func fullTablesSweepRarely() throws {
        for dormant in [false, true] {
            let generations = RecordGenerations()
            let pinned: PerCoreCopies<Int>.CurrentCore = { 0 }
            let copies = try #require(PerCoreCopies<Int>(bytesPerCore: 1 << 16, generations: generations, currentCore: pinned))
            func offer(_ url: String) {
                let entry = CacheEntry(
                    status: 200, headers: ["Cache-Control": "max-age=60"], body: Data("x".utf8), url: URL(string: url),
                    requestTime: Date(), responseTime: Date())
                let record = CacheRecord(key: url, variants: [entry])
                let stripe = RecordGenerations.stripe(of: url)
                copies.offer(record, for: .init(url), stripe: stripe, generation: generations.current(stripe)) {
                    record.unsharedCopy().map { (1, $0, url.unsharedCopy) }
                }
            }
            for index in 0..<copies.maximumCopies { offer("https://origin.test/held/\(index)") }
            #expect(copies.usage.copies == copies.maximumCopies, "full")
            if dormant {
                for index in 0..<PerCoreCopies<Int>.windowLength { _ = copies.look(for: "https://origin.test/cold/\(index)") }
            }
            #expect(copies.usage.dormant == (dormant ? 1 : 0))
            var refused = 0
            while copies.usage.copies == copies.maximumCopies, refused < 100_000 {
                offer("https://origin.test/new")
                refused += 1
            }
            #expect(copies.sweepInterval == PerCoreCopies<Int>.minimumSweepInterval)
            let interval = copies.sweepInterval * (dormant ? PerCoreCopies<Int>.dormantSweepFactor : 1)
            #expect(refused == interval, "dormant \(dormant): the sweep came after \(refused) offers")
            #expect(copies.usage.copies == 1, "the sweep dropped the copies not hit since; the new one is in")
        }
    }

    @Test("copyBytesPerCore 0 keeps no copies; the hits are the same")
    func copiesOff() async throws {
        var configuration = CacheConfiguration()
        configuration.copyBytesPerCore = 0
        let h = CacheHarness(configuration: configuration)
        h.origin("/a", status: 200, headers: Self.fresh, body: "one")
        _ = try await h.get("/a")
        for _ in 0..<20 { #expect(try await h.get("/a").bodyText == "one") }
        #expect(h.cache.copyUsage == nil)
        #expect(h.hits("/a") == 1)
    }

    @Test("hits served from copies still tell the eviction policy: a hot key keeps its place in an LRU")
    func copiesReportReads() async throws {
        let storage = MemoryStorage(countLimit: 2, eviction: .lru)
        let h = try await warmed(storage: storage)
        h.origin("/b", status: 200, headers: Self.fresh, body: "b")
        h.origin("/c", status: 200, headers: Self.fresh, body: "c")
        _ = try await h.get("/b")  // stored after /a: /a is the least recently used
        await h.cache.flush()
        try await hitUntilCopied(h, "/a")  // the store retired /a's copies: copy it again
        #expect(try await h.get("/b").source == .cache)  // /b read last
        for _ in 0..<64 { #expect(try await h.get("/a").bodyText == "one") }  // from copies, some reported
        _ = try await h.get("/c")  // evicts the least recently used
        await h.cache.flush()
        let keyA = try #require(h.cache.key(for: h.request("/a")))
        let keyB = try #require(h.cache.key(for: h.request("/b")))
        #expect(storage.recordNow(for: keyB) == nil, "/b was evicted")
        #expect(storage.recordNow(for: keyA) != nil, "/a, hit from copies after /b's read, was kept")
    }
}

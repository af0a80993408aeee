import Foundation
import PostgresNIO
import Recall
import RecallPostgres
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("PostgresStorage on a real PostgreSQL", .postgres, .timeLimit(.minutes(2)))
struct PostgresStorageTests {
    static func get(_ path: String) -> URLRequest {
        URLRequest(url: URL(string: "https://origin.test" + path)!)
    }

    /// `record` in the bytes a byte store keeps (as any replica would write it).
    static func encoded(_ record: CacheRecord) async -> Data {
        let store = InMemoryByteStore()
        await store.store(record)
        return await store.bytes(for: record.key)?.data ?? Data()
    }

    @Test("the tables are created once; two storages on one database share records and the secret")
    func sharedRecords() async throws {
        try await PostgresFixture.withDatabase { client, _ in
            let first = try await PostgresFixture.open(client)
            let second = try await PostgresFixture.open(client)  // another replica, same database
            #expect(first.secret == second.secret)
            #expect(first.secret.count == 32)
            let version = try await client.query("SELECT convert_from(value, 'UTF8') FROM recall_meta WHERE name = 'schema_version'")
                .all().map { try $0.decode(String.self) }
            #expect(version == ["\(PostgresStorage.schemaVersion)"])

            let origin = MockTransport()
            origin.route("GET", "/shared", .text("from the origin", headers: ["Cache-Control": "max-age=60", "ETag": "\"v1\""]))
            let replicaA = Pipeline(transport: origin, hooks: [HTTPCache(storage: first)])
            let replicaB = Pipeline(transport: origin, hooks: [HTTPCache(storage: second)])
            #expect(try await replicaA.send(Self.get("/shared")).source == .network)
            let hit = try await replicaB.send(Self.get("/shared"))
            #expect(hit.source == .cache)
            #expect(hit.bodyText == "from the origin")
            #expect(origin.count(for: "/shared") == 1)
            await second.refreshStatistics()
            #expect(second.fleetStatistics.entries == 1)
            #expect(second.fleetStatistics.bytes > 0)
            #expect(second.fleetStatistics.hits == 1)
            await first.shutdown()
            await second.shutdown()
        }
    }

    @Test(
        "a replica waiting for another's fetch wakes when that one stores its answer, though it never releases its claim (#40)",
        arguments: [String(repeating: "k", count: 12), String(repeating: "long-key/", count: 40)])
    func waiterWakesOnStore(key: String) async throws {
        try await PostgresFixture.withDatabase { client, _ in
            var configuration = PostgresFixture.patient
            configuration.leaseTime = .seconds(45)  // longer than the test may take: only the store can wake the waiter
            let leader = try await PostgresFixture.open(client, configuration)
            let waiter = try await PostgresFixture.open(client, configuration)
            try await waitUntil("the waiter listens", seconds: 30) { waiter.fleetStatistics.listeningStarts > 0 }
            #expect(await leader.claim("fetch-1"))
            #expect(!(await waiter.claim("fetch-1")))
            let waiting = Task { await waiter.wait(for: "fetch-1", orStoreOf: key) }
            await leader.write(Data("the answer".utf8), for: key, expires: nil)
            #expect(await waiting.value == .patient, "the read after a wait for the fleet's fetch is patient")
            #expect(!(await waiter.claim("fetch-1")), "woken by the store: the claim is still held, not lapsed")
            #expect(await waiter.bytes(for: key, lookup: .patient)?.data == Data("the answer".utf8))
            await leader.release("fetch-1")
            await leader.shutdown()
            await waiter.shutdown()
        }
    }

    @Test(
        "a claim says how the read after it goes, to that read alone: nothing there is a miss without a round trip, a record there a patient read; no later read of the key is changed by it (#56)"
    )
    func claimSaysHowToRead() async throws {
        try await PostgresFixture.withDatabase { client, _ in
            let a = try await PostgresFixture.open(client)
            let b = try await PostgresFixture.open(client)
            #expect(await a.claim("fetch-1", storingUnder: "k") == .claimed(then: .absent))
            await b.write(Data("stored since".utf8), for: "k", expires: nil)
            // The read the claim's answer is handed to trusts it (no statement: the row now there is not seen)…
            #expect(await a.bytes(for: "k", lookup: .absent) == nil)
            // …and any other read of the key reads as usual: nothing was left with the key.
            #expect(await a.bytes(for: "k")?.data == Data("stored since".utf8))
            #expect(await a.bytes(for: "k")?.data == Data("stored since".utf8))
            await a.release("fetch-1")
            #expect(await b.claim("fetch-2", storingUnder: "k") == .claimed(then: .patient))
            #expect(await b.claim("fetch-3") == true, "a claim without a key says nothing of a record")
            await b.release("fetch-2")
            await b.release("fetch-3")
            await a.shutdown()
            await b.shutdown()
        }
    }

    @Test("a response for a user, stored by one replica, matches only that user in another")
    func credentialsAcrossReplicas() async throws {
        try await PostgresFixture.withDatabase { client, _ in
            let origin = MockTransport()
            origin.route("GET", "/me") { request in
                let user = request.value(forHTTPHeaderField: "Authorization") == "Bearer alice" ? 1 : 2
                return .text("profile #\(user)", headers: ["Cache-Control": "private, max-age=60"])
            }
            let a = try await PostgresFixture.open(client)
            let b = try await PostgresFixture.open(client)
            let replicaA = Pipeline(transport: origin, hooks: [HTTPCache(storage: a)])
            let replicaB = Pipeline(transport: origin, hooks: [HTTPCache(storage: b)])
            var alice = Self.get("/me")
            alice.setValue("Bearer alice", forHTTPHeaderField: "Authorization")
            var bob = Self.get("/me")
            bob.setValue("Bearer bob", forHTTPHeaderField: "Authorization")
            _ = try await replicaA.send(alice)
            #expect(try await replicaB.send(alice).source == .cache)
            let forBob = try await replicaB.send(bob)
            #expect(forBob.source == .network)
            #expect(forBob.bodyText == "profile #2")
            // No credential reaches the table: keys and partitions hold keyed hashes.
            let records = try await client.query("SELECT key || encode(record, 'escape') FROM recall_entries").all().map { try $0.decode(String.self) }
            #expect(!records.isEmpty)
            #expect(records.allSatisfy { !$0.contains("alice") && !$0.contains("bob") })
            await a.shutdown()
            await b.shutdown()
        }
    }

    @Test("bad rows — garbage bytes, another key's record — are misses and are removed")
    func badRows() async throws {
        try await PostgresFixture.withDatabase { client, _ in
            let storage = try await PostgresFixture.open(client)
            let good = CacheRecord(key: "k-good", variants: [Self.entry("good")])
            await storage.store(good)
            #expect(await storage.record(for: "k-good").map(Self.summary) == Self.summary(good))
            // Garbage under a key.
            let garbage = Data("not a record at all".utf8)
            _ = try await client.query(
                """
                INSERT INTO recall_entries (key_hash, key, record, size) VALUES (sha256(convert_to('k-bad', 'UTF8')), 'k-bad', \(garbage), \(garbage.count))
                """)
            #expect(await storage.record(for: "k-bad") == nil)
            // The record of another key under this one.
            let other = await Self.encoded(CacheRecord(key: "k-other", variants: [Self.entry("other")]))
            _ = try await client.query(
                """
                INSERT INTO recall_entries (key_hash, key, record, size) VALUES (sha256(convert_to('k-swapped', 'UTF8')), 'k-swapped', \(other), \(other.count))
                """)
            #expect(await storage.record(for: "k-swapped") == nil)
            let left = try await client.query("SELECT key FROM recall_entries ORDER BY key").all().map { try $0.decode(String.self) }
            #expect(left == ["k-good"])
            #expect(storage.fleetStatistics.corruptRemoved == 2)
            #expect(storage.statistics.corruptRemoved == 2)
            await storage.shutdown()
        }
    }

    /// Issue #36, point 13: a row larger than `maxRecordBytes` was read whole by every lookup
    /// (to the timeout, for a large one) and never removed.
    @Test("a row larger than maxRecordBytes is never sent: a miss, and the row is removed")
    func oversizedRow() async throws {
        try await PostgresFixture.withDatabase { client, _ in
            var configuration = PostgresFixture.patient
            configuration.maxRecordBytes = 4_096
            let storage = try await PostgresFixture.open(client, configuration)
            let large = await Self.encoded(CacheRecord(key: "k-large", variants: [Self.entry(String(repeating: "x", count: 20_000))]))
            _ = try await client.query(
                """
                INSERT INTO recall_entries (key_hash, key, record, size) VALUES (sha256(convert_to('k-large', 'UTF8')), 'k-large', \(large), \(large.count))
                """)
            #expect(await storage.record(for: "k-large") == nil)
            let left = try await client.query("SELECT count(*) FROM recall_entries WHERE key = 'k-large'").all().map { try $0.decode(Int.self) }
            #expect(left == [0], "the oversized row was removed")
            #expect(storage.fleetStatistics.corruptRemoved == 1)
            await storage.shutdown()
        }
    }

    @Test("past the byte limit, maintenance evicts the least recently used in batches; entries used since get a second chance")
    func evictionUnderByteLimit() async throws {
        try await PostgresFixture.withDatabase { client, _ in
            var configuration = PostgresFixture.patient
            configuration.maxBytes = 40_000
            configuration.batchSize = 10
            configuration.touchInterval = .zero  // every use is recorded
            configuration.maintenanceInterval = 1_000_000  // only explicit passes here
            let storage = try await PostgresFixture.open(client, configuration)
            let body = String(repeating: "x", count: 2_000)
            for index in 0..<50 {
                await storage.store(CacheRecord(key: "k\(index)", variants: [Self.entry(body)]))
            }
            await storage.refreshStatistics()
            #expect(storage.fleetStatistics.entries == 50)
            #expect(storage.fleetStatistics.bytes > 100_000)
            // The oldest five are used: they must survive the pass.
            for index in 0..<5 { #expect(await storage.record(for: "k\(index)") != nil) }
            try await Self.eventually { try await Self.uses(client, "k0") > 0 }
            for index in 1..<5 { try await Self.eventually { try await Self.uses(client, "k\(index)") > 0 } }
            // Make the used ones the least recently used: plain LRU would evict them first.
            _ = try await client.query("UPDATE recall_entries SET used_at = now() - interval '1 hour' WHERE key IN ('k0', 'k1', 'k2', 'k3', 'k4')")
            await storage.maintain()
            let statistics = storage.fleetStatistics
            #expect(statistics.bytes <= 40_000)
            #expect(statistics.evictions >= 30)
            for index in 0..<5 { #expect(await storage.record(for: "k\(index)") != nil, "k\(index) was used: second chance") }
            // The counters the trigger keeps agree with the table.
            let counted = try await client.query("SELECT count(*)::bigint, coalesce(sum(size), 0)::bigint FROM recall_entries")
                .all().map { try $0.decode((Int64, Int64).self) }
            #expect(counted.first.map { Int($0.0) } == statistics.entries)
            #expect(counted.first.map { Int($0.1) } == statistics.bytes)
            await storage.shutdown()
        }
    }

    @Test("maintenance runs by itself every maintenanceInterval stores and keeps the table near its row limit")
    func backgroundMaintenance() async throws {
        try await PostgresFixture.withDatabase { client, _ in
            var configuration = PostgresFixture.patient
            configuration.maxEntries = 20
            configuration.maintenanceInterval = 10
            configuration.batchSize = 10
            let storage = try await PostgresFixture.open(client, configuration)
            for index in 0..<100 {
                await storage.store(CacheRecord(key: "k\(index)", variants: [Self.entry("v")]))
            }
            await storage.shutdown()  // waits for a pass under way; no explicit maintain()
            await storage.refreshStatistics()
            // Passes ran in the background: at most the stores since the last pass (and those
            // made while one ran) are over the limit.
            #expect(storage.fleetStatistics.evictions >= 60)
            #expect(storage.fleetStatistics.entries <= 40)
        }
    }

    @Test("a row expires at the cache's hint (nothing in it servable after); without one, after the retention")
    func expiry() async throws {
        try await PostgresFixture.withDatabase { client, _ in
            var configuration = PostgresFixture.patient
            configuration.expiryMargin = .zero
            let storage = try await PostgresFixture.open(client, configuration)
            let hourAgo = Date().addingTimeInterval(-3_600)
            let record = { (key: String) in CacheRecord(key: key, variants: [Self.entry("old", at: hourAgo)]) }
            // Servable until a minute after an hour ago: useless now.
            await storage.store(record("gone"), expires: hourAgo.addingTimeInterval(60))
            // No hint (it can be revalidated): kept until the retention.
            await storage.store(record("kept"), expires: nil)
            // Servable for a day more (a stale-if-error window).
            await storage.store(record("grace"), expires: hourAgo.addingTimeInterval(86_400))
            // A hint past the retention is cut to it (7 days): not expired now either.
            await storage.store(record("far"), expires: Date().addingTimeInterval(365 * 86_400))
            await storage.maintain()
            #expect(storage.fleetStatistics.expired == 1)
            #expect(await storage.record(for: "gone") == nil)
            #expect(await storage.record(for: "kept") != nil)
            #expect(await storage.record(for: "grace") != nil)
            #expect(await storage.record(for: "far") != nil)
            await storage.shutdown()
        }
    }

    @Test("through an HTTPCache: a response that can no longer be served expires from the table; one with a validator stays")
    func expiryThroughCache() async throws {
        try await PostgresFixture.withDatabase { client, _ in
            var configuration = PostgresFixture.patient
            configuration.expiryMargin = .zero
            let storage = try await PostgresFixture.open(client, configuration)
            let mock = MockTransport()
            mock.route("GET", "/short", .text("a", headers: ["Cache-Control": "max-age=1"]))
            mock.route("GET", "/tagged", .text("b", headers: ["Cache-Control": "max-age=1", "ETag": "\"v\""]))
            var cacheConfiguration = CacheConfiguration()
            cacheConfiguration.servesStaleWhenDisconnected = false
            // The cache's clock runs two hours behind the database's: what it stores is long past use there.
            let cache = HTTPCache(storage: storage, configuration: cacheConfiguration, now: { Date().addingTimeInterval(-7_200) })
            let pipeline = Pipeline(transport: mock, hooks: [cache])
            _ = try await pipeline.send(URLRequest(url: URL(string: "https://origin.test/short")!))
            _ = try await pipeline.send(URLRequest(url: URL(string: "https://origin.test/tagged")!))
            await cache.flush()
            await storage.maintain()
            #expect(storage.fleetStatistics.expired == 1)
            await storage.shutdown()
        }
    }

    @Test("a memory tier in another replica drops a key as soon as one replica replaces or removes it (LISTEN/NOTIFY)")
    func memoryTierInvalidation() async throws {
        try await Self.withTwoReplicas { a, b, memoryB, tieredB in
            let record = CacheRecord(key: "k", variants: [Self.entry("v1")])
            await a.store(record)
            // A store is announced too; once B has heard it, B reads through and keeps the record.
            try await Self.eventually { b.fleetStatistics.invalidationsReceived >= 1 }
            #expect(await tieredB.record(for: "k").map(Self.summary) == Self.summary(record))  // read through, kept in memory
            #expect(await memoryB.record(for: "k").map(Self.summary) == Self.summary(record))
            // Replica A stores a new version: B's memory drops the old one, B reads the new one.
            let newer = CacheRecord(key: "k", variants: [Self.entry("v2")])
            await a.store(newer)
            try await Self.eventually { await memoryB.record(for: "k") == nil }
            #expect(await tieredB.record(for: "k").map(Self.summary) == Self.summary(newer))
            await a.remove("k")  // replica A invalidates
            try await Self.eventually { await memoryB.record(for: "k") == nil }
            #expect(await tieredB.record(for: "k") == nil)
            #expect(b.fleetStatistics.invalidationsReceived >= 3)
        }
    }

    /// Issue #36, point 8: any key over 7,000 bytes was announced as "everything", so one stored
    /// response for a long URL emptied every other replica's memory tier.
    @Test("a key too long for a notification is announced by digest: other replicas drop that key alone")
    func longKeyNotice() async throws {
        try await Self.withTwoReplicas { a, b, memoryB, tieredB in
            for index in 0..<100 { await tieredB.store(CacheRecord(key: "warm-\(index)", variants: [Self.entry("w")])) }
            let long = "https://origin.test/" + String(repeating: "x", count: 7_500)
            await tieredB.store(CacheRecord(key: long, variants: [Self.entry("v1")]))
            #expect(memoryB.statistics.count == 101)
            let heard = b.fleetStatistics.invalidationsReceived
            // (Made once: an entry made again a second later has another date.)
            let newer = CacheRecord(key: long, variants: [Self.entry("v2")])
            await a.store(newer)  // replica A replaces the long key
            try await Self.eventually { b.fleetStatistics.invalidationsReceived > heard }
            try await Self.eventually { await memoryB.record(for: long) == nil }
            #expect(memoryB.statistics.count == 100, "the warm keys stay")
            #expect(await tieredB.record(for: long).map(Self.summary) == Self.summary(newer))
            // Another long key that B never held: nothing of B's is dropped.
            await a.store(CacheRecord(key: long + "y", variants: [Self.entry("other")]))
            try await Self.eventually { b.fleetStatistics.invalidationsReceived > heard + 1 }
            #expect(memoryB.statistics.count == 101)
        }
    }

    /// Two replicas on a new database, the second with a memory tier, both listening; shut down after `body`.
    static func withTwoReplicas(_ body: (PostgresStorage, PostgresStorage, MemoryStorage, TieredStorage) async throws -> Void) async throws {
        try await PostgresFixture.withDatabase { client, _ in
            let a = try await PostgresFixture.open(client)
            let b = try await PostgresFixture.open(client)
            let memoryB = MemoryStorage()
            let tieredB = b.withMemoryTier(memoryB)
            try await Self.eventually { try await Self.listeners(client) >= 2 }
            // (Listening begins by dropping what the memory tiers hold: wait until it has, or the
            // test's own stores into B's tier would be dropped with it.)
            try await Self.eventually { a.fleetStatistics.listeningStarts >= 1 && b.fleetStatistics.listeningStarts >= 1 }
            try await body(a, b, memoryB, tieredB)
            await a.shutdown()
            await b.shutdown()
        }
    }

    @Test("fetch claims: one replica holds a claim, another waits for its release; an abandoned claim lapses")
    func claims() async throws {
        try await PostgresFixture.withDatabase { client, _ in
            // A and B hold claims for a minute and wait a minute at most: on a loaded machine a
            // claim of theirs never lapses while the test looks (at 300 ms, B's refusal raced
            // A's lease), and a wait that ends well before that minute ended for its reason.
            var patient = PostgresFixture.patient
            patient.leaseTime = .seconds(60)
            let a = try await PostgresFixture.open(client, patient)
            // B keeps its schedule on a manual clock: its wait checks the claim, then sleeps a poll
            // that ends only when the test moves the clock — so the release surely comes during it.
            let clock = ManualClock()
            let b = try await PostgresFixture.open(client, patient, clock: clock)
            #expect(await a.claim("f.1"))
            #expect(await b.claim("f.1") == false)
            async let waited: Void = b.wait(for: "f.1")
            await clock.waitForSleepers(2)  // its poll (besides its listener's heartbeat)
            await a.release("f.1")
            clock.advance(by: patient.leasePoll)
            await waited  // (B's own bound, a minute on its clock, never comes: the release ended it)
            #expect(await b.claim("f.1"))
            await b.release("f.1")
            // C "crashes" holding a claim of 1 s (its shutdown stops the renewal a live holder
            // makes): A waits until it lapses (not A's own 60 s), then may claim.
            var brief = PostgresFixture.patient
            brief.leaseTime = .seconds(1)
            let c = try await PostgresFixture.open(client, brief)
            #expect(await c.claim("f.1"))
            await c.shutdown()
            let before = ContinuousClock.now
            await a.wait(for: "f.1")
            #expect(ContinuousClock.now - before < .seconds(20), "A's wait ended at its own bound (60 s), not at the lapse")
            #expect(await a.claim("f.1"))
            #expect(a.fleetStatistics.claims == 2)
            #expect(b.fleetStatistics.claimsHeldElsewhere == 1)
            await a.shutdown()
            await b.shutdown()
        }
    }

    @Test("a claim is renewed while its fetch is under way: it outlives its lease until released (#40)")
    func claimRenewal() async throws {
        try await PostgresFixture.withDatabase { client, _ in
            // A renews on a manual clock: a third of the lease passes when the test says. (Its
            // listener's silence limit is beyond what the test moves the clock by.)
            var configuration = PostgresFixture.patient
            configuration.leaseTime = .seconds(60)
            configuration.silenceLimit = .seconds(3_600)
            let clock = ManualClock()
            let a = try await PostgresFixture.open(client, configuration, clock: clock)
            let b = try await PostgresFixture.open(client, configuration)
            #expect(await a.claim("r.1"))
            let claimed = try await Self.leaseExpiry(client, "r.1")
            await clock.waitForSleepers(2)  // the renewal's wait (besides the heartbeat's)
            clock.advance(by: .seconds(20))
            try await waitUntil("the claim renewed", seconds: 30) { a.fleetStatistics.claimRenewals >= 1 }
            // The lease ends later in the database than the claim made it end: renewed there.
            #expect(try await Self.leaseExpiry(client, "r.1") > claimed)
            #expect(await b.claim("r.1") == false, "the claim lapsed though its holder was still fetching")
            await a.release("r.1")
            #expect(await b.claim("r.1"))
            await b.release("r.1")
            await a.shutdown()
            await b.shutdown()
        }
    }

    @Test(
        "a slow database (its table locked by another session): requests are answered by the origin within the timeout, the hanging statements are cancelled and their connections come back; then hits come back"
    )
    func slowDatabase() async throws {
        try await PostgresFixture.withDatabase { client, database in
            var configuration = PostgresStorage.Configuration()
            configuration.timeout = .milliseconds(200)
            configuration.pause = .milliseconds(300)
            configuration.silenceLimit = .seconds(60)  // (a late heartbeat would close the listener's connection, where cancellations run from)
            // The storage's own pool of three (the listener's, one kept for lookups, one more):
            // without cancellation, hanging lookups would hold all of it.
            configuration.requestConnections = 1
            var small = PostgresFixture.configuration(try PostgresFixture.current, database: database)
            small.options.maximumConnections = 3
            try await PostgresFixture.withClient(small) { storageClient in
                let storage = try await PostgresFixture.open(storageClient, configuration)
                let origin = MockTransport()
                origin.route("GET", "/s", .text("s", headers: ["Cache-Control": "max-age=60"]))
                let pipeline = Pipeline(transport: origin, hooks: [HTTPCache(storage: storage)])
                let request = Self.get("/s")
                #expect(try await pipeline.send(request).source == .network)
                // Hits before the lock: within 200 ms, which a loaded machine may miss (its store
                // or lookup then dropped: the request is fetched and stored again).
                try await Self.eventually { try await pipeline.send(request).source == .cache }
                let fetchedBefore = origin.count(for: "/s")
                // The table stays locked while the requests below are made.
                try await PostgresFixture.whileHeld(client, "LOCK TABLE recall_entries IN ACCESS EXCLUSIVE MODE") {
                    var slowest = Duration.zero
                    for _ in 0..<5 {
                        let started = ContinuousClock.now
                        let answer = try await pipeline.send(request)
                        slowest = max(slowest, ContinuousClock.now - started)
                        #expect(answer.status == 200 && answer.bodyText == "s")
                    }
                    // Within the storage's 200 ms timeouts plus what a loaded machine adds; a request
                    // that waited for the table would still be waiting (it is locked until just below).
                    #expect(slowest < .seconds(10), "a request waited \(slowest) for a locked table")
                    #expect(origin.count(for: "/s") > fetchedBefore, "lookups that could not finish were misses")
                    // While the table is still locked, the storage cancels its statements that wait on it
                    // (postgres-nio cannot, and nothing else here does): none of them is left holding a
                    // connection. (Counted by the storage whose pass cancelled them: every statement
                    // carries its process's tag, so a pass another storage of this test process runs at
                    // the same time may take them first, and this storage's own count then stays 0.)
                    try await Self.eventually { try await Self.waitingOnLocks(client) == 0 }
                    #expect(try await Self.waitingOnLocks(client) == 0, "statements of the storage still hold connections")
                }
                try await Self.eventually { try await pipeline.send(request).source == .cache }
                await storage.shutdown()
            }
        }
    }

    @Test(
        "lookups go down the connections the storage holds (requestConnections), not the pool; one the database terminated is replaced; shutdown gives them back"
    )
    func heldConnections() async throws {
        try await PostgresFixture.withDatabase { client, database in
            try await Self.withStorage(holding: 2, in: database) { storage in
                let record = CacheRecord(key: "k", variants: [Self.entry("v1")])
                await storage.store(record)
                // One at a time: a lane is never stalled, so nothing goes through the pool.
                for _ in 0..<20 { #expect(await storage.record(for: "k").map(Self.summary) == Self.summary(record)) }
                #expect(storage.fleetStatistics.statementsThroughPool == 0)
                let first = try await Self.lookupBackends(client)
                #expect(first.count == 2, "lookups ran on \(first.count) connections, not the 2 held")
                // The database ends them (a failover, an administrator): the storage holds new ones.
                for pid in first { _ = try await client.query("SELECT pg_terminate_backend(\(pid))").all() }
                try await Self.eventually {
                    guard await storage.record(for: "k") != nil else { return false }
                    return Set(try await Self.lookupBackends(client)).isDisjoint(with: first)
                }
                try await Self.eventually { storage.fleetStatistics.connectionsHeld == 2 }
                await storage.shutdown()
                #expect(storage.fleetStatistics.connectionsHeld == 0)
                // Lookups after shutdown still work, through the pool.
                #expect(await storage.record(for: "k") != nil)
            }
        }
    }

    @Test("lookups that wait for a held connection go down it together, as one statement, and each gets its own answer")
    func batchedLookups() async throws {
        try await PostgresFixture.withDatabase { _, database in
            try await Self.withStorage(holding: 1, in: database) { storage in
                let records = (0..<20).map { CacheRecord(key: "k\($0)", variants: [Self.entry("v\($0)")]) }
                for record in records { await storage.store(record) }
                // Bursts of 40 lookups at once — the 20 stored keys and 20 never stored — until some
                // had to wait for the connection (each burst does, unless the machine runs them one by one).
                try await Self.eventually {
                    let answers = await Self.burst(of: 40, on: storage) { "k\($0)" }
                    for index in 0..<40 {
                        #expect(answers[index]! == (index < 20 ? Self.summary(records[index]) : nil), "lookup of k\(index)")
                    }
                    return storage.fleetStatistics.lookupsBatched > 0
                }
                #expect(storage.fleetStatistics.failures == 0)
                await storage.shutdown()
            }
        }
    }

    @Test(
        "the held connection is terminated again and again under bursts of lookups: no lookup gets another key's record, and the lane serves again after (its load is not left behind)"
    )
    func laneSurvivesTermination() async throws {
        try await PostgresFixture.withDatabase { client, database in
            // Lookups cut by a termination fail: no pause after them, which would make the last lookups misses.
            var unpausing = PostgresFixture.patient
            unpausing.failuresToPause = .max
            try await Self.withStorage(holding: 1, in: database, configuration: unpausing) { storage in
                let records = (0..<20).map { CacheRecord(key: "k\($0)", variants: [Self.entry("v\($0)")]) }
                for record in records { await storage.store(record) }
                for _ in 0..<3 {
                    async let answers = Self.burst(of: 40, on: storage) { "k\($0 % 20)" }
                    for pid in try await Self.lookupBackends(client) { _ = try await client.query("SELECT pg_terminate_backend(\(pid))").all() }
                    for (index, answer) in await answers {
                        // A lookup cut by the termination is a miss; none may be another key's record.
                        #expect(answer == nil || answer == Self.summary(records[index % 20]), "lookup \(index)")
                    }
                }
                // The lane serves again once it holds a connection that is not closing: a lookup
                // that neither misses nor goes through the pool. (A lane left loaded never does.)
                try await Self.eventually {
                    let pooled = storage.fleetStatistics.statementsThroughPool
                    guard await storage.record(for: "k0") != nil else { return false }
                    return storage.fleetStatistics.statementsThroughPool == pooled
                }
                let pooled = storage.fleetStatistics.statementsThroughPool
                for index in 0..<20 {
                    #expect(await storage.record(for: "k\(index)").map(Self.summary) == Self.summary(records[index]))
                }
                #expect(storage.fleetStatistics.statementsThroughPool == pooled, "the lane was left loaded: lookups went through the pool")
                await storage.shutdown()
            }
        }
    }

    /// Runs `body` with a storage (patient limits) holding `connections` of its own client's
    /// connections (a pool of 6), once it holds them all: the test's own statements do not share
    /// its pool.
    static func withStorage(
        holding connections: Int, in database: String, configuration: PostgresStorage.Configuration = PostgresFixture.patient,
        _ body: (PostgresStorage) async throws -> Void
    ) async throws {
        var configuration = configuration
        configuration.requestConnections = connections
        var own = PostgresFixture.configuration(try PostgresFixture.current, database: database)
        own.options.maximumConnections = 6
        try await PostgresFixture.withClient(own) { storageClient in
            let storage = try await PostgresFixture.open(storageClient, configuration)
            try await Self.eventually { storage.fleetStatistics.connectionsHeld == connections }
            try await body(storage)
        }
    }

    /// `count` lookups at once, of the keys `key(index)` names: each one's record, summarized, by index.
    static func burst(of count: Int, on storage: PostgresStorage, key: @escaping @Sendable (Int) -> String) async -> [Int: [String]?] {
        await withTaskGroup(of: (Int, [String]?).self) { group in
            for index in 0..<count {
                group.addTask { (index, await storage.record(for: key(index)).map(Self.summary)) }
            }
            return await group.reduce(into: [Int: [String]?]()) { $0[$1.0] = $1.1 }
        }
    }

    /// The backends whose last statement was a storage's lookup.
    static func lookupBackends(_ client: PostgresClient) async throws -> [Int32] {
        try await client.query(
            """
            SELECT pid FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid()
              AND query LIKE '/* recall %' AND query LIKE '%FROM recall_entries WHERE key_hash%'
            """
        ).all().map { try $0.decode(Int32.self) }
    }

    /// Statements of a storage (their text starts with its tag; `containing`: and has that text) on
    /// `client`'s database waiting for a lock now.
    static func waitingOnLocks(_ client: PostgresClient, containing text: String = "") async throws -> Int {
        let pattern = "/* recall %\(text)%"
        let rows = try await client.query(
            """
            SELECT count(*)::bigint FROM pg_stat_activity
            WHERE state = 'active' AND wait_event_type = 'Lock' AND query LIKE \(pattern) AND datname = current_database()
            """
        ).all()
        return try Int(rows.first?.decode(Int64.self) ?? 0)
    }

    @Test("a role that may only read and write the five tables opens a storage the owner migrated, and caches through it (docs/scale-out.md's grants)")
    func restrictedRole() async throws {
        let server = try PostgresFixture.current
        try await PostgresFixture.withDatabase { client, database in
            let owner = try await PostgresFixture.open(client)
            await owner.shutdown()
            let role = "runtime_" + database.suffix(8)
            for statement in [
                "CREATE ROLE \(role) LOGIN",
                "REVOKE CREATE ON SCHEMA public FROM PUBLIC",
                "GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON recall_entries, recall_usage, recall_leases, recall_meta, recall_removals TO \(role)"
            ] {
                _ = try await client.query(PostgresQuery(unsafeSQL: statement)).all()
            }
            var configuration = PostgresClient.Configuration(
                host: "127.0.0.1", port: server.port, username: role,
                password: nil, database: database, tls: .disable)
            configuration.options.connectTimeout = .seconds(5)
            try await PostgresFixture.withClient(configuration) { restricted in
                let storage = try await PostgresFixture.open(restricted)
                let record = CacheRecord(key: "k", variants: [Self.entry("v1")])
                await storage.store(record)
                #expect(await storage.record(for: "k").map(Self.summary) == Self.summary(record))
                // A removal and a store that checks the removal counts (schema version 2) work too.
                let mark = try #require(await storage.removalMark(for: "k"))
                await storage.remove("k")
                #expect(await storage.store(record, expires: nil, ifNotRemovedSince: mark) == false)
                #expect(await storage.store(record, expires: nil, ifNotRemovedSince: try #require(await storage.removalMark(for: "k"))))
                #expect(await storage.claim("f"))
                await storage.release("f")
                #expect(storage.fleetStatistics.failures == 0)
                await storage.shutdown()
            }
        }
    }

    @Test("a database with a newer schema is refused with a clear error")
    func newerSchema() async throws {
        try await PostgresFixture.withDatabase { client, _ in
            let storage = try await PostgresFixture.open(client)
            await storage.shutdown()
            _ = try await client.query("UPDATE recall_meta SET value = convert_to('99', 'UTF8') WHERE name = 'schema_version'")
            await #expect(throws: PostgresStorageError.schemaTooNew(found: 99, supported: PostgresStorage.schemaVersion)) {
                _ = try await PostgresFixture.open(client)
            }
        }
    }

    // MARK: Helpers

    /// A stored 200 with `body`, received at `date`.
    static func entry(
        _ body: String, at date: Date = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down)), cacheControl: String = "max-age=60",
        headers extra: [String: String] = [:]
    ) -> CacheEntry {
        var headers: HeaderFields = ["Cache-Control": cacheControl, "Date": HTTPDate.format(date)]
        for (name, value) in extra { headers.add(name, value) }
        return CacheEntry(
            status: 200, headers: headers, body: Data(body.utf8), url: URL(string: "https://origin.test/x"),
            requestTime: date, responseTime: date)
    }

    /// What a record says, compared across an encoding round trip.
    static func summary(_ record: CacheRecord) -> [String] {
        [record.key]
            + record.variants.flatMap { entry in
                [
                    "\(entry.status)", String(decoding: entry.body, as: UTF8.self), entry.headers["Cache-Control"] ?? "",
                    "\(entry.responseTime.timeIntervalSince1970)"
                ]
            }
    }

    static func uses(_ client: PostgresClient, _ key: String) async throws -> Int {
        let rows = try await client.query("SELECT uses FROM recall_entries WHERE key = \(key)").all()
        return try rows.first?.decode(Int.self) ?? 0
    }

    /// The `pg_stat_activity` rows of storages' listening connections: their last statement was
    /// `LISTEN` or a heartbeat.
    static let listenerActivity = "(query LIKE 'LISTEN%' OR query LIKE '/* recall listener */%') AND datname = current_database()"

    static func listeners(_ client: PostgresClient) async throws -> Int {
        let rows = try await client.query("SELECT count(*)::bigint FROM pg_stat_activity WHERE \(unescaped: listenerActivity)").all()
        return try Int(rows.first?.decode(Int64.self) ?? 0)
    }

    /// Waits until `condition` holds, for 30 s at most (generous: a loaded machine is slow, and
    /// the wait ends as soon as the condition holds); records an issue when it never does.
    static func eventually(_ condition: () async throws -> Bool, sourceLocation location: SourceLocation = #_sourceLocation) async throws {
        do {
            try await waitUntil("the condition", seconds: 30, condition)
        } catch is WaitTimedOut {
            Issue.record("condition not met within 30 s", sourceLocation: location)
        }
    }

    /// When the lease of the claim `name` ends, as the database has it.
    static func leaseExpiry(_ client: PostgresClient, _ name: String) async throws -> Date {
        let rows = try await client.query("SELECT expires_at FROM recall_leases WHERE name = \(name)").all()
        return try #require(try rows.first?.decode(Date.self))
    }
}

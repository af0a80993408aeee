import Foundation
@testable import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The cache's first step on its own: what a look finds for each route and storage, when it
/// must suspend, and that its resume never waits twice.
@Suite("CacheLookup: route, location and record, suspending only where it must", .timeLimit(.minutes(1)))
struct CacheLookupTests {
    static let url = "https://origin.test/a"

    /// A lookup over `storage`, with the writer (and write-behind, over memory) it reads.
    struct Parts {
        let lookup: CacheLookup
        let writer: CacheWriter
        let behind: WriteBehind?
        let locator: CacheLocator
        /// The cache a request state hands its outcome to: these tests hand none.
        let owner = HTTPCache()

        /// The dates the lookup reads: one second later at each read.
        let clock = Locked(Date(timeIntervalSince1970: 1_700_000_000))

        init(storage: any CacheStorage, writesBehind: Bool = false, copyBytesPerCore: Int = 0) {
            let configuration = CacheConfiguration()
            let partitioner = CachePartitioner(secret: [1, 2, 3], configuration: configuration)
            let strategy = CacheStrategy(rules: CacheRules(configuration: configuration), partitioner: partitioner)
            let memory = storage as? MemoryStorage
            locator = CacheLocator(configuration: configuration, partitioner: partitioner)
            writer = CacheWriter(storage: storage, memory: memory, records: strategy.records, counts: CacheCounters())
            let writer = writer
            behind =
                writesBehind
                ? memory.map {
                    WriteBehind(memory: $0, writer: writer, records: strategy.records, leads: CacheLeads(coordinator: nil, countsFetchEvents: true))
                } : nil
            let clock = clock
            lookup = CacheLookup(
                strategy: strategy, locator: locator, partitioner: partitioner, storage: storage,
                memory: memory.map { MemoryReads(memory: $0, copyBytesPerCore: copyBytesPerCore, missesAreFinal: true) }, writer: writer,
                now: {
                    clock.withLock {
                        $0 = $0.addingTimeInterval(1); return $0
                    }
                })
        }

        var key: String { locator.location(ofText: CacheLookupTests.url)!.key }
    }

    static func request(_ method: String = "GET", _ fields: [String: String] = [:], url: String = url) -> URLRequest {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        for (name, value) in fields { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    @Test("routes: an unsafe method passes as an invalidation, the caller's validators are looked up as theirs, others bypass")
    func routes() {
        let parts = Parts(storage: MemoryStorage())
        guard case .pass(let post, .invalidating) = parts.lookup.look(Self.request("POST")) else {
            Issue.record("a POST is not passed on as an invalidation")
            return
        }
        #expect(post.location.key == parts.key && post.partition.isEmpty, "an invalidation knows its key and reads no partition")
        // The caller's If-None-Match: the record is read (the cache may answer it, RFC 9111 §4.3.2).
        guard case .wait(let conditional) = parts.lookup.look(Self.request("GET", ["If-None-Match": "\"v1\"", "Authorization": "Bearer a"])),
            conditional.scheduling.route == .callerConditional
        else {
            Issue.record("a caller's conditional GET is not looked up as its own")
            return
        }
        #expect(!conditional.scheduling.partition.isEmpty, "a credential's request reads its partition")
        guard case .bypass = parts.lookup.look(Self.request("GET", ["If-Match": "\"v1\""])) else {
            Issue.record("a condition only an origin evaluates is looked up")
            return
        }
        guard case .bypass = parts.lookup.look(Self.request("OPTIONS")) else { Issue.record("an OPTIONS is looked up"); return }
        guard case .bypass = parts.lookup.look(Self.request("GET", ["Range": "bytes=0-1,4-5"])) else {
            Issue.record("several ranges are looked up")
            return
        }
        guard case .bypass = parts.lookup.look(Self.request(url: "https://origin.test/" + String(repeating: "x", count: 20_000))) else {
            Issue.record("a URL too long for a key is looked up")
            return
        }
    }

    @Test("over a MemoryStorage: found without suspending, a miss as nothing; a URL is remembered once something is found")
    func memory() async throws {
        let memory = MemoryStorage()
        let parts = Parts(storage: memory)
        await parts.writer.remove("https://origin.test/other")  // one completed write before the look
        guard case .found(let missing, nil, let writesBefore) = parts.lookup.look(Self.request()) else {
            Issue.record("a miss over memory is not found as nothing, without suspending")
            return
        }
        #expect(!missing.location.remembered && writesBefore == 1, "the look reads the count of writes completed before it")
        let stored = makeRecord(parts.key)
        memory.storeNow(stored)
        guard case .found(_, let record?, _) = parts.lookup.look(Self.request()) else {
            Issue.record("a stored record over memory is not found without suspending")
            return
        }
        #expect(record == stored)
        guard case .found(let again, _, _) = parts.lookup.look(Self.request()) else { Issue.record("no second hit"); return }
        #expect(again.location.remembered, "a URL with a stored record is remembered, so its hits build no key")
    }

    @Test("over a storage that suspends: a plain and a range lookup wait, and their resume reads the record through the storage's async call")
    func suspending() async throws {
        let storage = GatedStorage()
        let parts = Parts(storage: storage)
        storage.inner.storeNow(makeRecord(parts.key))
        for (index, request) in [Self.request(), Self.request("GET", ["Range": "bytes=0-3"])].enumerated() {
            guard case .wait(let waiting) = parts.lookup.look(request), !waiting.afterWrite else {
                Issue.record("a look over a storage that suspends does not wait for its read")
                continue
            }
            // The resume reads through the storage's async call: held at its closed gate, then let go.
            storage.closed.withLock { $0 = true }
            let resumed = Task { await parts.lookup.resume(waiting) }
            while storage.waiting.withLock({ $0 }) == index { await Task.yield() }
            storage.open()
            guard case .found(_, let record?, _) = await resumed.value else {
                Issue.record("the resumed look does not find the record")
                continue
            }
            #expect(record.key == parts.key)
        }
    }

    @Test("a storage that reads without suspending answers the look at once")
    func withoutSuspending() {
        let upper = MemoryStorage()
        let parts = Parts(storage: TieredStorage(memory: upper, lower: InMemoryByteStore()))
        guard case .wait = parts.lookup.look(Self.request()) else { Issue.record("an empty upper tier answers a miss"); return }
        upper.storeNow(makeRecord(parts.key))
        guard case .found(_, let record?, _) = parts.lookup.look(Self.request()) else {
            Issue.record("the upper tier's record is not found without suspending")
            return
        }
        #expect(record.key == parts.key)
    }

    @Test("a store made after its answer pending for the key: the look waits for it, then reads what it stored")
    func pendingWrite() async throws {
        let parts = Parts(storage: MemoryStorage(), writesBehind: true)
        let behind = try #require(parts.behind)
        guard case .found(let scheduling, nil, _) = parts.lookup.look(Self.request()) else {
            Issue.record("no miss to store")
            return
        }
        let state = scheduling.state(in: parts.owner, mode: .fetching(stored: nil))
        let ticket = try #require(behind.begin(state))
        guard case .wait(let waiting) = parts.lookup.look(Self.request()), waiting.afterWrite else {
            Issue.record("a look does not wait for the store pending for its key")
            return
        }
        let done = Locked(false)
        let resumed = Task {
            defer { done.withLock { $0 = true } }
            return await parts.lookup.resume(waiting)
        }
        for _ in 0..<100 { await Task.yield() }
        #expect(!done.withLock { $0 }, "the look goes on before the pending store has landed")
        let entry = try #require(makeRecord(parts.key).variants.first)
        #expect(behind.land(entry, state: state, context: nil, ticket: ticket))
        guard case .found(let after, let record?, _) = await resumed.value else {
            Issue.record("the look that waited does not find what the store landed")
            return
        }
        #expect(record.variants.count == 1 && record.key == parts.key)
        #expect(after.requestTime > waiting.scheduling.requestTime, "a look that waited decides at the time it goes on")
    }

    @Test("through per-core copies: the calling core's copy answers the look, and a store after it is seen")
    func copies() throws {
        let memory = MemoryStorage()
        let parts = Parts(storage: memory, copyBytesPerCore: 1 << 20)
        memory.storeNow(makeRecord(parts.key, bodySize: 10))
        for _ in 0..<200 { _ = parts.lookup.look(Self.request()) }  // each look offers the record for copying
        #expect((parts.lookup.memory?.usage?.copies ?? 0) > 0, "no copy made")
        memory.storeNow(makeRecord(parts.key, bodySize: 20))
        guard case .found(_, let record?, _) = parts.lookup.look(Self.request()) else {
            Issue.record("no hit through the copies")
            return
        }
        #expect(record.variants.first?.body.count == 20, "a copy outlived a store of its key")
    }
}

/// Write-behind's own decisions: which answers it stores after the caller has them, and where.
@Suite("WriteBehind: eligibility and landing", .timeLimit(.minutes(1)))
struct WriteBehindUnitTests {
    /// Write-behind over `memory`, and the scheduling of a GET that found nothing stored.
    static func miss(over memory: MemoryStorage) throws -> (CacheLookupTests.Parts, WriteBehind, CacheScheduling) {
        let parts = CacheLookupTests.Parts(storage: memory, writesBehind: true)
        guard case .found(let scheduling, nil, _) = parts.lookup.look(CacheLookupTests.request()) else { throw NoMiss() }
        return (parts, try #require(parts.behind), scheduling)
    }

    struct NoMiss: Error {}

    @Test("only a GET's own network answer with nothing usable stored is stored behind; one write of a key at a time")
    func eligibility() throws {
        let (parts, behind, scheduling) = try Self.miss(over: MemoryStorage())
        let request = CacheLookupTests.request()
        // (Gone out as the cache's first fetch event, nothing else since; a state whose count is
        // not known never stores behind.)
        let state = scheduling.state(in: parts.owner, mode: .fetching(stored: nil), fetchEvents: 0)
        let answer = RecallResponse(status: 200)
        #expect(
            behind.begin(answer, for: request, sent: request, state: scheduling.state(in: parts.owner, mode: .fetching(stored: nil))) == nil,
            "a request whose count of fetch events is not known")
        var cached = answer
        cached.source = .cache
        var moved = answer
        moved.url = URL(string: "https://origin.test/b")
        let stored = try #require(makeRecord(parts.key).variants.first)
        #expect(behind.begin(cached, for: request, sent: request, state: state) == nil, "an answer not from the network")
        #expect(behind.begin(moved, for: request, sent: request, state: state) == nil, "an answer for another URL")
        #expect(
            behind.begin(answer, for: request, sent: CacheLookupTests.request(url: "https://origin.test/c"), state: state) == nil,
            "a request rewritten below the cache")
        #expect(
            behind.begin(answer, for: request, sent: request, state: scheduling.state(in: parts.owner, mode: .fetching(stored: stored))) == nil,
            "a response stored that the answer may replace or not")
        let ticket = try #require(behind.begin(answer, for: request, sent: request, state: state))
        #expect(behind.begin(answer, for: request, sent: request, state: state) == nil, "a second write of the key while one is held")
        #expect(behind.land(.pass, at: state.location, state: state, context: nil, ticket: ticket) == nil)
        let again = try #require(behind.begin(answer, for: request, sent: request, state: state), "the key is free again once landed")
        #expect(behind.land(.pass, at: state.location, state: state, context: nil, ticket: again) == nil)
    }

    @Test("a landed .store is stored at the key looked up and says where; anything else stores nothing")
    func landing() async throws {
        let memory = MemoryStorage()
        let (parts, behind, scheduling) = try Self.miss(over: memory)
        let state = scheduling.state(in: parts.owner, mode: .fetching(stored: nil))
        let entry = try #require(makeRecord(parts.key).variants.first)
        let other = try #require(parts.locator.location(ofText: "https://origin.test/other"))
        let first = try #require(behind.begin(state))
        #expect(behind.land(.store(entry), at: other, state: state, context: nil, ticket: first) == nil, "another key than the one locked")
        #expect(memory.recordNow(for: parts.key) == nil && memory.recordNow(for: other.key) == nil)
        let second = try #require(behind.begin(state))
        #expect(behind.land(.store(entry), at: state.location, state: state, context: nil, ticket: second)?.key == parts.key)
        #expect(memory.recordNow(for: parts.key)?.variants.count == 1)
        await parts.writer.pending.waitForWritesBegun()
    }
}

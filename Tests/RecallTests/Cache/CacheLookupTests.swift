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

        init(storage: any CacheStorage, writesBehind: Bool = false) {
            let configuration = CacheConfiguration()
            let partitioner = CachePartitioner(secret: [1, 2, 3], configuration: configuration)
            let strategy = CacheStrategy(rules: CacheRules(configuration: configuration), partitioner: partitioner)
            let memory = storage as? MemoryStorage
            locator = CacheLocator(configuration: configuration, partitioner: partitioner)
            writer = CacheWriter(storage: storage, memory: memory, strategy: strategy, counts: CacheCounters())
            let writer = writer
            behind = writesBehind ? memory.map { WriteBehind(memory: $0, writer: writer, strategy: strategy) } : nil
            lookup = CacheLookup(strategy: strategy, locator: locator, partitioner: partitioner, storage: storage,
                                 memory: memory.map { MemoryReads(memory: $0, copyBytesPerCore: 0) }, writer: writer, behind: behind,
                                 now: { Date(timeIntervalSince1970: 1_700_000_000) })
        }

        var key: String { locator.location(ofText: CacheLookupTests.url)!.key }
    }

    static func request(_ method: String = "GET", _ fields: [String: String] = [:], url: String = url) -> URLRequest {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        for (name, value) in fields { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    @Test("routes: an unsafe method passes as an invalidation, the caller's validators pass as theirs, others bypass")
    func routes() {
        let parts = Parts(storage: MemoryStorage())
        guard case .pass(let post, .invalidating) = parts.lookup.look(Self.request("POST")) else {
            Issue.record("a POST is not passed on as an invalidation")
            return
        }
        #expect(post.location.key == parts.key && post.partition.isEmpty, "an invalidation knows its key and reads no partition")
        guard case .pass(let conditional, .callerConditional) = parts.lookup.look(Self.request("GET", ["If-None-Match": "\"v1\"", "Authorization": "Bearer a"])) else {
            Issue.record("a caller's conditional GET is not passed on as its own")
            return
        }
        #expect(!conditional.partition.isEmpty, "a credential's request reads its partition")
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
    func memory() throws {
        let memory = MemoryStorage()
        let parts = Parts(storage: memory)
        guard case .found(let missing, nil, let writesBefore) = parts.lookup.look(Self.request()) else {
            Issue.record("a miss over memory is not found as nothing, without suspending")
            return
        }
        #expect(!missing.location.remembered && writesBefore == parts.writer.writes)
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

    @Test("over a storage that suspends: a plain and a range lookup wait, and their resume finds the record")
    func suspending() async throws {
        let storage = GatedStorage()
        let parts = Parts(storage: storage)
        storage.inner.storeNow(makeRecord(parts.key))
        for request in [Self.request(), Self.request("GET", ["Range": "bytes=0-3"])] {
            guard case .wait(let waiting) = parts.lookup.look(request), !waiting.afterWrite else {
                Issue.record("a look over a storage that suspends does not wait for its read")
                continue
            }
            guard case .found(_, let record?, _) = await parts.lookup.resume(waiting) else {
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
        let state = scheduling.state(mode: .fetching(stored: nil))
        let ticket = try #require(behind.begin(state))
        guard case .wait(let waiting) = parts.lookup.look(Self.request()), waiting.afterWrite else {
            Issue.record("a look does not wait for the store pending for its key")
            return
        }
        async let resumed = parts.lookup.resume(waiting)
        let entry = try #require(makeRecord(parts.key).variants.first)
        #expect(behind.land(entry, state: state, context: nil, ticket: ticket))
        guard case .found(_, let record?, _) = await resumed else {
            Issue.record("the look that waited does not find what the store landed")
            return
        }
        #expect(record.variants.count == 1 && record.key == parts.key)
    }
}

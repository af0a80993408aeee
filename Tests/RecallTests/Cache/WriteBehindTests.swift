import Foundation
@testable import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue #15, target 2: a plain miss over a memory storage is stored after its caller has the
/// answer. Each test holds the store back (the cache's write-behind queue suspended) to show
/// that nothing reads or writes the key around it.
@Suite("HTTPCache: write-behind of a miss", .timeLimit(.minutes(1)))
struct WriteBehindTests {
    @Test(
        "held back, the store has not happened when send returns; the next request for the URL waits for it and hits",
        arguments: [true, false])
    func readYourWrites(coalescing: Bool) async throws {
        // Without coalescing, no lead makes the second request wait: only the pending store does.
        let h = harness(coalescing: coalescing)
        h.origin("/a", [(200, ["Cache-Control": "max-age=60"], "one"), (200, ["Cache-Control": "max-age=60"], "two")])
        let held = Held(try #require(h.cache.writeBehindQueue))
        defer { held.release() }
        #expect(try await h.get("/a").bodyText == "one")
        #expect(h.cache.statistics.stores == 0, "the store waits behind the suspended queue")
        let again = Task { try await h.get("/a") }
        try await waitUntil("the second request waits for the store") { waiting(in: h, for: "/a") == 1 }
        #expect(h.mock.requests(for: "/a").count == 1, "the second request waits for the store, not the origin")
        held.release()
        let answer = try await again.value
        #expect(answer.source == .cache)
        #expect(answer.bodyText == "one")
        #expect(h.cache.statistics.stores == 1)
    }

    @Test("an invalidation after the miss comes after its store: the next GET goes to the origin")
    func invalidationAfterStore() async throws {
        let h = harness()
        h.origin("/b", [(200, ["Cache-Control": "max-age=60"], "old"), (200, ["Cache-Control": "max-age=60"], "new")])
        h.origin("/b", method: "POST", [(204, [:], "")])
        let held = Held(try #require(h.cache.writeBehindQueue))
        defer { held.release() }
        _ = try await h.get("/b")
        var post = URLRequest(url: URL(string: h.base + "/b")!)
        post.httpMethod = "POST"
        let posted = Task { try await h.pipeline.send(post) }
        try await waitUntil("the POST waits for the pending store") { waiting(in: h, for: "/b") == 1 }
        #expect(h.mock.requests(for: "/b").count == 1, "the POST waits for the pending store before it goes out")
        held.release()
        #expect(try await posted.value.status == 204)
        #expect(h.cache.statistics.stores == 1)
        #expect(h.cache.statistics.invalidations == 1, "the POST found the stored response and removed it")
        let after = try await h.get("/b")
        #expect(after.source == .network)
        #expect(after.bodyText == "new", "the store of the first GET landed before the POST's invalidation, never after")
    }

    @Test(
        "a miss answered while another miss is in flight is stored before its caller has the answer; alone, after it",
        arguments: [true, false])
    func inlineUnderLoad(coalescing: Bool) async throws {
        // (Without coalescing, a miss leads nothing, but counts among the fetches under way all the same.)
        let h = harness(coalescing: coalescing)
        for path in ["/first", "/second", "/third"] { h.origin(path, [(200, ["Cache-Control": "max-age=60"], path)]) }
        let held = Held(try #require(h.cache.writeBehindQueue))
        defer { held.release() }
        _ = try await h.get("/first")
        #expect(h.cache.statistics.stores == 0, "alone, the miss is stored after its answer (held back here)")
        // The first miss still leads its key until its store lands: the second is not alone.
        _ = try await h.get("/second")
        // (Required: a store still held back would make the next request wait for it.)
        try #require(h.cache.statistics.stores == 1, "with another miss in flight, the store is made before the answer")
        #expect(try await h.get("/second").source == .cache)
        held.release()
        await h.cache.flush()
        #expect(h.cache.statistics.stores == 2)
        // Alone again: stored after the answer.
        let again = Held(try #require(h.cache.writeBehindQueue))
        defer { again.release() }
        _ = try await h.get("/third")
        #expect(h.cache.statistics.stores == 2, "alone again, the store waits behind the queue")
        again.release()
        await h.cache.flush()
        #expect(h.cache.statistics.stores == 3)
        #expect(try await h.get("/first").source == .cache)
    }

    @Test(
        "a miss during which another request went to the origin and came back is stored before its answer: the cores were busy",
        arguments: [true, false])
    func inlineAfterOthersCameAndWent(coalescing: Bool) async throws {
        let h = harness(coalescing: coalescing)
        h.origin("/other", [(200, ["Cache-Control": "max-age=60"], "other")])
        // While the origin works on /slow, a later request for /other goes out and comes back.
        h.mock.route(
            "GET", "/slow",
            .handler { [h] _ in
                _ = try await h.get("/other")
                return fresh("slow")
            })
        let held = Held(try #require(h.cache.writeBehindQueue))
        defer { held.release() }
        #expect(try await h.get("/slow").bodyText == "slow")
        // (/other was stored before its answer too: /slow was in flight. Required: a store still
        // held back would make the next request wait for it.)
        try #require(h.cache.statistics.stores == 2, "no fetch under way at /slow's answer, but one began after it: stored inline")
        #expect(try await h.get("/slow").source == .cache)
    }

    @Test(
        "a miss answered after another request, in flight when it went out, came back is stored before its answer",
        arguments: [true, false])
    func inlineAfterOtherEnded(coalescing: Bool) async throws {
        let h = harness(coalescing: coalescing)
        let early = Gate()
        h.mock.route(
            "GET", "/early",
            .handler { _ in
                await early.wait()
                return fresh("early")
            })
        let earlyTask = Locked<Task<RecallResponse, any Error>?>(nil)
        // While the origin works on /slow, the earlier request is let go and comes back.
        h.mock.route(
            "GET", "/slow",
            .handler { _ in
                early.open()
                _ = try await earlyTask.withLock { $0 }?.value
                return fresh("slow")
            })
        let held = Held(try #require(h.cache.writeBehindQueue))
        defer { held.release() }
        earlyTask.withLock { $0 = Task { try await h.get("/early") } }
        try await waitUntil("the earlier request is at the origin") { early.waiting == 1 }
        #expect(try await h.get("/slow").bodyText == "slow")
        // (/early was stored before its answer: /slow was in flight. Required: a store still held
        // back would make the next request wait for it.)
        try #require(h.cache.statistics.stores == 2, "nothing under way at /slow's answer, but /early ended meanwhile: stored inline")
        #expect(try await h.get("/slow").source == .cache)
    }

    @Test("back to back, a lone miss stores behind its answer even when the store before it lands while it is fetched")
    func backToBack() async throws {
        let h = harness()
        // The second URL's key pends in another stripe than the first's: its lookup does not wait for that store.
        func stripe(_ path: String) -> Int? { h.cache.locator.location(of: h.request(path))?.stripe }
        let second = try #require((0..<64).map { "/b\($0)" }.first { stripe($0) != stripe("/a") })
        h.origin("/a", [(200, ["Cache-Control": "max-age=60"], "a")])
        let queue = try #require(h.cache.writeBehindQueue)
        let held = Held(queue)
        defer { held.release() }
        let heldAgain = Locked<Held?>(nil)
        defer { heldAgain.withLock { $0 }?.release() }
        // While the origin works on the second miss, the first one's store lands; then stores are held again.
        h.mock.route(
            "GET", second,
            .handler { [h] _ in
                held.release()
                await h.cache.flush()
                heldAgain.withLock { $0 = Held(queue) }
                return fresh("b")
            })
        _ = try await h.get("/a")
        #expect(h.cache.statistics.stores == 0, "alone, the first miss is stored after its answer (held back here)")
        _ = try await h.get(second)
        #expect(h.cache.statistics.stores == 1, "alone too, the second miss is stored after its answer: only the first store has landed")
        heldAgain.withLock { $0 }?.release()
        await h.cache.flush()
        #expect(h.cache.statistics.stores == 2)
    }

    @Test("with coalescing off, a miss that failed or went out uncoalesced ends its count: the next lone miss stores after its answer")
    func countEndsWithoutCoalescing() async throws {
        let h = harness(coalescing: false)
        h.mock.route("GET", "/fails", .error(URLError(.networkConnectionLost)))
        h.origin("/ranged", [(206, ["Cache-Control": "max-age=60", "Content-Range": "bytes 0-1/4"], "ab")])
        h.origin("/lone", [(200, ["Cache-Control": "max-age=60"], "lone")])
        await #expect(throws: URLError.self) { try await h.get("/fails") }
        _ = try await h.get("/ranged", headers: ["Range": "bytes=0-1"])
        await h.cache.flush()
        let stores = h.cache.statistics.stores
        let held = Held(try #require(h.cache.writeBehindQueue))
        defer { held.release() }
        _ = try await h.get("/lone")
        #expect(h.cache.statistics.stores == stores, "alone (the failed and the ranged request counted no more): stored behind")
        held.release()
        await h.cache.flush()
        #expect(h.cache.statistics.stores == stores + 1)
    }

    @Test("flush waits for the stores held back; with write-behind off (the default), send returns after the store")
    func flushWaits() async throws {
        // (The first miss stores behind its answer; while its store is pending it counts as a
        // fetch under way, so the other two store before theirs.)
        let h = harness()
        for path in ["/1", "/2", "/3"] { h.origin(path, [(200, ["Cache-Control": "max-age=60"], path)]) }
        let held = Held(try #require(h.cache.writeBehindQueue))
        defer { held.release() }
        for path in ["/1", "/2", "/3"] { _ = try await h.get(path) }
        #expect(h.cache.statistics.stores == 2, "the first store held back, the other two made before their answers")
        let flushed = Locked(false)
        let flushing = Task {
            await h.cache.flush()
            flushed.withLock { $0 = true }
        }
        try await waitUntil("the flush waits for the stores held back") { h.cache.writer.pending.waitingFlushes == 1 }
        #expect(!flushed.withLock { $0 })
        held.release()
        await flushing.value
        #expect(h.cache.statistics.stores == 3)
        #expect(h.cache.storage.statistics.count == 3)

        // Off (the default): no queue, and the store has landed when send returns.
        let strict = CacheHarness()
        strict.origin("/s", [(200, ["Cache-Control": "max-age=60"], "s")])
        #expect(strict.cache.writeBehindQueue == nil, "without write-behind there is no queue to store after the answer")
        _ = try await strict.get("/s")
        #expect(strict.cache.statistics.stores == 1)
    }

    @Test("a flush waits for the writes begun before it, not for a moment with none pending (steady traffic)")
    func flushUnderTraffic() async throws {
        let pending = PendingWrites()
        let (a, b) = (PendingWrites.stripe(of: "a"), PendingWrites.stripe(of: "b"))
        try #require(a != b)
        let first = pending.begin(stripe: a)
        #expect(pending.mayHold(stripe: a))
        let flushed = Locked(false)
        // The flush runs on an executor this test steps, so the test knows when it has begun
        // waiting: a 20 ms sleep did not, and on a loaded machine the second write could begin
        // before the flush did (then the flush rightly waits for it too, and the test hung).
        let executor = StepExecutor()
        let flushing = Task(executorPreference: executor) {
            await pending.waitForWritesBegun()
            flushed.withLock { $0 = true }
        }
        await executor.runUntilIdle()  // the flush has begun waiting (for `first`)
        let second = pending.begin(stripe: b)  // begun after the flush: not waited for
        #expect(!flushed.withLock { $0 })
        pending.end(first, stripe: a)
        await executor.runUntilIdle()  // the flush, woken by the end of `first`, runs to its end
        #expect(flushed.withLock { $0 }, "the flush waited for a write begun after it")
        #expect(!pending.mayHold(stripe: a))
        #expect(pending.mayHold(stripe: b))
        pending.end(second, stripe: b)
        await executor.runUntilIdle()  // (lets a flush that wrongly waited for `second` end too)
        await flushing.value
        #expect(!pending.mayHold(stripe: b))
        await pending.waitForWritesBegun()  // none under way: at once
    }

    @Test("a removal made around the cache while a store is pending (the storage's removeAll, another cache on it) is not undone")
    func removalAroundTheCache() async throws {
        let storage = MemoryStorage()
        let h = CacheHarness(configuration: writingBehind(), storage: storage)
        let other = HTTPCache(storage: storage)
        h.origin("/p", [(200, ["Cache-Control": "max-age=60"], "private")])
        h.origin("/q", [(200, ["Cache-Control": "max-age=60"], "q")])
        let held = Held(try #require(h.cache.writeBehindQueue))
        defer { held.release() }
        _ = try await h.get("/p")
        await storage.removeAll()  // a logout, say: nothing stored before it may survive it
        held.release()
        await h.cache.flush()
        #expect(storage.statistics.count == 0, "the store decided before removeAll was dropped")
        #expect(h.cache.statistics.stores == 0)
        #expect(try await h.get("/p").source == .network)
        await h.cache.flush()  // (this store lands, and its lead ends, before the queue is held again)

        // Another cache on the same storage invalidates the URL while this cache's store is pending:
        // the storage's write order makes its removal wait for that store, then come after it.
        let again = Held(try #require(h.cache.writeBehindQueue))
        defer { again.release() }
        _ = try await h.get("/q")
        var post = URLRequest(url: URL(string: h.base + "/q")!)
        post.httpMethod = "POST"
        h.origin("/q", method: "POST", [(204, [:], "")])
        let posted = Task { try await Pipeline(transport: h.mock, hooks: [other]).send(post) }
        let key = try #require(h.cache.key(for: h.request("/q")))
        let order = try #require(storage.writeOrder)
        try await waitUntil("the other cache's removal waits for the pending store") { order.keys.waiters(for: HashedKey(key)) == 1 }
        again.release()
        #expect(try await posted.value.status == 204)
        await h.cache.flush()
        #expect(try await h.get("/q").source == .network, "the other cache's invalidation stands")
    }

    @Test("a removal of another URL, in the cache or around it, leaves a pending store alone")
    func otherRemovals() async throws {
        let storage = MemoryStorage()
        let h = CacheHarness(configuration: writingBehind(), storage: storage)
        // (Another URL whose key shares no stripe of removal counts with /x's: a removal in its
        // stripe would lawfully refuse /x's store — a lost entry, never a wrong one. Key hashes
        // are seeded per process.)
        let stripe = { (path: String) in CacheWriter.epochStripe(of: h.cache.key(for: h.request(path)) ?? "") }
        let y = try #require((0..<8).map { "/y\($0)" }.first { stripe($0) != stripe("/x") })
        for path in ["/x", y, "/z"] { h.origin(path, [(200, ["Cache-Control": "max-age=60"], path)]) }
        h.origin(y, method: "DELETE", [(204, [:], "")])
        _ = try await h.get(y)
        _ = try await h.get("/z")
        await h.cache.flush()
        let held = Held(try #require(h.cache.writeBehindQueue))
        defer { held.release() }
        _ = try await h.get("/x")
        _ = try await h.pipeline.send(h.request(y, method: "DELETE"))  // through the cache
        await storage.remove(try #require(h.cache.key(for: h.request("/z"))))  // around it
        held.release()
        await h.cache.flush()
        #expect(try await h.get("/x").source == .cache)
        #expect(try await h.get(y).source == .network)
        #expect(try await h.get("/z").source == .network)
    }

    @Test("other partitions and Vary variants of the URL are kept by a store made behind the answer")
    func keepsOtherResponses() async throws {
        let h = harness()
        h.origin("/v", [(200, ["Cache-Control": "max-age=60", "Vary": "Accept-Language"], "v")])
        _ = try await h.get("/v", headers: ["Accept-Language": "en"])
        _ = try await h.get("/v", headers: ["Accept-Language": "fr"])
        _ = try await h.get("/v", headers: ["Authorization": "Bearer alice"])
        await h.cache.flush()
        let key = try #require(h.cache.key(for: URLRequest(url: URL(string: h.base + "/v")!)))
        let record = try #require(await h.cache.storage.record(for: key))
        #expect(record.variants.count == 3)
        for headers: [String: String] in [["Accept-Language": "en"], ["Accept-Language": "fr"], ["Authorization": "Bearer alice"]] {
            #expect(try await h.get("/v", headers: headers).source == .cache)
        }
    }

    @Test("many tasks missing and hitting the same URLs: every miss is stored once, every later request hits")
    func concurrent() async throws {
        let h = harness()
        for index in 0..<20 { h.origin("/c\(index)", [(200, ["Cache-Control": "max-age=60"], "c\(index)")]) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for round in 0..<40 { _ = try await h.get("/c\((task + round) % 20)") }
                }
            }
            try await group.waitForAll()
        }
        await h.cache.flush()
        #expect(h.cache.statistics.stores == 20)
        #expect(h.mock.requests.count == 20, "coalesced misses and waiting lookups: one origin request per URL")
        for index in 0..<20 { #expect(try await h.get("/c\(index)").source == .cache) }
    }
}

/// A task executor that runs its jobs only when a test says so (``runUntilIdle()``), on a
/// dispatch thread: once that returns, the tasks on it have gone as far as they can without
/// something from outside them — a task waiting on a continuation has registered it.
final class StepExecutor: TaskExecutor {
    private let jobs = Locked<[UnownedJob]>([])

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
    }

    /// Runs every job queued, and those they queue, until none is left.
    func runUntilIdle() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                while let job = self.jobs.withLock({ jobs -> UnownedJob? in jobs.isEmpty ? nil : jobs.removeFirst() }) {
                    job.runSynchronously(on: self.asUnownedTaskExecutor())
                }
                done.resume()
            }
        }
    }
}

/// A response fresh for a minute, with `text` as its body.
private func fresh(_ text: String) -> RecallResponse {
    RecallResponse(status: 200, headers: ["Cache-Control": "max-age=60"], body: Data(text.utf8))
}

/// A cache harness writing behind (not the default), with coalescing on or off.
private func harness(coalescing: Bool = true) -> CacheHarness {
    CacheHarness(configuration: writingBehind(coalescing: coalescing))
}

/// A configuration that writes behind, with coalescing on or off.
private func writingBehind(coalescing: Bool = true) -> CacheConfiguration {
    var configuration = CacheConfiguration()
    configuration.writesBehind = true
    configuration.coalescesRequests = coalescing
    return configuration
}

/// How many requests wait for `path`'s pending store: for its key's write lock.
private func waiting(in h: CacheHarness, for path: String) -> Int {
    guard let key = h.cache.key(for: h.request(path)) else { return 0 }
    return h.cache.writer.keys.waiters(for: HashedKey(key))
}

/// Holds a dispatch queue suspended until released (once, also from a `defer`: a queue freed
/// while suspended would crash the process).
final class Held: Sendable {
    private let queue: DispatchQueue
    private let suspended = Locked(true)

    init(_ queue: DispatchQueue) {
        self.queue = queue
        queue.suspend()
    }

    func release() {
        if suspended.withLock({ was in
            defer { was = false }; return was
        }) {
            queue.resume()
        }
    }
}

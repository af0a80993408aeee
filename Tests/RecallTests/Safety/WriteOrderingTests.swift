import Foundation
import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension VersionedOrigin {
    /// The race of a write: a GET through `slow` reaches the origin and is held; a PUT, then a GET,
    /// go through `writer`; then the held GET is answered with the version from before the PUT.
    func slowGetAcrossAPut(through slow: Pipeline, writeThrough writer: Pipeline) async throws {
        let race = try await race(through: slow, writeThrough: writer)
        #expect(race.putStatus == 204)
        #expect(race.afterPut.bodyText == "v2")  // after the PUT: the new version, stored
        #expect(race.early.bodyText == "v1")  // it began before the PUT: its own answer
    }
}

@Suite("Safety: no stale data after a completed write")
struct WriteOrderingTests {
    enum Store: String, CaseIterable, Sendable { case memory, disk }

    /// A cache over `store`, and the directory of a disk store (removed with it: keep it to the
    /// end of the test).
    private func cache(_ store: Store, coalescing: Bool) -> (HTTPCache, TemporaryDirectory?) {
        var configuration = CacheConfiguration()
        configuration.coalescesRequests = coalescing
        let directory = store == .disk ? TemporaryDirectory() : nil
        return (HTTPCache(storage: directory?.disk() ?? MemoryStorage(), configuration: configuration), directory)
    }

    @Test("a GET answered before a PUT but arriving after it never overwrites what a later GET stored", arguments: Store.allCases)
    func lateAnswerIsNotStored(store: Store) async throws {
        let origin = VersionedOrigin()
        let (cache, directory) = cache(store, coalescing: false)
        defer { withExtendedLifetime(directory) {} }
        let pipeline = Pipeline(transport: origin.mock, hooks: [cache])
        try await origin.slowGetAcrossAPut(through: pipeline, writeThrough: pipeline)
        await cache.flush()
        let later = try await pipeline.send(VersionedOrigin.request("GET"))
        #expect(later.bodyText == "v2")
        #expect(later.source == .cache)
    }

    @Test("a GET that starts after a PUT completed never joins a fetch that began before it", arguments: Store.allCases)
    func noJoiningAnOlderFetch(store: Store) async throws {
        let origin = VersionedOrigin()
        let (cache, directory) = cache(store, coalescing: true)
        defer { withExtendedLifetime(directory) {} }
        let pipeline = Pipeline(transport: origin.mock, hooks: [cache])
        let early = Task { try await pipeline.send(VersionedOrigin.request("GET")) }
        try await waitUntil("the first GET at the origin") { origin.getsSeen == 1 }
        #expect(try await pipeline.send(VersionedOrigin.request("PUT")).status == 204)
        let after = Task { try await pipeline.send(VersionedOrigin.request("GET")) }
        // It either waits for the early fetch (the defect) or goes to the origin itself.
        try await waitUntil("the second GET waiting or at the origin") { cache.statistics.waiting == 1 || origin.getsSeen == 2 }
        origin.firstGet.open()
        #expect(try await after.value.bodyText == "v2")
        #expect(try await early.value.bodyText == "v1")
        await cache.flush()
        #expect(try await pipeline.send(VersionedOrigin.request("GET")).bodyText == "v2")
    }
}

/// Issue #53, point 4: "no stale data after a completed write" holds between two caches over
/// one storage — the slow GET made through one, the PUT and the next GET through the other.
@Suite("Safety: no stale data after a completed write through another cache over the same storage")
struct SharedStorageWriteOrderingTests {
    enum Sharing: String, CaseIterable, Sendable {
        /// Both caches over one MemoryStorage, one DiskStorage, one TieredStorage.
        case memory, disk, tiered
        /// One cache over a TieredStorage, the other over its lower tier alone.
        case tieredAndLower
    }

    /// Two caches over one storage shared as `sharing` says (in `directory`).
    /// With `coordinator`, both ask it, as replicas of a fleet would.
    private func caches(
        _ sharing: Sharing, coalescing: Bool, in directory: URL, coordinator: (any FetchCoordinator)? = nil
    ) throws -> (HTTPCache, HTTPCache) {
        var configuration = CacheConfiguration()
        configuration.coalescesRequests = coalescing
        func pair(_ a: any CacheStorage, _ b: any CacheStorage) -> (HTTPCache, HTTPCache) {
            (
                HTTPCache(storage: a, configuration: configuration, coordinator: coordinator),
                HTTPCache(storage: b, configuration: configuration, coordinator: coordinator)
            )
        }
        switch sharing {
        case .memory:
            let storage = MemoryStorage()
            return pair(storage, storage)
        case .disk:
            let storage = try DiskStorage(directory: directory)
            return pair(storage, storage)
        case .tiered:
            let storage = TieredStorage(memory: MemoryStorage(), lower: try DiskStorage(directory: directory))
            return pair(storage, storage)
        case .tieredAndLower:
            let disk = try DiskStorage(directory: directory)
            return pair(TieredStorage(memory: MemoryStorage(), lower: disk), disk)
        }
    }

    @Test(
        "a GET through cache A that began before a PUT through cache B is not stored over what B stored after it",
        arguments: Sharing.allCases, [false, true])
    func lateAnswerFromTheOtherCache(sharing: Sharing, coalescing: Bool) async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = VersionedOrigin()
        let (a, b) = try caches(sharing, coalescing: coalescing, in: directory)
        let replicaA = Pipeline(transport: origin.mock, hooks: [a])
        let replicaB = Pipeline(transport: origin.mock, hooks: [b])
        try await origin.slowGetAcrossAPut(through: replicaA, writeThrough: replicaB)
        await a.flush()
        await b.flush()
        for (name, replica) in [("B", replicaB), ("A", replicaA)] {
            let later = try await replica.send(VersionedOrigin.request("GET"))
            #expect(later.bodyText == "v2", "replica \(name) served the answer from before the PUT")
        }
    }

    @Test(
        "with a fetch coordinator too: a GET through B after B's PUT is never handed A's answer from before it",
        arguments: Sharing.allCases)
    func coordinatedCaches(sharing: Sharing) async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = VersionedOrigin()
        let (a, b) = try caches(sharing, coalescing: true, in: directory, coordinator: InMemoryFetchCoordinator(leaseTime: .seconds(600)))
        let replicaA = Pipeline(transport: origin.mock, hooks: [a])
        let replicaB = Pipeline(transport: origin.mock, hooks: [b])
        let early = Task { try await replicaA.send(VersionedOrigin.request("GET")) }
        try await waitUntil("the first GET at the origin") { origin.getsSeen == 1 }
        #expect(try await replicaB.send(VersionedOrigin.request("PUT")).status == 204)
        // B may wait for A's claim (a storage that counts no removals names the fleet's fetch by its
        // key alone): A's answer comes, and is not B's.
        let after = Task { try await replicaB.send(VersionedOrigin.request("GET")) }
        origin.firstGet.open()
        #expect(try await early.value.bodyText == "v1")
        #expect(try await after.value.bodyText == "v2")
        await a.flush()
        await b.flush()
        for replica in [replicaA, replicaB] { #expect(try await replica.send(VersionedOrigin.request("GET")).bodyText == "v2") }
    }
}

/// Adds a bearer token where the pipeline cannot see it, as a middleware after
/// `RecallMiddleware` does in an OpenAPI client.
private struct TokenBelow: Transport {
    let token: String
    let origin: MockTransport
    func send(_ request: URLRequest) async throws -> RecallResponse {
        var request = request
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        return try await origin.send(request)
    }
}

@Suite("Safety: credentials the cache cannot see")
struct UnseenCredentialsTests {
    @Test("with credentials added below the cache, a private answer is never served to another caller; a public one is")
    func unseenCredentials() async throws {
        let origin = MockTransport()
        let served = Locked(0)
        origin.route("GET", "/inbox") { request in
            served.withLock { $0 += 1 }
            let owner = request.value(forHTTPHeaderField: "Authorization") ?? "nobody"
            return RecallResponse(status: 200, headers: ["Cache-Control": "private, max-age=600"], body: Data(owner.utf8), url: request.url)
        }
        origin.route("GET", "/news", .text("news", headers: ["Cache-Control": "public, max-age=600"]))
        let cache = HTTPCache()
        let url = "https://origin.test"
        func pipeline(_ token: String) -> Pipeline { Pipeline(transport: TokenBelow(token: token, origin: origin), hooks: [cache]) }
        try await HTTPCache.$credentialsMayBeAddedBelow.withValue(true) {
            let alice = try await pipeline("alice").send(URLRequest(url: URL(string: url + "/inbox")!))
            let bob = try await pipeline("bob").send(URLRequest(url: URL(string: url + "/inbox")!))
            #expect(alice.bodyText == "Bearer alice")
            #expect(bob.bodyText == "Bearer bob")
            _ = try await pipeline("alice").send(URLRequest(url: URL(string: url + "/news")!))
            let shared = try await pipeline("bob").send(URLRequest(url: URL(string: url + "/news")!))
            #expect(shared.source == .cache)
        }
        #expect(served.withLock { $0 } == 2)
        #expect(origin.count(for: "/news") == 1)
    }
}

@Suite("Safety: a partition key held outside the store")
struct CacheSecretTests {
    @Test("a configured secret keys the credential hashes: the storage's own secret cannot match them; too short a key is refused")
    func configuredSecret() async throws {
        let storage = MemoryStorage()
        let origin = MockTransport()
        origin.route("GET", "/inbox", .text("mine", headers: ["Cache-Control": "private, max-age=600"]))
        var configuration = CacheConfiguration()
        configuration.secret = try CacheSecret(Array(repeating: 7, count: 32))
        var request = URLRequest(url: URL(string: "https://origin.test/inbox")!)
        request.setValue("Bearer alice", forHTTPHeaderField: "Authorization")
        let keyed = HTTPCache(storage: storage, configuration: configuration)
        _ = try await Pipeline(transport: origin, hooks: [keyed]).send(request)
        await keyed.flush()
        #expect(try await Pipeline(transport: origin, hooks: [keyed]).send(request).source == .cache)
        // Same storage, the storage's own secret (what a reader of the records has): no match.
        let unkeyed = HTTPCache(storage: storage)
        #expect(try await Pipeline(transport: origin, hooks: [unkeyed]).send(request).source == .network)
        // Another process with the same configured key matches.
        let again = HTTPCache(storage: storage, configuration: configuration)
        #expect(try await Pipeline(transport: origin, hooks: [again]).send(request).source == .cache)
        #expect(throws: CacheSecret.TooShort.self) { try CacheSecret(Array(repeating: 1, count: 16)) }
        #expect(throws: CacheSecret.TooShort.self) { try CacheSecret(base64: "not base64!") }
        #expect(try CacheSecret(base64: Data(repeating: 9, count: 32).base64EncodedString()).bytes.count == 32)
    }
}

extension UnseenCredentialsTests {
    /// Found in review: with credentials added below, a response that varies on a credential
    /// field was matched on the fields the cache sees — without the credential — so every user
    /// got the first one's variant.
    @Test("with credentials added below, answers that vary on a credential field or carry s-maxage are not shared")
    func unseenCredentialVary() async throws {
        let origin = MockTransport()
        origin.route("GET", "/vary") { request in
            let owner = request.value(forHTTPHeaderField: "Authorization") ?? "nobody"
            return RecallResponse(
                status: 200, headers: ["Cache-Control": "public, max-age=600", "Vary": "Authorization"],
                body: Data(owner.utf8), url: request.url)
        }
        origin.route("GET", "/smaxage", .text("s", headers: ["Cache-Control": "public, max-age=3600, s-maxage=0"]))
        let cache = HTTPCache()
        func pipeline(_ token: String) -> Pipeline { Pipeline(transport: TokenBelow(token: token, origin: origin), hooks: [cache]) }
        try await HTTPCache.$credentialsMayBeAddedBelow.withValue(true) {
            _ = try await pipeline("alice").send(URLRequest(url: URL(string: "https://origin.test/vary")!))
            #expect(try await pipeline("bob").send(URLRequest(url: URL(string: "https://origin.test/vary")!)).bodyText == "Bearer bob")
            _ = try await pipeline("alice").send(URLRequest(url: URL(string: "https://origin.test/smaxage")!))
            #expect(try await pipeline("bob").send(URLRequest(url: URL(string: "https://origin.test/smaxage")!)).source == .network)
        }
    }
}

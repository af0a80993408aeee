import Foundation
@testable import Recall
@testable import RecallServices
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue #10, points 1–6: a stored response reaches only the caller it was made for. The
/// security cases run through `HTTPCache` over a real `DiskStorage`.
@Suite("Safety: a response reaches only the caller it was made for", .timeLimit(.minutes(1)))
struct ConfidentialityTests {
    /// Every byte the cache wrote in `directory`.
    static func bytesOnDisk(_ directory: URL) throws -> Data {
        var all = Data()
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            all.append(try Data(contentsOf: directory.appendingPathComponent(name)))
        }
        return all
    }

    // MARK: 1. Credentials added inside the pipeline

    @Test("a token added by an auth-refresh retrier partitions the response: an anonymous caller never gets it")
    func refreshedCredential() async throws {
        let (h, _, directory) = try CacheHarness.onDisk(
            retrierFactory: NilRetrierFactory().refreshingAuth { request in
                var request = request
                request.setValue("Bearer alice-token", forHTTPHeaderField: "Authorization")
                return request
            })
        defer { try? FileManager.default.removeItem(at: directory) }
        h.mock.route("GET", "/me") { request in
            guard request.value(forHTTPHeaderField: "Authorization") == "Bearer alice-token" else {
                return .text("who are you?", status: 401)
            }
            return .text("alice's private data", headers: ["Cache-Control": "private, max-age=600"])
        }
        #expect(try await h.get("/me").bodyText == "alice's private data")  // 401, refresh, 200 stored
        #expect(h.cache.statistics.stores == 1)
        // Another pipeline on the same cache, without the refreshing retrier: anonymous.
        let anonymous = Pipeline(transport: h.mock, hooks: [h.cache])
        let response = try await anonymous.send(h.request("/me")).collected()
        #expect(response.status == 401)
        #expect(response.bodyText == "who are you?")
        #expect(response.source == .network)
        // The token holder is served from the cache.
        let again = try await anonymous.send(h.request("/me", headers: ["Authorization": "Bearer alice-token"])).collected()
        #expect(again.source == .cache)
        #expect(again.bodyText == "alice's private data")
    }

    @Test("a service's API key in a field of its own choosing partitions a shared cache between tenants")
    func typedApiKey() async throws {
        #expect(TenantParts.cache.storage is DiskStorage)
        TenantParts.mock.route("GET", "/v1/report") { request in
            let tenant = request.value(forHTTPHeaderField: "X-Tenant-Key") ?? "nobody"
            return .text(#"{"tenant":"\#(tenant)"}"#, headers: ["Cache-Control": "max-age=600", "Content-Type": "application/json"])
        }
        #expect(try await Report().call(on: TenantService(key: "tenant-a")).tenant == "tenant-a")
        #expect(try await Report().call(on: TenantService(key: "tenant-b")).tenant == "tenant-b")
        #expect(try await Report().call(on: TenantService(key: "tenant-a")).tenant == "tenant-a")
        #expect(TenantParts.mock.count(for: "/v1/report") == 2)  // one call per tenant; the repeat is a hit
    }

    // MARK: 2. Invalidation crosses partitions

    @Test("a successful PUT with credentials invalidates the URL in every partition, the anonymous one included")
    func invalidationCrossesPartitions() async throws {
        let (h, _, directory) = try CacheHarness.onDisk()
        defer { try? FileManager.default.removeItem(at: directory) }
        let version = Locked(1)
        h.mock.route("GET", "/doc") { _ in .text("version \(version.withLock { $0 })", headers: ["Cache-Control": "max-age=600"]) }
        h.mock.route("PUT", "/doc") { _ in
            version.withLock { $0 += 1 }
            return .text("saved")
        }
        try await h.get("/doc")
        try await h.get("/doc", headers: ["Authorization": "Bearer editor"])
        #expect(try await h.get("/doc").source == .cache)
        let put = try await h.pipeline.send(h.request("/doc", method: "PUT", headers: ["Authorization": "Bearer editor"])).collected()
        #expect(put.status == 200)
        let anonymous = try await h.get("/doc")
        #expect(anonymous.source == .network)
        #expect(anonymous.bodyText == "version 2")
        let editor = try await h.get("/doc", headers: ["Authorization": "Bearer editor"])
        #expect(editor.source == .network)
        #expect(editor.bodyText == "version 2")
    }

    // MARK: 3. Secrets at rest

    @Test("nothing secret reaches the disk: Vary credential values, Set-Cookie, userinfo, query tokens; Set-Cookie is never replayed")
    func secretsAtRest() async throws {
        let (h, disk, directory) = try CacheHarness.onDisk()
        defer { try? FileManager.default.removeItem(at: directory) }
        h.origin(
            "/profile",
            headers: [
                "Cache-Control": "private, max-age=600", "Vary": "Cookie, Authorization",
                "Set-Cookie": "session=SETCOOKIE-SECRET; HttpOnly", "Authentication-Info": "nextnonce=AUTHINFO-SECRET"
            ])
        h.origin("/download", headers: ["Cache-Control": "max-age=600"])
        let first = try await h.get("/profile", headers: ["Cookie": "sid=COOKIE-SECRET", "Authorization": "Bearer TOKEN-SECRET"])
        #expect(first.headers["Set-Cookie"] != nil)  // the caller who caused it gets it
        let hit = try await h.get("/profile", headers: ["Cookie": "sid=COOKIE-SECRET", "Authorization": "Bearer TOKEN-SECRET"])
        #expect(hit.source == .cache)
        #expect(hit.headers["Set-Cookie"] == nil)
        #expect(hit.headers["Authentication-Info"] == nil)
        var withSecrets = URLRequest(url: URL(string: "https://carol:PASSWORD-SECRET@origin.test/download?access_token=QUERY-SECRET&x=1")!)
        withSecrets.setValue("k", forHTTPHeaderField: "Accept")
        try await h.pipeline.send(withSecrets).collected()
        #expect(try await h.pipeline.send(withSecrets).collected().source == .cache)
        await disk.flush()
        #expect(disk.statistics.count == 2, "both responses were written (else there was nothing to scan)")
        let text = String(decoding: try Self.bytesOnDisk(directory), as: UTF8.self)
        for secret in ["COOKIE-SECRET", "TOKEN-SECRET", "SETCOOKIE-SECRET", "AUTHINFO-SECRET", "PASSWORD-SECRET", "QUERY-SECRET", "carol"] {
            #expect(!text.contains(secret), "\(secret) was written to disk")
        }
        let secretFile = try String(contentsOf: directory.appendingPathComponent(".recall-cache"), encoding: .utf8)
        let attributes = try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(".recall-cache").path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(secretFile.hasPrefix("recall-cache 1\n"))
    }

    @Test(
        "a shared cache: no request secret reaches the disk either (Authorization, Cookie and API-key partitions, Vary values), and a private answer never does at all"
    )
    func sharedSecretsAtRest() async throws {
        var configuration = CacheConfiguration()
        configuration.audience = .shared
        let (h, disk, directory) = try CacheHarness.onDisk(configuration: configuration)
        defer { try? FileManager.default.removeItem(at: directory) }
        h.origin("/catalog", headers: ["Cache-Control": "public, max-age=600", "Vary": "Cookie"])
        h.origin("/private", headers: ["Cache-Control": "private, max-age=600"], body: "PRIVATE-BODY-SECRET")
        let credentials = ["Cookie": "sid=COOKIE-SECRET", "Authorization": "Bearer TOKEN-SECRET", "X-API-Key": "APIKEY-SECRET"]
        try await h.get("/catalog", headers: credentials)
        #expect(try await h.get("/catalog", headers: credentials).source == .cache)
        #expect(try await h.get("/private", headers: credentials).bodyText == "PRIVATE-BODY-SECRET")
        #expect(try await h.get("/private", headers: credentials).source == .network, "private: never stored in a shared cache")
        await h.cache.flush()
        await disk.flush()
        #expect(disk.statistics.count == 1, "the public answer was written (else there was nothing to scan)")
        let text = String(decoding: try Self.bytesOnDisk(directory), as: UTF8.self)
        for secret in ["COOKIE-SECRET", "TOKEN-SECRET", "APIKEY-SECRET", "PRIVATE-BODY-SECRET"] {
            #expect(!text.contains(secret), "\(secret) was written to disk")
        }
    }

    @Test("credential hashes are keyed by the storage's secret: not a plain SHA-256, different in every cache directory")
    func keyedHashes() throws {
        let request = URLRequest(url: URL(string: "https://origin.test/x")!)
        var authorized = request
        authorized.setValue("Bearer guessable", forHTTPHeaderField: "Authorization")
        let one = CachePartitioner(secret: StorageSecret.make(), configuration: CacheConfiguration())
        let two = CachePartitioner(secret: StorageSecret.make(), configuration: CacheConfiguration())
        let first = one.partition(for: authorized, userinfo: false, inScope: [])
        #expect(first == one.partition(for: authorized, userinfo: false, inScope: []))
        #expect(first != two.partition(for: authorized, userinfo: false, inScope: []))
        #expect(one.partition(for: request, userinfo: false, inScope: []).isEmpty)
        // HMAC-SHA256 itself, against RFC 4231 test case 2.
        #expect(
            SHA256.hexString(SHA256.hmac(key: Array("Jefe".utf8), "what do ya want for nothing?".utf8))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test("the secret outlives a restart: a reopened DiskStorage still serves credentialed entries")
    func secretSurvivesRestart() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let mock = MockTransport()
        mock.route("GET", "/mine", .text("mine", headers: ["Cache-Control": "max-age=600"]))
        var request = URLRequest(url: URL(string: "https://origin.test/mine")!)
        request.setValue("Bearer t", forHTTPHeaderField: "Authorization")
        do {
            let disk = try DiskStorage(directory: directory)
            try await Pipeline(transport: mock, hooks: [HTTPCache(storage: disk)]).send(request)
            await disk.flush()
        }
        let reopened = try DiskStorage(directory: directory)
        #expect(try await Pipeline(transport: mock, hooks: [HTTPCache(storage: reopened)]).send(request).source == .cache)
        #expect(mock.count(for: "/mine") == 1)
    }

    // MARK: 4. Redirects

    @Test("a followed redirect is stored under the URL that answered, never under the one that redirected")
    func redirectStoredUnderTarget() async throws {
        let (h, _, directory) = try CacheHarness.onDisk()
        defer { try? FileManager.default.removeItem(at: directory) }
        let latest = Locked("/v/1")
        // A transport that follows redirects: /latest answers with the target's response and URL.
        h.mock.route("GET", "/latest") { _ in
            let target = latest.withLock { $0 }
            return RecallResponse(
                status: 200, headers: ["Cache-Control": "max-age=31536000"], body: Data("body of \(target)".utf8),
                url: URL(string: "https://origin.test" + target))
        }
        h.origin("/v/1", headers: ["Cache-Control": "max-age=31536000"], body: "body of /v/1")
        #expect(try await h.get("/latest").bodyText == "body of /v/1")
        latest.withLock { $0 = "/v/2" }
        let moved = try await h.get("/latest")
        #expect(moved.source == .network)
        #expect(moved.bodyText == "body of /v/2")
        #expect(try await h.get("/v/1").source == .cache)  // stored under the URL that answered
    }

    @Test("end to end: a 302 followed by URLSession is stored for its target; the redirecting URL always asks again")
    func redirectEndToEnd() async throws {
        let server = try await OriginServer.shared.value
        let cache = HTTPCache()
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache])
        let target = OriginServer.uniquePath("target")
        let targetURL = server.url(target, ["cc": "max-age=600"])
        let source = OriginServer.uniquePath("moving")
        let sourceURL = server.url(
            source, ["status": "302", "cc": "max-age=600"],
            extra: [.init(name: "header", value: "Location: \(target)?cc=max-age%3D600")])
        let first = try await pipeline.send(URLRequest(url: sourceURL)).collected()
        #expect(first.status == 200)
        #expect(try await pipeline.send(URLRequest(url: sourceURL)).collected().source == .network)
        #expect(try await server.hits(source) == 2)
        #expect(try await pipeline.send(URLRequest(url: targetURL)).collected().source == .cache)
    }

    @Test("a response stored for a URL the retrier moved to keeps that URL's other partitions")
    func failoverKeepsPartitions() async throws {
        let h = CacheHarness(retrierFactory: FailoverFactory())
        h.origin("/primary", status: 503)
        h.mock.route("GET", "/mirror") { request in
            .text("mirror for \(request.value(forHTTPHeaderField: "Authorization") ?? "anyone")", headers: ["Cache-Control": "max-age=600"])
        }
        let direct = Pipeline(transport: h.mock, hooks: [h.cache])
        try await direct.send(h.request("/mirror", headers: ["Authorization": "Bearer bob"])).collected()  // bob's partition of /mirror
        #expect(try await h.get("/primary").bodyText == "mirror for anyone")  // failed over, stored for /mirror
        let bob = try await direct.send(h.request("/mirror", headers: ["Authorization": "Bearer bob"])).collected()
        #expect(bob.source == .cache)
        #expect(bob.bodyText == "mirror for Bearer bob")
        #expect(try await direct.send(h.request("/mirror")).collected().source == .cache)
    }

    // MARK: 5. Key confusion

    @Test("an encoded dot is not a dot segment: /a/%2e%2e/%2e%2e/admin never shares a key or a response with /admin")
    func encodedDots() async throws {
        let (h, _, directory) = try CacheHarness.onDisk()
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(h.cache.key(for: h.request("/a/%2e%2e/%2e%2e/admin")) != h.cache.key(for: h.request("/admin")))
        #expect(h.cache.key(for: h.request("/a/../../admin")) == h.cache.key(for: h.request("/admin")))
        #expect(h.cache.key(for: h.request("/a/%2e%2E/b")) == h.cache.key(for: h.request("/a/%2E%2E/b")))
        h.origin("/admin", headers: ["Cache-Control": "max-age=600"], body: "admin console")
        h.mock.route("GET", "/a/../../admin") { _ in .text("not found", status: 404, headers: ["Cache-Control": "max-age=600"]) }
        #expect(try await h.get("/admin").bodyText == "admin console")
        let confused = try await h.get("/a/%2e%2e/%2e%2e/admin")
        #expect(confused.source == .network)
        #expect(confused.status == 404)
    }

    @Test("user names and passwords in URLs never reach the key and partition the cache")
    func userinfo() async throws {
        let h = CacheHarness()
        h.mock.route("GET", "/inbox") { request in
            .text("inbox of \(request.url?.user ?? "nobody")", headers: ["Cache-Control": "max-age=600"])
        }
        let alice = URLRequest(url: URL(string: "https://alice:pw1@origin.test/inbox")!)
        let bob = URLRequest(url: URL(string: "https://bob:pw2@origin.test/inbox")!)
        #expect(h.cache.key(for: alice) == "https://origin.test/inbox")
        #expect(try await h.pipeline.send(alice).collected().bodyText == "inbox of alice")
        #expect(try await h.pipeline.send(bob).collected().bodyText == "inbox of bob")
        #expect(try await h.pipeline.send(alice).collected().source == .cache)
        #expect(try await h.get("/inbox").bodyText == "inbox of nobody")
    }

    @Test("secret query values are keyed hashes in the key; different tokens never share an entry")
    func secretQueryValues() async throws {
        let h = CacheHarness()
        h.mock.route("GET", "/file") { request in
            .text("file for \(request.url?.query ?? "")", headers: ["Cache-Control": "max-age=600"])
        }
        let key = try #require(h.cache.key(for: h.request("/file?token=xyz&page=2")))
        #expect(!key.contains("xyz"))  // (not hex digits: the keyed hash cannot spell it by chance)
        #expect(key.contains("page=2"))
        #expect(key != h.cache.key(for: h.request("/file?token=xyw&page=2")))
        #expect(try await h.get("/file?token=xyz").bodyText == "file for token=xyz")
        #expect(try await h.get("/file?token=xyw").bodyText == "file for token=xyw")
        #expect(try await h.get("/file?token=xyz").source == .cache)
    }

    // MARK: 6. Tiered promotion race

    @Test("a removal wins over a promotion from disk that started before it")
    func promotionRace() async throws {
        let gate = GatedStorage()
        let memory = MemoryStorage()
        let tiered = TieredStorage(memory: memory, lower: gate)
        await gate.store(makeRecord("k"))
        gate.closed.withLock { $0 = true }
        let read = Task { await tiered.record(for: "k") }
        while gate.waiting.withLock({ $0 }) == 0 { await Task.yield() }
        await tiered.remove("k")  // the invalidation lands while the read is under way
        gate.open()
        _ = await read.value
        #expect(memory.recordNow(for: "k") == nil, "the promotion resurrected a removed record")
        #expect(await tiered.record(for: "k") == nil)
    }

    @Test("60 GETs racing a PUT over memory + disk: every GET that starts after the PUT sees the new body")
    func racingInvalidation() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let afterPut = Locked(0)
        for _ in 0..<5 {
            // Disk reads take 0–2 ms, as they do under load: long enough for a PUT to land mid-read.
            let disk = SlowReads(try DiskStorage(directory: directory.appendingPathComponent(UUID().uuidString)))
            let storage = TieredStorage(memory: MemoryStorage(), lower: disk)
            let h = CacheHarness(storage: storage)
            let version = Locked(1)
            h.mock.route("GET", "/shared") { _ in .text("v\(version.withLock { $0 })", headers: ["Cache-Control": "max-age=600"]) }
            h.mock.route("PUT", "/shared") { _ in
                version.withLock { $0 = 2 }
                return .text("ok")
            }
            try await h.get("/shared")
            await storage.upper.removeAll()  // reads now promote from disk
            let putDone = Locked(false)
            let stale = Locked(0)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<60 {
                    group.addTask {
                        if index == 30 {
                            _ = try await h.pipeline.send(h.request("/shared", method: "PUT")).collected()
                            putDone.withLock { $0 = true }
                            return
                        }
                        if index > 30 {
                            // Half the GETs start once the PUT is done, while the first half's
                            // slow reads (begun before it) may still be promoting what they read.
                            try await waitUntil("the PUT is done") { putDone.withLock { $0 } }
                        }
                        let startedAfterPut = putDone.withLock { $0 }
                        let body = try await h.get("/shared").bodyText
                        if startedAfterPut { afterPut.withLock { $0 += 1 } }
                        if startedAfterPut, body != "v2" { stale.withLock { $0 += 1 } }
                    }
                }
                try await group.waitForAll()
            }
            #expect(stale.withLock { $0 } == 0)
            #expect(try await h.get("/shared").bodyText == "v2")
        }
        #expect(afterPut.withLock { $0 } > 0, "no GET started after a PUT: the race was not exercised")
    }
}

/// Retries a 503 once at the same path on a mirror: `/primary` → `/mirror`.
struct FailoverFactory: RetrierFactory {
    struct Failover: Retrier {
        var moved = false
        mutating func decide(after attempt: Attempt) async throws -> RetryDecision {
            guard attempt.response?.status == 503, !moved, var request = Optional(attempt.request) else { return .stop }
            moved = true
            request.url = URL(string: "https://origin.test/mirror")
            return .retry(after: .zero, request: request)
        }
    }

    func makeRetrier(for request: URLRequest) -> any Retrier { Failover() }
}

/// A storage whose reads return after a random number (0–64) of turns of the other tasks: slow
/// reads that widen the races they take part in, without a clock.
final class SlowReads: CacheStorage {
    let inner: any CacheStorage
    init(_ inner: any CacheStorage) { self.inner = inner }

    func record(for key: String) async -> CacheRecord? {
        let record = await inner.record(for: key)
        for _ in 0..<Int.random(in: 0...64) { await Task.yield() }
        return record
    }

    func store(_ record: CacheRecord, expires: Date?) async { await inner.store(record, expires: expires) }
    func remove(_ key: String) async { await inner.remove(key) }
    func removeAll() async { await inner.removeAll() }
    var statistics: StorageStatistics { inner.statistics }
}

/// A storage whose reads wait at a gate while it is closed, to order a read against a removal.
final class GatedStorage: CacheStorage {
    let inner = MemoryStorage()
    let closed = Locked(false)
    let waiting = Locked(0)
    private let waiters = Locked<[CheckedContinuation<Void, Never>]>([])

    func record(for key: String) async -> CacheRecord? {
        let record = inner.recordNow(for: key)  // read before the gate: the removal comes later
        if closed.withLock({ $0 }) {
            await withCheckedContinuation { continuation in
                waiters.withLock { $0.append(continuation) }
                waiting.withLock { $0 += 1 }
            }
        }
        return record
    }

    func open() {
        closed.withLock { $0 = false }
        for waiter in waiters.withLock({ list in
            defer { list.removeAll() }; return list
        }) { waiter.resume() }
    }

    func store(_ record: CacheRecord, expires: Date?) async { inner.storeNow(record) }
    func remove(_ key: String) async { inner.removeNow(key) }
    func removeAll() async { await inner.removeAll() }
    var statistics: StorageStatistics { inner.statistics }
}

/// A typed service whose API key travels in a field of its own (not a default credential field).
enum TenantParts {
    static let mock = MockTransport()
    /// Over a real `DiskStorage`, in a temporary directory removed when the test process exits.
    private static let directory = TemporaryDirectory()
    static let cache = HTTPCache(storage: directory.disk())
}

struct TenantService: HttpService {
    let key: String
    var apiUrl: String { "https://tenants.test/v1" }
    var authorization: Authorization? { .header(name: "X-Tenant-Key", value: key) }
    var transport: any Transport { TenantParts.mock }
    var hooks: [any ServiceHook] { [TenantParts.cache] }
}

struct Report: OutEndpoint {
    typealias Service = TenantService
    struct Output: Decodable, Sendable { var tenant: String }
    static let method = "GET"
    static var authorizationRequirement: AuthorizationRequirement { .required }
    var path: String { "report" }
}

import Foundation
@testable import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A manual "now" for HTTP dates.
final class TestNow: Sendable {
    private let date = Locked(Date(timeIntervalSince1970: 1_700_000_000))

    var value: Date { date.withLock { $0 } }

    func advance(_ seconds: Double) {
        date.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}

/// The storages every rule of the cache is tested over: each kind stores in its own way (decoded
/// records and write-behind; bytes encoded and decoded; files written in the background; two
/// tiers; the backend docs/architecture.md shows, read without suspending), so a rule must hold on each.
enum StorageKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case memory, bytes, disk, tiered, example

    var testDescription: String { rawValue }

    /// A new, empty storage of this kind; a disk one in a directory removed with `owner`; one
    /// that expires entries on the cache's clock, `now`.
    func make(owner: TemporaryDirectory, now: TestNow) -> any CacheStorage {
        switch self {
        case .memory: MemoryStorage()
        case .bytes: InMemoryByteStore()
        case .disk: owner.disk()
        case .tiered: TieredStorage(memory: MemoryStorage(), lower: owner.disk())
        case .example: ExpiringByteStore(now: { now.value })
        }
    }
}

/// A directory for a test's files, removed with the last reference to it (after the writes
/// queued by the disk storage made in it have landed), or when the test process exits if that
/// reference is never let go (a mock's route that captures its harness, which holds the mock).
final class TemporaryDirectory: Sendable {
    let url = temporaryDirectory()
    private let storage = Locked<DiskStorage?>(nil)

    init() {
        Self.unremoved.withLock { _ = $0.insert(url.path) }
    }

    /// Every directory made: removed (again) at the process's exit.
    private static let unremoved: Locked<Set<String>> = {
        atexit {
            for path in TemporaryDirectory.unremoved.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
        }
        return Locked([])
    }()

    /// A disk storage in the directory; one that cannot be made fails the test (and a byte
    /// store stands in, so the test goes on).
    func disk() -> any CacheStorage {
        do {
            let disk = try DiskStorage(directory: url)
            storage.withLock { $0 = disk }
            return disk
        } catch {
            Issue.record("no disk storage for the test: \(error)")
            return InMemoryByteStore()
        }
    }

    deinit {
        storage.withLock { $0 }?.flushBlocking()
        try? FileManager.default.removeItem(at: url)
        // (Still removed at exit: a background write that lands after this — a refresh the test
        // left running — makes the directory again.)
    }
}

/// An HTTPCache over a mock origin on a manual clock, for exact cache tests.
struct CacheHarness {
    let now = TestNow()
    let mock = MockTransport()
    let cache: HTTPCache
    let pipeline: Pipeline
    let base = "https://origin.test"
    /// Where a disk storage keeps its files, for as long as the harness lives.
    private let directory = TemporaryDirectory()

    init(
        configuration: CacheConfiguration = CacheConfiguration(), storage: any CacheStorage = MemoryStorage(),
        retrierFactory: any RetrierFactory = NilRetrierFactory(), transport: ((MockTransport) -> any Transport)? = nil
    ) {
        self.init(configuration: configuration, retrierFactory: retrierFactory, transport: transport) { _, _ in storage }
    }

    /// A harness over a new storage of `kind`.
    init(
        over kind: StorageKind, configuration: CacheConfiguration = CacheConfiguration(),
        retrierFactory: any RetrierFactory = NilRetrierFactory(), transport: ((MockTransport) -> any Transport)? = nil
    ) {
        self.init(configuration: configuration, retrierFactory: retrierFactory, transport: transport) { kind.make(owner: $0, now: $1) }
    }

    private init(
        configuration: CacheConfiguration, retrierFactory: any RetrierFactory, transport: ((MockTransport) -> any Transport)?,
        storage: (TemporaryDirectory, TestNow) -> any CacheStorage
    ) {
        let now = self.now
        cache = HTTPCache(storage: storage(directory, now), configuration: configuration, now: { now.value })
        pipeline = Pipeline(
            transport: transport?(mock) ?? mock, hooks: [cache], retrierFactory: retrierFactory,
            clock: ManualClock(autoAdvance: true))
    }

    /// A harness over a `DiskStorage` in a fresh directory (the caller removes the directory).
    static func onDisk(
        configuration: CacheConfiguration = CacheConfiguration(),
        retrierFactory: any RetrierFactory = NilRetrierFactory()
    ) throws -> (CacheHarness, DiskStorage, URL) {
        let directory = temporaryDirectory()
        let disk = try DiskStorage(directory: directory)
        return (CacheHarness(configuration: configuration, storage: disk, retrierFactory: retrierFactory), disk, directory)
    }

    /// Routes GET `path` to responses made at request time, with `Date` set to the manual now
    /// unless given. Each call of the route plays the next of `replies` (the last repeats).
    func origin(_ path: String, method: String = "GET", _ replies: [(status: Int, headers: HeaderFields, body: String)]) {
        let now = self.now
        let played = Locked(0)
        mock.route(method, path) { request in
            let index = played.withLock { count -> Int in
                defer { count += 1 }
                return min(count, replies.count - 1)
            }
            let reply = replies[index]
            var headers = reply.headers
            if !headers.contains("Date") { headers.add("Date", HTTPDate.format(now.value)) }
            return RecallResponse(status: reply.status, headers: headers, body: Data(reply.body.utf8), url: request.url)
        }
    }

    /// A one-reply origin.
    func origin(_ path: String, method: String = "GET", status: Int = 200, headers: HeaderFields = [:], body: String = "body") {
        origin(path, method: method, [(status, headers, body)])
    }

    func request(
        _ path: String, method: String = "GET", headers: [String: String] = [:],
        cachePolicy: URLRequest.CachePolicy = .useProtocolCachePolicy
    ) -> URLRequest {
        var request = URLRequest(url: URL(string: base + path)!)
        request.httpMethod = method
        request.cachePolicy = cachePolicy
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    @discardableResult
    func get(_ path: String, headers: [String: String] = [:], cachePolicy: URLRequest.CachePolicy = .useProtocolCachePolicy) async throws -> RecallResponse {
        try await pipeline.send(request(path, headers: headers, cachePolicy: cachePolicy))
    }

    func hits(_ path: String) -> Int { mock.count(for: path) }
}

import Foundation
@testable import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue #53, point 3: a miss that waits for another's fetch of the same URL (coalesced) gets its
/// answer whatever the first caller does with its body — holds it unread, is the same task, or
/// reads it slowly.
@Suite("Safety: one caller never waits on another's reading", .timeLimit(.minutes(1)))
struct CoalescedReadingTests {
    /// Larger than a streamed body's high-water mark (1 MiB): a caller that does not read holds
    /// the rest of it back.
    static let size = 4 << 20

    enum Kind: String, CaseIterable, Sendable { case memory, disk }

    enum Origin: String, CaseIterable, Sendable { case mock, socket }

    struct Case: Sendable, CustomTestStringConvertible {
        let kind: Kind
        let origin: Origin
        var testDescription: String { "\(kind.rawValue) over \(origin.rawValue)" }
    }

    static let cases = Kind.allCases.flatMap { kind in Origin.allCases.map { Case(kind: kind, origin: $0) } }

    /// A pipeline with a coalescing cache over `kind`, and the request of a fresh URL whose
    /// ``size``-byte body streams (from the mock, or the loopback origin through `URLSessionTransport`).
    private func setUp(_ test: Case, directory: URL) async throws -> (Pipeline, HTTPCache, URLRequest) {
        let storage: any CacheStorage = test.kind == .memory ? MemoryStorage() : try DiskStorage(directory: directory)
        let cache = HTTPCache(storage: storage)
        switch test.origin {
        case .mock:
            let mock = MockTransport()
            mock.route("GET", "/big") { request in
                let body = ResponseBody.producing(expectedLength: Self.size, url: request.url) { writer in
                    for _ in 0..<(Self.size >> 16) { try await writer.write(Data(repeating: 9, count: 1 << 16)) }
                }
                return RecallResponse(status: 200, headers: ["Cache-Control": "max-age=600", "Content-Length": String(Self.size)], body: body, url: request.url)
            }
            return (Pipeline(transport: mock, hooks: [cache]), cache, URLRequest(url: URL(string: "https://origin.test/big")!))
        case .socket:
            let server = try await OriginServer.shared.value
            let url = server.url(OriginServer.uniquePath("coalesced-reading"), ["stream": String(Self.size), "cc": "max-age=600"])
            return (Pipeline(transport: URLSessionTransport(), hooks: [cache]), cache, URLRequest(url: url))
        }
    }

    @Test("a first response held unread does not hold the second request of its URL", arguments: cases)
    func heldUnread(_ test: Case) async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (pipeline, _, request) = try await setUp(test, directory: directory)
        let first = try await pipeline.send(request)  // (its body left unread while the second is asked)
        let second = try await pipeline.send(request).collected()
        #expect(second.body.bytes?.count == Self.size)
        #expect(try await first.collected().body.bytes?.count == Self.size)
    }

    @Test("one task sends the same URL twice, then reads both: no deadlock", arguments: cases)
    func sameTaskTwice(_ test: Case) async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (pipeline, cache, request) = try await setUp(test, directory: directory)
        let first = try await pipeline.send(request)
        let second = try await pipeline.send(request)
        #expect(try await first.collected().body.bytes?.count == Self.size)
        #expect(try await second.collected().body.bytes?.count == Self.size)
        await cache.flush()
        #expect(try await pipeline.send(request).source == .cache)  // (stored by either)
    }

    @Test("a slow reader of the first response: the second request has its head while the first body is still being read", arguments: cases)
    func slowReader(_ test: Case) async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (pipeline, _, request) = try await setUp(test, directory: directory)
        let first = try await pipeline.send(request)
        let gate = Gate()
        let read = Locked(0)
        let reader = Task {
            for try await chunk in first.body {
                if read.withLock({ count -> Bool in
                    count += chunk.count
                    return count == chunk.count
                }) {
                    await gate.wait()  // (one chunk read, then the reader pauses)
                }
            }
        }
        try await waitUntil("the first reader has its first chunk") { read.withLock { $0 } > 0 }
        let second = try await pipeline.send(request)
        #expect(read.withLock { $0 } < Self.size, "the second head came only after the first body was read")
        gate.open()
        try await reader.value
        #expect(read.withLock { $0 } == Self.size)
        #expect(try await second.collected().body.bytes?.count == Self.size)
    }
}

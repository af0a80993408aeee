import Foundation
import Recall
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An origin (over a ``MockTransport``) with one resource, `https://origin.test/doc`, whose version
/// a `PUT` bumps: a `GET` answers `v` and the version it read on arrival, `max-age=600`. The
/// first `GET` is held at ``firstGet`` after reading its version — a slow answer produced before
/// a write — so a test can make a write complete while it is under way and check that the cache
/// (or caches, replicas over one storage) never serve it afterwards.
///
/// ```swift
/// let origin = VersionedOrigin()
/// let early = Task { try await pipeline.send(VersionedOrigin.request("GET")) }
/// // … once origin.getsSeen == 1: PUT, GET ("v2"), then
/// origin.firstGet.open()                     // early answers "v1", which must not be stored
/// ```
public final class VersionedOrigin: Sendable {
    /// The transport that answers as the origin.
    public let mock = MockTransport()
    private let version = Locked(1)
    /// Where the first `GET` waits, its version read, until opened.
    public let firstGet = Gate()
    private let gets = Locked(0)

    /// A new origin at version 1.
    public init() {
        mock.route("GET", "/doc") { [version, firstGet, gets] request in
            let current = version.withLock { $0 }
            if gets.withLock({ count -> Bool in
                count += 1; return count == 1
            }) {
                await firstGet.wait()
            }
            return RecallResponse(status: 200, headers: ["Cache-Control": "max-age=600"], body: Data("v\(current)".utf8), url: request.url)
        }
        mock.route("PUT", "/doc") { [version] request in
            version.withLock { $0 += 1 }
            return RecallResponse(status: 204, url: request.url)
        }
    }

    /// The resource's version now (1 at first; each `PUT` adds one).
    public var currentVersion: Int { version.withLock { $0 } }

    /// The `GET`s that reached the origin.
    public var getsSeen: Int { gets.withLock { $0 } }

    /// A request for the resource with `method`.
    public static func request(_ method: String) -> URLRequest {
        var request = URLRequest(url: URL(string: "https://origin.test/doc")!)
        request.httpMethod = method
        return request
    }

    /// What ``race(through:writeThrough:)`` saw.
    public struct Race: Sendable {
        /// The `PUT`'s status.
        public var putStatus: Int
        /// The answer to the `GET` sent after the `PUT`, while the first was still held.
        public var afterPut: RecallResponse
        /// The `GET`s that had reached the origin when that answer came.
        public var getsBeforeRelease: Int
        /// The answer to the first `GET`, once let go (the version from before the `PUT`).
        public var early: RecallResponse
    }

    /// The race of a write: a `GET` through `slow` reaches the origin and is held there; a `PUT`,
    /// then a `GET`, go through `writer` — that answer comes while the first is still held — and
    /// then the first is let go. A cache (or two, over one storage) keeps "no stale data after a
    /// completed write" when later `GET`s through either answer `v2`. It waits for the first `GET`
    /// to reach the origin without a time limit of its own: the test's bounds it.
    public func race(through slow: Pipeline, writeThrough writer: Pipeline) async throws -> Race {
        let early = Task { try await slow.send(Self.request("GET")) }
        while getsSeen < 1 { try await Task.sleep(for: .milliseconds(1)) }
        let putStatus = try await writer.send(Self.request("PUT")).status
        let afterPut = try await writer.send(Self.request("GET"))
        let gets = getsSeen
        firstGet.open()
        return Race(putStatus: putStatus, afterPut: afterPut, getsBeforeRelease: gets, early: try await early.value)
    }
}

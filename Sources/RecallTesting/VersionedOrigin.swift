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
}

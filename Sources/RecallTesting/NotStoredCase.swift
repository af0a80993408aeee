import Foundation
import Recall
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One way a response goes past the cache unstored, over one kind of storage: the table the
/// pass-through tests run over every transport (the loopback origin's `stream`, `gate`, `cc` and
/// `status` parameters; a body of ``size`` bytes, over the small storages' limits).
///
/// ```swift
/// @Test(arguments: NotStoredCase.all)
/// func passesStraightThrough(_ test: NotStoredCase) async throws {
///     let cache = HTTPCache(storage: try test.storage(in: directory))
///     let request = test.request(origin.url(path, test.query(gate: gate)))
///     …
/// }
/// ```
public struct NotStoredCase: Sendable, CustomStringConvertible {
    /// Why the response is not stored.
    public enum Kind: String, CaseIterable, Sendable {
        /// `Cache-Control: no-store`.
        case noStore
        /// `max-age`, but longer than a MemoryStorage takes for one entry (`entryLimit`; a
        /// DiskStorage's `entryLimit` is the most it reads whole: a longer body is stored in pieces).
        case overEntryLimit
        /// `max-age`, but larger than the whole storage (`byteLimit`).
        case overByteLimit
        /// A status that is not stored without explicit freshness (500).
        case uncacheableStatus
        /// A method the cache never stores (POST).
        case post
    }

    /// The storage the cache keeps its records in.
    public enum Storage: String, CaseIterable, Sendable {
        /// A `MemoryStorage`.
        case memory
        /// A `DiskStorage`.
        case disk
        /// A `TieredStorage`: a MemoryStorage over a DiskStorage.
        case tiered
    }

    /// The body's size: 1 MiB.
    public static let size = 1 << 20

    /// Every kind over every storage, but an entry over a disk's `entryLimit` (which is stored).
    public static let all: [NotStoredCase] = Kind.allCases.flatMap { kind in
        Storage.allCases.filter { kind != .overEntryLimit || $0 == .memory }.map { NotStoredCase(kind: kind, storage: $0) }
    }

    /// Why the response is not stored.
    public let kind: Kind
    /// The storage under the cache.
    public let storage: Storage

    /// The kind over the storage, for test output.
    public var description: String { "\(kind.rawValue) over \(storage.rawValue)" }

    /// A new storage of this case's kind, its limits below the body's for the limit cases; a disk
    /// storage keeps its files in `directory`.
    public func storage(in directory: URL) throws -> any CacheStorage {
        let entryLimit = kind == .overEntryLimit ? 256 << 10 : (kind == .overByteLimit ? 128 << 10 : 16 << 20)
        let byteLimit = kind == .overByteLimit ? 256 << 10 : 64 << 20
        func memory() -> MemoryStorage { MemoryStorage(byteLimit: byteLimit, entryLimit: entryLimit) }
        func disk() throws -> DiskStorage { try DiskStorage(directory: directory, byteLimit: byteLimit, entryLimit: entryLimit) }
        switch storage {
        case .memory: return memory()
        case .disk: return try disk()
        case .tiered: return TieredStorage(memory: memory(), lower: try disk())
        }
    }

    /// The loopback origin's query for this case: ``size`` bytes streamed, held after the first
    /// 64 KiB until `gate` opens.
    public func query(gate: String) -> [(String, String)] {
        var query = [("stream", "\(Self.size)"), ("gate", gate)]
        switch kind {
        case .noStore: query.append(("cc", "no-store"))
        // (`public`: storable by every audience — a cache that may serve many users too — so that
        // only the limit, or the method, keeps these from the storage.)
        case .overEntryLimit, .overByteLimit, .post: query.append(("cc", "public, max-age=600"))
        case .uncacheableStatus: query.append(("status", "500"))
        }
        return query
    }

    /// The request of this case for `url`: a POST with a small body, or a GET.
    public func request(_ url: URL) -> URLRequest {
        var request = URLRequest(url: url)
        if kind == .post {
            request.httpMethod = "POST"
            request.httpBody = Data("a form".utf8)
        }
        return request
    }
}

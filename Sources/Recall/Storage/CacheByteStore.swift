import Foundation

/// A ``CacheStorage`` that keeps **bytes by key** — files, a database table, a remote
/// key-value store — and knows nothing of HTTP.
///
/// A conforming type implements the I/O: ``data(for:)``, ``store(_:for:)``, ``removeCorrupt(_:ifStill:)``,
/// and from ``CacheStorage`` `remove`, `removeAll`, `flush`, `statistics` (and `secret`, when its
/// records outlive the process). The records themselves — encoding, decoding with every range
/// check, comparing the stored key with the key asked for — are done here, once, for every
/// backend, by the default ``record(for:)`` and ``store(_:)``. ``DiskStorage`` is one; a
/// backend for another store is its I/O and nothing else:
///
/// ```swift
/// final class RedisStorage: CacheByteStore {
///     func data(for key: String) async -> Data? { try? await redis.get(key) }
///     func store(_ data: Data, for key: String) async { try? await redis.set(key, data) }
///     func removeCorrupt(_ key: String, ifStill data: Data) async {
///         if try await redis.deleteIfEqual(key, data) { corrupt.increment() }
///     }
///     // remove, removeAll, flush, statistics …
/// }
/// ```
///
/// Like every storage it never throws at the cache: bytes that cannot be read are a miss, a
/// write that fails is counted in ``CacheStorage/statistics``. Keys are the cache's storage keys
/// (a canonical URL, possibly long): a backend with a key-length limit hashes them — the full key
/// is inside the stored bytes and compared on every read, so a collision is a miss, never another
/// URL's response.
public protocol CacheByteStore: CacheStorage {
    /// The bytes stored under `key`, or `nil`.
    func data(for key: String) async -> Data?
    /// Stores `data` under `key`, replacing what was there. It may complete later, but a
    /// following ``data(for:)`` sees it.
    func store(_ data: Data, for key: String) async
    /// Removes the bytes under `key` because they are not a record of this cache (torn by a
    /// crash, garbage, crafted, another format version) — **only if they are still `data`**, the
    /// bytes that failed: a valid record stored since the read must survive — and counts them
    /// in ``StorageStatistics/corruptRemoved``.
    func removeCorrupt(_ key: String, ifStill data: Data) async
}

extension CacheByteStore {
    /// The record under `key`: the stored bytes decoded and checked, or `nil` when there are none,
    /// they are not a valid record (then removed with ``removeCorrupt(_:ifStill:)``), or they hold
    /// another key's record.
    public func record(for key: String) async -> CacheRecord? {
        guard let data = await data(for: key) else { return nil }
        return await record(decoding: data, for: key)
    }

    /// The record in `data`, read for `key`: `nil` when it is not a valid record (then removed
    /// with ``removeCorrupt(_:ifStill:)``) or holds another key's. `sharingBuffer`: large bodies
    /// may refer to `data`'s bytes (only for a buffer nothing else holds; see `CacheRecordCodec`).
    func record(decoding data: Data, for key: String, sharingBuffer: Bool = false) async -> CacheRecord? {
        guard let record = try? CacheRecordCodec.decode(data, sharingBuffer: sharingBuffer, expectedKey: key) else {
            await removeCorrupt(key, ifStill: data)
            return nil
        }
        return record.key == key ? record : nil
    }

    /// Stores `record`, encoded, under its key.
    public func store(_ record: CacheRecord) async {
        await store(CacheRecordCodec.encode(record), for: record.key)
    }
}

import Foundation

/// A ``CacheStorage`` that keeps **bytes by key** — files, a database table, a remote
/// key-value store — and knows nothing of HTTP.
///
/// A conforming type implements the I/O and nothing else: ``bytes(for:)``,
/// ``write(_:for:expires:)``, ``removeCorrupt(_:ifStill:)``, and from ``CacheStorage`` `remove`,
/// `removeAll`, `flush`, `statistics` (and `secret`, when its records outlive the process;
/// ``CacheStorage/subscribe(toChangesElsewhere:)`` when others change it too). The records
/// themselves — encoding, decoding with every range check, comparing the stored key with the
/// key asked for, removing what is not a record — are done here, once, for every backend: a
/// byte store does not implement ``CacheStorage/record(for:)`` or ``CacheStorage/store(_:expires:)``.
/// ``DiskStorage`` is one, `PostgresStorage` (RecallPostgres) another; docs/architecture.md shows a
/// whole backend.
///
/// Two capabilities are optional:
/// - ``bytesWithoutSuspending(for:)``: bytes at hand (a file held open) let the cache answer
///   a hit without an async call;
/// - a ``DecodingMemo`` with bytes the store vouches unchanged: what they decoded to is kept
///   in it, so they are not checked or decoded again.
///
/// Like every storage it never throws at the cache: bytes that cannot be read are a miss, a
/// write that fails is counted in ``CacheStorage/statistics``. Keys are the cache's storage keys
/// (a canonical URL, possibly long): a backend with a key-length limit hashes them — the full key
/// is inside the stored bytes and compared on every read, so a collision is a miss (and the other
/// key's record is removed as not this key's), never another URL's response: hash with a full
/// cryptographic digest (SHA-256), never a truncated one.
public protocol CacheByteStore: CacheStorage {
    /// The bytes stored under `key`, or `nil`.
    func bytes(for key: String) async -> StoredBytes?
    /// The bytes under `key`, read as the fleet's coordination says (see
    /// ``CacheStorage/record(for:lookup:)``; a store that wraps another forwards it). The default
    /// reads as ``bytes(for:)`` does.
    func bytes(for key: String, lookup: RecordLookup) async -> StoredBytes?
    /// The bytes under `key` when they are at hand without suspending, else `nil` (then the
    /// cache asks ``bytes(for:lookup:)``). The default is `nil`.
    func bytesWithoutSuspending(for key: String) -> StoredBytes?
    /// Stores `data` under `key`, replacing what was there. It may complete later, but a
    /// following ``bytes(for:)`` sees it. `expires`: the cache's hint, after which nothing in
    /// the bytes can be served (`nil`: no end; see ``CacheStorage/store(_:expires:)``).
    func write(_ data: Data, for key: String, expires: Date?) async
    /// Writes as ``write(_:for:expires:)`` does, unless a key was removed after `mark` was read
    /// (see ``CacheStorage/store(_:expires:ifNotRemovedSince:)``): a store that counts removals
    /// (``CacheStorage/countsRemovals``) checks it atomically with the write. Whether it wrote;
    /// the default writes.
    func write(_ data: Data, for key: String, expires: Date?, ifNotRemovedSince mark: RemovalMark) async -> Bool
    /// Removes the bytes under `key` because they are not a record of this cache (torn by a
    /// crash, garbage, crafted, another format version) — **only if they are still `data`**, the
    /// bytes that failed: a valid record stored since the read must survive — and counts them
    /// in ``StorageStatistics/corruptRemoved``.
    func removeCorrupt(_ key: String, ifStill data: Data) async
    /// Begins writing the bytes of `key` in pieces (``ByteWriting``), for a record too large to
    /// hold whole; `nil` (the default) when the store writes whole bytes only, or will not take
    /// `size` bytes (the record's size when known: a body's `Content-Length` with its head).
    func beginWriting(for key: String, size: Int?, expires: Date?) async -> (any ByteWriting)?
    /// The bytes under `key` to read in pieces (``ByteReading``); `nil` (the default) when the
    /// store reads whole bytes only, or has none under `key`.
    func reading(_ key: String) async -> (any ByteReading)?
}

extension CacheByteStore {
    /// As ``bytes(for:)``.
    public func bytes(for key: String, lookup: RecordLookup) async -> StoredBytes? {
        await bytes(for: key)
    }

    /// Nothing at hand without suspending.
    public func bytesWithoutSuspending(for key: String) -> StoredBytes? { nil }

    /// Writes (a store that keeps no removal counts has none to check): `true`.
    public func write(_ data: Data, for key: String, expires: Date?, ifNotRemovedSince mark: RemovalMark) async -> Bool {
        await write(data, for: key, expires: expires)
        return true
    }

    /// Stores `record`, encoded, under its key unless a key was removed after `mark` (see
    /// ``write(_:for:expires:ifNotRemovedSince:)``); whether it stored. The variants whose bodies
    /// stay in the store (written in pieces) are not stored so: the others are.
    public func store(_ record: CacheRecord, expires: Date?, ifNotRemovedSince mark: RemovalMark) async -> Bool {
        let kept = record.variants.filter { $0.storedBody == nil }
        guard !kept.isEmpty else { return false }
        let whole = kept.count == record.variants.count ? record : CacheRecord(key: record.key, variants: kept)
        return await write(CacheRecordCodec.encode(whole), for: record.key, expires: expires, ifNotRemovedSince: mark)
    }

    /// Whole bytes only.
    public func beginWriting(for key: String, size: Int?, expires: Date?) async -> (any ByteWriting)? { nil }

    /// Whole bytes only.
    public func reading(_ key: String) async -> (any ByteReading)? { nil }

    /// The record under `key`: the stored bytes decoded and checked, or `nil` when there are none
    /// or they are not a valid record of `key` (garbage, torn, or another key's record, as a
    /// hashing backend's collision would leave): then they are removed with
    /// ``removeCorrupt(_:ifStill:)``.
    public func record(for key: String) async -> CacheRecord? {
        await record(for: key, lookup: .usual)
    }

    /// The record under `key` as ``record(for:)`` reads it, from the bytes read as `lookup` says
    /// (``bytes(for:lookup:)``).
    public func record(for key: String, lookup: RecordLookup) async -> CacheRecord? {
        guard let stored = await bytes(for: key, lookup: lookup) else {
            return await recordInPieces(for: key)
        }
        switch ByteRecords.decode(stored, for: key) {
        case .record(let record): return record
        case .corrupt:
            await removeCorrupt(key, ifStill: stored.data)
            return nil
        }
    }

    /// The record under `key` from bytes at hand (``bytesWithoutSuspending(for:)``), or `nil`.
    /// (Bytes that are not a record are left for ``record(for:)`` to remove.)
    public func recordWithoutSuspending(for key: String) -> CacheRecord? {
        guard let stored = bytesWithoutSuspending(for: key), case .record(let record) = ByteRecords.decode(stored, for: key) else {
            return nil
        }
        return record
    }

    /// Stores `record`, encoded, under its key. A record whose body stays in the store (written in
    /// pieces) is written in pieces again, its body copied from where it is; when the store
    /// cannot, the variants whose bodies are in memory are kept and the others dropped.
    public func store(_ record: CacheRecord, expires: Date?) async {
        guard record.variants.contains(where: { $0.storedBody != nil }) else {
            return await write(CacheRecordCodec.encode(record), for: record.key, expires: expires)
        }
        if CacheRecordCodec.canStream(record), let file = record.variants[0].storedBody,
            let writing = await beginStoring(record, expires: expires)
        {
            do {
                // (Checked against its checksum before the read ends — even where the store knows the
                // bytes whole — so a body changed where it was stored never becomes a record that checks.)
                var cursor = file.cursor(checked: true)
                while let piece = try await cursor.next() { try await writing.append(piece) }
                try await writing.commit()
                return
            } catch {
                await writing.abandon()
            }
        }
        let kept = record.variants.filter { $0.storedBody == nil }
        if kept.isEmpty {
            await remove(record.key)
        } else {
            await write(CacheRecordCodec.encode(CacheRecord(key: record.key, variants: kept)), for: record.key, expires: expires)
        }
    }

    /// Begins storing `record` — one variant, its body to come — in pieces, when the store writes
    /// in pieces (``beginWriting(for:size:expires:)``): the body is appended as it arrives and the
    /// record is stored, whole, at the commit. The record's size is told when its entry declares
    /// its body's length.
    public func beginStoring(_ record: CacheRecord, expires: Date?) async -> (any RecordWriting)? {
        guard CacheRecordCodec.canStream(record) else { return nil }
        let head = CacheRecordCodec.streamedHead(record), entry = record.variants[0]
        // (Each length is at most 18 digits, so this sum cannot overflow; checked all the same, as
        // every sum of sizes from the wire is: a size that does not add up is refused.)
        var size: Int?
        if let body = ResponseBody.declaredLength(status: entry.status, headers: entry.headers, requestMethod: "GET") {
            guard let total = ByteCount.sum(head.count, body, CacheRecordCodec.trailerSize) else { return nil }
            size = total
        }
        guard let writing = await beginWriting(for: record.key, size: size, expires: expires) else { return nil }
        do {
            try await writing.append(head)
        } catch {
            await writing.abandon()
            return nil
        }
        return RecordInPieces(writing, bodyOffset: head.count)
    }

    /// The record under `key` written in pieces and too large to read whole (over
    /// ``CacheStorage/entryLimit``): its head read and checked, its body left in the store (read
    /// from there when served, checked as it is read; removed if it fails the check). Bytes that
    /// large that are not such a record are removed.
    func recordInPieces(for key: String) async -> CacheRecord? {
        guard let reading = await reading(key), reading.count > entryLimit else { return nil }
        let size = CacheRecordCodec.headerSize, trailer = CacheRecordCodec.trailerSize
        do {
            guard reading.count >= size + trailer else { throw CacheStorageError.corrupt("too short") }
            let layout = try CacheRecordCodec.streamedLayout(
                header: try reading.read(at: 0, count: size),
                trailer: try reading.read(at: reading.count - trailer, count: trailer),
                count: reading.count)
            var record = try CacheRecordCodec.streamedHeadRecord(try reading.read(at: 0, count: layout.body.lowerBound), expectedKey: key)
            guard record.key == key else { throw CacheStorageError.corrupt("another key's record") }
            record.variants[0].storedBody = StoredBodyFile(reading: reading, range: layout.body, checksum: layout.bodyChecksum) {
                await self.remove(key)
            }
            return record
        } catch {
            await remove(key)
            return nil
        }
    }
}

import Foundation

/// A record stored in pieces (``CacheStorage/beginStoring(_:expires:)``): its body appended as it
/// arrives, then committed — the record stored, whole, at once — or abandoned (nothing stored).
public protocol RecordWriting: Sendable {
    /// Appends the next bytes of the body. Throws when they cannot be kept (the store's limit, a
    /// full disk): then abandon.
    func append(_ bytes: Data) async throws
    /// Stores the record with the body appended. Throws when it cannot; then nothing changed.
    func commit() async throws
    /// Drops what was appended; nothing is stored. Safe more than once.
    func abandon() async
}

/// A ``RecordWriting`` over a byte store's write in pieces: the body's bytes and its checksum,
/// then the trailer of the record format (``CacheRecordCodec`` version 9). Over a
/// ``DiskStorage``'s write, its body can be read back as it is written.
final class RecordInPieces: RecordReadingBack {
    private let writing: any ByteWriting
    /// Where the body begins: after the head written before it.
    private let bodyOffset: Int
    private let sum = Locked((checksum: CacheRecordCodec.StreamingChecksum(), length: 0))

    /// The record whose head, `bodyOffset` bytes, `writing` holds already.
    init(_ writing: any ByteWriting, bodyOffset: Int) {
        self.writing = writing
        self.bodyOffset = bodyOffset
    }

    func bodyBytes() -> WrittenBytes? {
        (writing as? DiskWrite)?.readBack(from: bodyOffset)
    }

    func append(_ bytes: Data) async throws {
        try await writing.append(bytes)
        sum.withLock { state in
            state.checksum.add(bytes)
            state.length += bytes.count
        }
    }

    func commit() async throws {
        let (checksum, length) = sum.withLock { ($0.checksum.value, $0.length) }
        try await writing.append(CacheRecordCodec.streamedTrailer(length: length, checksum: checksum))
        try await writing.commit()
    }

    func abandon() async {
        await writing.abandon()
    }
}

/// A ``RecordWriting`` of a ``TieredStorage``'s lower tier that runs `committed` once the
/// record is in place there (the upper tier drops its outdated copy).
final class TieredRecordWriting: RecordReadingBack {
    private let writing: any RecordWriting
    private let committed: @Sendable () async -> Void

    init(_ writing: any RecordWriting, committed: @escaping @Sendable () async -> Void) {
        self.writing = writing
        self.committed = committed
    }

    func append(_ bytes: Data) async throws {
        try await writing.append(bytes)
    }

    func commit() async throws {
        try await writing.commit()
        await committed()
    }

    func abandon() async {
        await writing.abandon()
    }

    func bodyBytes() -> WrittenBytes? {
        (writing as? any RecordReadingBack)?.bodyBytes()
    }
}

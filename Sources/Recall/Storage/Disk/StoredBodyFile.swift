import Foundation

/// A stored body that stays in its store instead of memory: the bytes of a record written in
/// pieces (``CacheRecordCodec`` version 9), read in pieces from the store (``ByteReading``) when
/// it is served. A whole read is checked against the body's checksum as it goes (a changed body
/// ends its read with an error, never as a complete answer) unless the store knows the bytes
/// whole (``ByteReading/knownWhole``: a ``DiskStorage`` wrote them or saw them checked, and they
/// are unchanged); a range is read by seeking, after the whole body is checked once when the
/// store does not know it whole (a range of a changed body is never served). Read by pulling:
/// each piece is read when the reader asks for it, in the reader's task.
final class StoredBodyFile: Sendable {
    /// How much one read takes (the reader gets the pieces as they are read).
    static let pieceSize = 256 << 10

    let reading: any ByteReading
    /// Where the body lies in the stored bytes.
    let range: Range<Int>
    let checksum: UInt64
    /// Removes the record when the body fails its check.
    fileprivate let corrupt: @Sendable () async -> Void

    init(reading: any ByteReading, range: Range<Int>, checksum: UInt64, corrupt: @escaping @Sendable () async -> Void = {}) {
        self.reading = reading
        self.range = range
        self.checksum = checksum
        self.corrupt = corrupt
    }

    /// The body's length.
    var count: Int { range.count }

    /// Whether `other` is the same stored body: the same bytes at the same place of a record (a
    /// record read again gives a new reading of the same body).
    func isSameBody(as other: StoredBodyFile) -> Bool {
        checksum == other.checksum && range == other.range && reading.count == other.reading.count
    }

    /// A reading of the body — or of the bytes of `bounds` within it — from the store, piece by
    /// piece as its reader asks (no task, no buffer: a reader that stops asking stops the reads).
    /// A whole read is checked unless the store knows the bytes whole; `checked` checks it anyway
    /// (a copy into a new record, whose checksum is made from the bytes read, must start from
    /// bytes that passed one). A range of a body the store does not know whole is read after the
    /// whole body passed its check, before the range's first piece (the check reads every byte
    /// once; a ``DiskStorage`` then knows the body whole, and its later ranges seek at once).
    func cursor(_ bounds: ClosedRange<Int>? = nil, checked: Bool = false) -> Cursor {
        let part = bounds.map { (range.lowerBound + $0.lowerBound)..<(range.lowerBound + $0.upperBound + 1) } ?? range
        // (A range the store knows whole is read unchecked too, and must still be known whole at its end.)
        let trusted = !checked && reading.knownWhole
        return Cursor(
            file: self, offset: part.lowerBound, end: part.upperBound,
            sum: bounds == nil && !trusted ? CacheRecordCodec.StreamingChecksum() : nil, trusted: trusted,
            checksFirst: bounds != nil && !trusted)
    }

    /// Checks the whole body as a checked whole read does, without keeping it: a body that does
    /// not match removes its record and throws ``CacheStorageError/corrupt(_:)``; one that does
    /// is then known whole to its store.
    fileprivate func check() async throws {
        var whole = cursor(checked: true)
        // (One read at a time holds a thread of the pool: a large body lets the others run between.)
        while try await whole.next() != nil { await Task.yield() }
    }

    /// Reads a stored body's pieces in order (see ``cursor(_:checked:)``).
    struct Cursor {
        let file: StoredBodyFile
        private(set) var offset: Int
        let end: Int
        /// The checksum of the pieces read so far, when the read is checked.
        private var sum: CacheRecordCodec.StreamingChecksum?
        /// A read not checked, the store knowing the bytes whole when it began.
        private var trusted: Bool
        /// A range whose whole body is to be checked before its first piece.
        private var checksFirst: Bool

        fileprivate init(
            file: StoredBodyFile, offset: Int, end: Int, sum: CacheRecordCodec.StreamingChecksum?, trusted: Bool, checksFirst: Bool
        ) {
            self.file = file
            self.offset = offset
            self.end = end
            self.sum = sum
            self.trusted = trusted
            self.checksFirst = checksFirst
        }

        /// The next piece, or `nil` at the end. A checked read that does not match its checksum
        /// removes the record (the next request goes to the origin) and throws
        /// ``CacheStorageError/corrupt(_:)`` instead of ending, as does a read left unchecked
        /// whose bytes the store no longer knows whole at the end (changed while read); a
        /// cancelled task throws `CancellationError`.
        mutating func next() async throws -> Data? {
            try Task.checkCancellation()
            if checksFirst {
                checksFirst = false
                try await file.check()
                // (Known whole now, as a store that remembers it says: still so at the range's end.)
                trusted = file.reading.knownWhole
            }
            guard offset < end else {
                guard let checked = sum else {
                    // A whole read left unchecked as known whole must still be known whole at its end.
                    if trusted, !file.reading.knownWhole {
                        trusted = false
                        throw CacheStorageError.corrupt("the stored body changed while it was read")
                    }
                    return nil
                }
                sum = nil
                guard checked.value == file.checksum else {
                    await file.corrupt()
                    throw CacheStorageError.corrupt("the stored body does not match its checksum")
                }
                file.reading.noteWhole()
                return nil
            }
            let piece = try file.reading.read(at: offset, count: Swift.min(StoredBodyFile.pieceSize, end - offset))
            guard !piece.isEmpty else { throw CacheStorageError.corrupt("the stored body ended early") }
            sum?.add(piece)
            offset += piece.count
            return piece
        }
    }
}

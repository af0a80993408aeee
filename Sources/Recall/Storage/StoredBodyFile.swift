import Foundation

/// A stored body that stays in its store instead of memory: the bytes of a record written in
/// pieces (``CacheRecordCodec`` version 9), read in pieces from the store (``ByteReading``) when
/// it is served. A whole read is checked against the body's checksum as it goes (a changed body
/// ends its read with an error, never as a complete answer); a range is read by seeking.
final class StoredBodyFile: Sendable {
    /// How much one read takes (the reader gets the pieces as they are read).
    static let pieceSize = 256 << 10

    let reading: any ByteReading
    /// Where the body lies in the stored bytes.
    let range: Range<Int>
    let checksum: UInt64
    /// Removes the record when the body fails its check.
    private let corrupt: @Sendable () async -> Void

    init(reading: any ByteReading, range: Range<Int>, checksum: UInt64, corrupt: @escaping @Sendable () async -> Void = {}) {
        self.reading = reading
        self.range = range
        self.checksum = checksum
        self.corrupt = corrupt
    }

    /// The body's length.
    var count: Int { range.count }

    /// The body — or the bytes of `bounds` within it — as a stream read from the store.
    func body(_ bounds: ClosedRange<Int>? = nil) -> ResponseBody {
        let whole = bounds == nil
        let part = bounds.map { (range.lowerBound + $0.lowerBound)..<(range.lowerBound + $0.upperBound + 1) } ?? range
        let (reading, expected, corrupt) = (self.reading, self.checksum, self.corrupt)
        return ResponseBody.producing(expectedLength: part.count) { writer in
            var sum = CacheRecordCodec.StreamingChecksum()
            var offset = part.lowerBound
            while offset < part.upperBound {
                let piece = try reading.read(at: offset, count: min(Self.pieceSize, part.upperBound - offset))
                guard !piece.isEmpty else { throw CacheStorageError.corrupt("the stored body ended early") }
                if whole { sum.add(piece) }
                offset += piece.count
                try await writer.write(piece)
            }
            if whole, sum.value != expected {
                await corrupt() // (the next request goes to the origin)
                throw CacheStorageError.corrupt("the stored body does not match its checksum")
            }
        }
    }
}

import Foundation

/// The stored pieces of one representation that the cache holds only in part (RFC 9111 §3.3):
/// the bytes of the `206` answers it received for that representation, combined (§3.4), with
/// the representation's complete length.
///
/// A partial entry is a ``CacheEntry`` of status `206` whose `Content-Range` fields (one per
/// piece, in order) say where each piece of its body belongs; its other fields are those of the
/// newest answer. The cache never answers a request without `Range` from it, and answers a
/// `Range` request only when the pieces hold every byte asked for. When the pieces cover the
/// whole representation, the cache stores it as a full `200` instead.
struct PartialContent: Sendable, Equatable {
    /// One contiguous run of bytes of the representation.
    struct Piece: Sendable, Equatable {
        /// The positions of the bytes in the representation.
        var bounds: ClosedRange<Int>
        /// The bytes (exactly `bounds.count` of them).
        var bytes: Data
    }

    /// The length of the complete representation.
    let length: Int
    /// The pieces, in order, neither overlapping nor touching.
    private(set) var pieces: [Piece] = []

    /// The most pieces one partial entry keeps: a request for a byte that falls between
    /// pieces asks the origin for one span, so real clients make few; a hostile pattern of
    /// scattered ranges stops being stored here.
    static let maxPieces = 16

    /// An empty representation of `length` bytes.
    init(length: Int) {
        self.length = length
    }

    /// The pieces stored in `entry`, or `nil` when it is not a well-formed partial entry (its
    /// fields and body disagree): such an entry is never used.
    init?(_ entry: CacheEntry) {
        guard entry.status == 206 else { return nil }
        let ranges = entry.headers.values(for: "Content-Range")
        guard !ranges.isEmpty, ranges.count <= Self.maxPieces else { return nil }
        var length: Int?
        var offset = entry.body.startIndex
        var pieces: [Piece] = []
        for value in ranges {
            guard let (bounds, total) = Self.contentRange(value), length == nil || length == total,
                pieces.last.map({ $0.bounds.upperBound + 1 < bounds.lowerBound }) ?? true,
                entry.body.endIndex - offset >= bounds.count
            else { return nil }
            length = total
            // A slice shares the entry's bytes: reading the pieces of a hit copies nothing.
            pieces.append(Piece(bounds: bounds, bytes: entry.body[offset..<(offset + bounds.count)]))
            offset += bounds.count
        }
        guard let length, offset == entry.body.endIndex else { return nil }
        self.length = length
        self.pieces = pieces
    }

    /// The byte positions and complete length of a `Content-Range: bytes first-last/length`
    /// value, or `nil` for any other form (`*` for the length, another unit, bad syntax, a
    /// range outside the length).
    static func contentRange(_ value: String) -> (bounds: ClosedRange<Int>, length: Int)? {
        let text = value.trimmingOWS
        guard text.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = text.dropFirst(6).trimmingOWS
        guard let dash = spec.firstIndex(of: "-"), let slash = spec.firstIndex(of: "/"), dash < slash else { return nil }
        func number(_ part: Substring) -> Int? {
            guard !part.isEmpty, part.count <= 18, part.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return Int(part)
        }
        guard let first = number(spec[..<dash]), let last = number(spec[spec.index(after: dash)..<slash]),
            let length = number(spec[spec.index(after: slash)...]), first <= last, last < length
        else { return nil }
        return (first...last, length)
    }

    /// Whether every byte of the representation is held.
    var isComplete: Bool {
        pieces.count == 1 && pieces[0].bounds == 0...(length - 1)
    }

    /// Whether every byte in `bounds` is held.
    func covers(_ bounds: ClosedRange<Int>) -> Bool {
        pieces.contains { $0.bounds.contains(bounds.lowerBound) && $0.bounds.contains(bounds.upperBound) }
    }

    /// The smallest span holding every byte of `bounds` that is not held (one span, so one
    /// request asks for all of it), or `nil` when all are held.
    func missing(in bounds: ClosedRange<Int>) -> ClosedRange<Int>? {
        var first = bounds.lowerBound, last = bounds.upperBound
        // Trim held bytes from both ends: what lies between the first and last gap is asked for.
        while let piece = pieces.first(where: { $0.bounds.contains(first) }), first <= last { first = piece.bounds.upperBound + 1 }
        while let piece = pieces.first(where: { $0.bounds.contains(last) }), first <= last { last = piece.bounds.lowerBound - 1 }
        return first <= last ? first...last : nil
    }

    /// The bytes at `bounds`, when they are all held.
    func bytes(in bounds: ClosedRange<Int>) -> Data? {
        guard let piece = pieces.first(where: { $0.bounds.contains(bounds.lowerBound) && $0.bounds.contains(bounds.upperBound) })
        else { return nil }
        let start = piece.bytes.startIndex + bounds.lowerBound - piece.bounds.lowerBound
        return piece.bytes.subdata(in: start..<(start + bounds.count))
    }

    /// Adds the bytes at `bounds` (newer bytes win where pieces overlap; with the same strong
    /// validator they are the same bytes). `false`, and nothing changed, when the result
    /// would hold more than ``maxPieces`` pieces or the bytes do not fit `bounds`.
    @discardableResult
    mutating func insert(_ bounds: ClosedRange<Int>, bytes: Data) -> Bool {
        guard bounds.upperBound < length, bytes.count == bounds.count else { return false }
        var merged = Piece(bounds: bounds, bytes: bytes)
        var kept: [Piece] = []
        for piece in pieces {
            // Apart (not even touching): kept as it is.
            if piece.bounds.upperBound + 1 < merged.bounds.lowerBound || merged.bounds.upperBound + 1 < piece.bounds.lowerBound {
                kept.append(piece)
                continue
            }
            var bytes = Data()
            if piece.bounds.lowerBound < merged.bounds.lowerBound {
                bytes.append(piece.bytes.prefix(merged.bounds.lowerBound - piece.bounds.lowerBound))
            }
            bytes.append(merged.bytes)
            if piece.bounds.upperBound > merged.bounds.upperBound {
                bytes.append(piece.bytes.suffix(piece.bounds.upperBound - merged.bounds.upperBound))
            }
            merged = Piece(
                bounds: min(piece.bounds.lowerBound, merged.bounds.lowerBound)...max(piece.bounds.upperBound, merged.bounds.upperBound),
                bytes: bytes)
        }
        kept.append(merged)
        guard kept.count <= Self.maxPieces else { return false }
        pieces = kept.sorted { $0.bounds.lowerBound < $1.bounds.lowerBound }
        return true
    }

    /// The entry that stores these pieces with `headers` (the newest answer's fields): a
    /// partial `206` entry, or the full `200` response once every byte is held.
    func entry(headers: HeaderFields, like template: CacheEntry) -> CacheEntry {
        var fields = headers
        fields.remove("Content-Range")
        fields.remove("Content-Length")
        var entry = template
        if isComplete {
            fields.add("Content-Length", String(length))
            entry.status = 200
            entry.body = pieces[0].bytes.exactlySized
        } else {
            for piece in pieces { fields.add("Content-Range", "bytes \(piece.bounds.lowerBound)-\(piece.bounds.upperBound)/\(length)") }
            entry.status = 206
            var body = Data(capacity: pieces.reduce(0) { $0 + $1.bytes.count })
            for piece in pieces { body.append(piece.bytes) }
            entry.body = body
        }
        entry.headers = fields
        return entry
    }
}

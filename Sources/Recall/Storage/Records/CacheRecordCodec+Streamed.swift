import Foundation

/// Records written in pieces (version 9): a body too large to hold whole is appended as it
/// arrives, so its length and checksum come after it.
///
/// `RCL1` · 9 · head length (UInt64 LE) · head checksum (UInt64 LE) · head · body · body length
/// (UInt64 LE) · body checksum (UInt64 LE). The head is a version-7 payload of the record — one
/// variant, its body left out — with ``CacheRecordCodec/checksum(_:)``; the body's checksum is the
/// same function over the body (``CacheRecordCodec/StreamingChecksum``). A file whose size is not
/// exactly header + head + body + trailer is torn, as is one whose head fails its checksum; a body
/// is checked against its checksum as it is read. A Recall that predates version 9 reads such a
/// record as corrupt (a miss).
extension CacheRecordCodec {
    static let streamedVersion: UInt8 = 9
    static let trailerSize = 16
    /// The longest head read from a record written in pieces (its header fields are bounded by
    /// the cache's limits far below this).
    static let maxStreamedHead = 4 << 20

    /// Where the parts of a record written in pieces lie.
    struct StreamedLayout: Sendable, Hashable {
        var headLength: Int
        var headChecksum: UInt64
        var body: Range<Int>
        var bodyChecksum: UInt64
    }

    /// Whether `record` can be written in pieces: one variant, not a piece of a range.
    static func canStream(_ record: CacheRecord) -> Bool {
        record.variants.count == 1 && record.variants[0].status != 206
    }

    /// The header and head of `record` written in pieces (``canStream(_:)``), its body left out:
    /// append the body, then ``streamedTrailer(length:checksum:)``.
    static func streamedHead(_ record: CacheRecord) -> Data {
        var head = record
        for index in head.variants.indices { head.variants[index].body = Data() }
        var data = encode(head)
        data[data.startIndex + 4] = streamedVersion
        return data
    }

    /// What follows the body of a record written in pieces.
    static func streamedTrailer(length: Int, checksum: UInt64) -> Data {
        var trailer = Writer()
        trailer.uint64(UInt64(length))
        trailer.uint64(checksum)
        return trailer.data
    }

    /// The layout of a record of `count` bytes written in pieces, from its first
    /// ``headerSize`` bytes and its last ``trailerSize``.
    static func streamedLayout(header: Data, trailer: Data, count: Int) throws -> StreamedLayout {
        guard header.count == headerSize, trailer.count == trailerSize, header.starts(with: magic),
            header[header.startIndex + 4] == streamedVersion
        else {
            throw CacheStorageError.corrupt("not a record written in pieces")
        }
        func word(_ data: Data, at offset: Int) -> UInt64 {
            data.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) }
        }
        let headLength = word(header, at: 5), bodyLength = word(trailer, at: 0)
        guard headLength <= UInt64(maxStreamedHead), bodyLength <= UInt64(Int.max / 2),
            UInt64(headerSize) + headLength + bodyLength + UInt64(trailerSize) == UInt64(count)
        else {
            throw CacheStorageError.corrupt("the lengths of a record written in pieces do not add up to its \(count) bytes (torn?)")
        }
        let start = headerSize + Int(headLength)
        return StreamedLayout(
            headLength: Int(headLength), headChecksum: word(header, at: 13),
            body: start..<(start + Int(bodyLength)), bodyChecksum: word(trailer, at: 8))
    }

    /// The record in the header and head of a record written in pieces (its variant's body
    /// empty), checked as a version-7 record.
    static func streamedHeadRecord(_ headerAndHead: Data, expectedKey: String?) throws -> CacheRecord {
        var asWhole = headerAndHead
        asWhole[asWhole.startIndex + 4] = version
        let record = try decode(asWhole, expectedKey: expectedKey)
        guard canStream(record) else { throw CacheStorageError.corrupt("a record written in pieces with \(record.variants.count) variants") }
        return record
    }

    /// A whole record written in pieces, read at once (it fit the store's whole reads): its body
    /// taken from `data` and checked.
    static func decodeStreamed(_ data: Data, sharingBuffer: Bool, expectedKey: String?, bodies: inout [Range<Int>]?) throws -> CacheRecord {
        guard data.count >= headerSize + trailerSize else { throw CacheStorageError.corrupt("too short") }
        let start = data.startIndex
        let layout = try streamedLayout(
            header: data.subdata(in: start..<(start + headerSize)),
            trailer: data.subdata(in: (data.endIndex - trailerSize)..<data.endIndex), count: data.count)
        var record = try streamedHeadRecord(data.subdata(in: start..<(start + layout.body.lowerBound)), expectedKey: expectedKey)
        let body = try data.withUnsafeBytes { raw -> Data in
            let bytes = UnsafeRawBufferPointer(rebasing: raw[layout.body])
            guard checksum(bytes) == layout.bodyChecksum else { throw CacheStorageError.corrupt("body checksum mismatch") }
            return Reader.body(bytes, of: raw, owner: sharingBuffer ? data : nil)
        }
        record.variants[0].body = body
        bodies?.append(layout.body)
        return record
    }
}

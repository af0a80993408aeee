import Foundation

/// The binary file format of a ``CacheRecord`` on disk.
///
/// `RCL1` · version (1 byte) · payload length (UInt64 LE) · checksum of the payload (UInt64 LE) · payload.
/// A record whose length or checksum does not match (truncated by a crash, overwritten with
/// garbage) fails to decode with ``CacheStorageError/corrupt(_:)`` and is treated as a miss.
/// A record that passes its checksum is still not trusted: every count, status and time is
/// range-checked, so a crafted file is a miss, never a trap or an entry fresh forever.
///
/// Version 3 stores, per variant: status, request and response times, the stored header
/// fields, the Vary values (credential fields as keyed hashes), the partition and the body.
/// The response URL is not stored (a response is served with the URL of the request).
/// An assigned freshness lifetime (``CacheEntry/assignedLifetime``) travels as one more Vary
/// value named `:lifetime` (a name no request field can have): a Recall that predates it
/// finds no request field to match and treats the variant as a miss, never as fresh.
/// Version 4 is the same layout, written when a record holds pieces of a representation (a
/// `206` entry, see `PartialContent`): a Recall that predates them reads such a record as
/// corrupt (a miss) instead of serving the pieces as a response.
/// Versions 5 and 6 are 3 and 4 with a checksum computed in four multiplying lanes
/// (``fourLaneChecksum(_:)``); versions 7 and 8, written now, with Fletcher-style sums
/// (``checksum(_:)``, about twice as fast again). Checksums read words as little-endian on
/// every host. Versions 3 to 6 are still read; a Recall
/// that predates a version reads its records as corrupt (a miss).
enum CacheRecordCodec {
    static let magic: [UInt8] = Array("RCL1".utf8)
    static let version: UInt8 = 7
    /// The version of records that hold partial content.
    static let partialVersion: UInt8 = 8
    /// Versions 5 and 6: the same layouts with ``fourLaneChecksum(_:)``.
    static let fourLaneVersion: UInt8 = 5
    static let fourLanePartialVersion: UInt8 = 6
    /// Versions 3 and 4: the same layouts with ``legacyChecksum(_:)``.
    static let legacyVersion: UInt8 = 3
    static let legacyPartialVersion: UInt8 = 4
    static let headerSize = 4 + 1 + 8 + 8
    /// The Vary value that carries an assigned lifetime.
    static let lifetimeField = ":lifetime"
    /// The most header fields (or Vary values) one stored response may have: the cache refuses
    /// to store more (``CacheConfiguration/maxHeaderFields`` is clamped to it), so nothing it
    /// stores reads back as corrupt.
    static let maxFields = 1_000
    /// The most fields a reader accepts in one list: ``maxFields``, plus the `Content-Range`
    /// fields of combined pieces (one per piece where the answer had one), plus the lifetime value.
    static let maxFieldsRead = maxFields + PartialContent.maxPieces + 1
    /// The most variants one record may hold (``CacheConfiguration/maxVariants`` is clamped to it).
    static let maxVariants = 64
    /// Times outside ±10¹¹ s of 1970 (about ±3,000 years) are not plausible HTTP times.
    static let timeRange: ClosedRange<Double> = -1e11...1e11

    static func encode(_ record: CacheRecord) -> Data {
        var payload = Writer()
        payload.string(record.key)
        payload.uint64(UInt64(record.variants.count))
        for entry in record.variants {
            payload.uint64(UInt64(clamping: entry.status))
            payload.uint64(entry.requestTime.timeIntervalSince1970.bitPattern)
            payload.uint64(entry.responseTime.timeIntervalSince1970.bitPattern)
            payload.fields(entry.headers.fields)
            if let lifetime = entry.assignedLifetime {
                payload.fields(entry.varyValues + [HeaderFields.Field(name: lifetimeField, value: String(lifetime))])
            } else {
                payload.fields(entry.varyValues)
            }
            payload.string(entry.partition)
            payload.bytes(entry.body)
        }
        var output = Data(capacity: headerSize + payload.data.count)
        output.append(contentsOf: magic)
        output.append(record.variants.contains { $0.status == 206 } ? partialVersion : version)
        var header = Writer()
        header.uint64(UInt64(payload.data.count))
        header.uint64(checksum(payload.data))
        output.append(header.data)
        output.append(payload.data)
        return output
    }

    /// Decodes and checks `data`. With `sharingBuffer`, large bodies refer to `data`'s bytes
    /// instead of copying them: only for a buffer nothing else holds or will change (the one
    /// ``DiskStorage`` has just read a file into), since such a body is changed in place when its
    /// owner changes it, and keeps the whole buffer alive. `expectedKey`: the key the record is
    /// read for; when the stored key is the same, that string is used (no new one is made).
    static func decode(_ data: Data, sharingBuffer: Bool = false, expectedKey: String? = nil) throws -> CacheRecord {
        var bodies: [Range<Int>]?
        return try decode(data, sharingBuffer: sharingBuffer, expectedKey: expectedKey, bodies: &bodies)
    }

    /// ``decode(_:sharingBuffer:expectedKey:)``, also telling where in `data` each variant's
    /// body lies when `bodies` is not `nil` (for ``record(_:bodies:in:sharingBuffer:)``).
    static func decode(
        _ data: Data, sharingBuffer: Bool = false, expectedKey: String? = nil,
        bodies: inout [Range<Int>]?
    ) throws -> CacheRecord {
        if data.count > 4, data[data.startIndex + 4] == streamedVersion {
            return try decodeStreamed(data, sharingBuffer: sharingBuffer, expectedKey: expectedKey, bodies: &bodies)
        }
        // One pass over the bytes in place: no copy of the header, the strings' bytes or a large body.
        return try data.withUnsafeBytes { raw in
            guard raw.count >= headerSize, raw[0] == magic[0], raw[1] == magic[1], raw[2] == magic[2], raw[3] == magic[3] else {
                throw CacheStorageError.corrupt("not a Recall cache file (bad magic or too short)")
            }
            let recordVersion = raw[4]
            guard let hash = checksumFunction(of: recordVersion) else {
                throw CacheStorageError.corrupt("unknown format version \(recordVersion)")
            }
            var header = Reader(raw, from: 5)
            let length = try header.uint64()
            let checksum = try header.uint64()
            guard UInt64(raw.count - headerSize) == length else {
                throw CacheStorageError.corrupt("length \(raw.count - headerSize) does not match the recorded \(length) (truncated?)")
            }
            guard hash(UnsafeRawBufferPointer(rebasing: raw[headerSize...])) == checksum else {
                throw CacheStorageError.corrupt("checksum mismatch")
            }
            var reader = Reader(raw, from: headerSize, owner: sharingBuffer ? data : nil)
            let key = try reader.string(reusing: expectedKey)
            let count = try reader.uint64()
            guard count >= 1, count <= maxVariants else { throw CacheStorageError.corrupt("implausible variant count \(count)") }
            var variants: [CacheEntry] = []
            variants.reserveCapacity(Int(count))
            for _ in 0..<count {
                let status = try reader.uint64()
                guard (100...999).contains(status) else { throw CacheStorageError.corrupt("implausible status \(status)") }
                let requestTime = try reader.time()
                let responseTime = try reader.time()
                let headers = HeaderFields(try reader.fields())
                var vary = try reader.fields()
                var lifetime: Double?
                if vary.last?.name == lifetimeField {
                    guard let seconds = Double(vary.removeLast().value), seconds.isFinite, (0...timeRange.upperBound).contains(seconds) else {
                        throw CacheStorageError.corrupt("implausible assigned lifetime")
                    }
                    lifetime = seconds
                }
                let partition = try reader.string()
                let body = try reader.bytes()
                bodies?.append((reader.offset - body.count)..<reader.offset)
                var entry = CacheEntry(
                    status: Int(status), headers: headers, body: body, url: nil, requestTime: requestTime,
                    responseTime: responseTime, varyValues: vary, partition: partition)
                entry.assignedLifetime = lifetime
                variants.append(entry)
            }
            guard reader.isAtEnd else { throw CacheStorageError.corrupt("trailing bytes after the record") }
            return CacheRecord(key: key, variants: variants)
        }
    }

    /// The record `template` stands for, with each variant's body taken from `data` at
    /// `bodies` — for bytes known to be the very bytes `template` was decoded from (a file held
    /// open and read again, unchanged since; see `HeldFile`), which need no second decoding.
    /// `template`'s own bodies are not used (they are kept empty, so a template pins no body).
    static func record(_ template: CacheRecord, bodies: [Range<Int>], in data: Data, sharingBuffer: Bool) -> CacheRecord? {
        guard bodies.count == template.variants.count, bodies.allSatisfy({ $0.lowerBound >= 0 && $0.upperBound <= data.count })
        else { return nil }
        var record = template
        data.withUnsafeBytes { raw in
            for (index, range) in bodies.enumerated() {
                record.variants[index].body = Reader.body(
                    UnsafeRawBufferPointer(rebasing: raw[range]), of: raw,
                    owner: sharingBuffer ? data : nil)
            }
        }
        return record
    }

    /// The checksum of records of `version`, or nil for a version this Recall does not read.
    private static func checksumFunction(of version: UInt8) -> ((UnsafeRawBufferPointer) -> UInt64)? {
        switch version {
        case Self.version, partialVersion: checksum
        case fourLaneVersion, fourLanePartialVersion: fourLaneChecksum
        case legacyVersion, legacyPartialVersion: legacyChecksum
        default: nil
        }
    }

    /// A 64-bit checksum of format versions 7 and 8, in the manner of Fletcher's (and of ZFS's
    /// `fletcher4`): the payload is read in 32-byte blocks as eight streams of 32-bit words (the
    /// low and high halves of four 8-byte lanes), and each stream keeps, in 64 bits, a running
    /// sum of its words and a sum of those sums. That is four vector additions, two masks and no
    /// multiplication per block. Words of 32 bits added into 64 bits cannot wrap in any record
    /// under 128 GiB, so the running sum changes whenever one word of a stream does, and when two
    /// words of a stream change and the running sum does not, the sum of sums (which weighs each
    /// word by its position) does: every change to one or two words of each stream is caught,
    /// and so are moved blocks, truncation and zeroed tails of real data. A change of three or
    /// more words of one stream in exact proportions (+d, −2d, +d) cancels, as in every
    /// Fletcher sum. The sixteen sums, the tail and the length are then mixed with
    /// multiplications into one value. It detects torn and garbage files at memory speed; it
    /// is not a defence against an adversary who can write the cache.
    static func checksum(_ data: Data) -> UInt64 {
        data.withUnsafeBytes { checksum($0) }
    }

    static func checksum(_ raw: UnsafeRawBufferPointer) -> UInt64 {
        var sums = Sums()
        let offset = sums.add(raw)
        return finish(sums.mixed(count: raw.count), raw, from: offset)
    }

    /// The running sums of ``checksum(_:)``: the four lanes of 32-bit words and their sums, over
    /// the 32-byte blocks added so far.
    struct Sums {
        // Four lanes a vector (eight would not fit the SSE2 registers: measured 2× slower).
        private var low = SIMD4<UInt64>(1, 2, 3, 4), high = SIMD4<UInt64>(5, 6, 7, 8)
        private var lowSums = SIMD4<UInt64>(repeating: 0), highSums = SIMD4<UInt64>(repeating: 0)

        /// Adds the whole 32-byte blocks of `raw`; returns where the rest (under 32 bytes) begins.
        @inline(__always)
        mutating func add(_ raw: UnsafeRawBufferPointer) -> Int {
            let mask = SIMD4<UInt64>(repeating: 0xFFFF_FFFF)
            var offset = 0
            // Loads through the base pointer: the buffer's own bounds check costs a tenth of the loop.
            while offset + 32 <= raw.count, let base = raw.baseAddress {
                var words = (base + offset).loadUnaligned(as: SIMD4<UInt64>.self)
                #if _endian(big)
                    words = SIMD4(words[0].byteSwapped, words[1].byteSwapped, words[2].byteSwapped, words[3].byteSwapped)
                #endif
                low &+= words & mask
                high &+= words &>> 32
                lowSums &+= low
                highSums &+= high
                offset += 32
            }
            return offset
        }

        /// The sixteen sums and the length of all the bytes, `count`, mixed into one value.
        @inline(__always)
        func mixed(count: Int) -> UInt64 {
            let multiplier: UInt64 = 0xBF58_476D_1CE4_E5B9
            var hash = 0x9E37_79B9_7F4A_7C15 ^ UInt64(count)
            func mix(_ value: UInt64) {
                hash = (hash ^ value) &* multiplier
                hash ^= hash >> 31
            }
            for lane in 0..<4 {
                mix(low[lane])
                mix(high[lane])
                mix(lowSums[lane])
                mix(highSums[lane])
            }
            return hash
        }
    }

    /// ``checksum(_:)`` of bytes that come in pieces: the same value as for the pieces joined.
    struct StreamingChecksum {
        private var sums = Sums()
        private var count = 0
        /// The bytes after the last whole 32-byte block (fewer than 32).
        private var rest: [UInt8] = []

        mutating func add(_ data: Data) {
            data.withUnsafeBytes { add($0) }
        }

        mutating func add(_ raw: UnsafeRawBufferPointer) {
            count += raw.count
            var raw = raw
            if !rest.isEmpty {
                let taken = min(32 - rest.count, raw.count)
                rest.append(contentsOf: raw.prefix(taken))
                raw = UnsafeRawBufferPointer(rebasing: raw[taken...])
                guard rest.count == 32 else { return }
                _ = rest.withUnsafeBytes { sums.add($0) }
                rest.removeAll(keepingCapacity: true)
            }
            let offset = sums.add(raw)
            rest.append(contentsOf: raw[offset...])
        }

        /// The checksum of every byte added.
        var value: UInt64 {
            rest.withUnsafeBytes { CacheRecordCodec.finish(sums.mixed(count: count), $0, from: 0) }
        }
    }

    /// The checksum of format versions 5 and 6: 8-byte words in four interleaved multiplying
    /// lanes (32 bytes a step); still read, no longer written.
    static func fourLaneChecksum(_ raw: UnsafeRawBufferPointer) -> UInt64 {
        let multiplier: UInt64 = 0xBF58_476D_1CE4_E5B9
        var lanes: (UInt64, UInt64, UInt64, UInt64) = (
            0x9E37_79B9_7F4A_7C15 ^ UInt64(raw.count), 0x6A09_E667_F3BC_C908,
            0xBB67_AE85_84CA_A73B, 0x3C6E_F372_FE94_F82B
        )
        var offset = 0
        while offset + 32 <= raw.count {
            lanes.0 = (lanes.0 ^ UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))) &* multiplier
            lanes.1 = (lanes.1 ^ UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))) &* multiplier
            lanes.2 = (lanes.2 ^ UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self))) &* multiplier
            lanes.3 = (lanes.3 ^ UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 24, as: UInt64.self))) &* multiplier
            lanes.0 ^= lanes.0 >> 31
            lanes.1 ^= lanes.1 >> 31
            lanes.2 ^= lanes.2 >> 31
            lanes.3 ^= lanes.3 >> 31
            offset += 32
        }
        var hash = lanes.0
        hash = ((hash ^ (hash >> 31)) &* multiplier) ^ lanes.1
        hash = ((hash ^ (hash >> 31)) &* multiplier) ^ lanes.2
        hash = ((hash ^ (hash >> 31)) &* multiplier) ^ lanes.3
        return finish(hash, raw, from: offset)
    }

    /// The checksum of format versions 3 and 4: one lane, so each word waits for the previous
    /// one's multiplication (several times slower than ``fourLaneChecksum(_:)``); still read, no longer written.
    static func legacyChecksum(_ raw: UnsafeRawBufferPointer) -> UInt64 {
        finish(0x9E37_79B9_7F4A_7C15 ^ UInt64(raw.count), raw, from: 0)
    }

    /// Mixes the whole words from `offset` on into `hash` one at a time, then the tail bytes,
    /// and finalizes.
    static func finish(_ hash: UInt64, _ raw: UnsafeRawBufferPointer, from offset: Int) -> UInt64 {
        var hash = hash
        var offset = offset
        while offset + 8 <= raw.count {
            hash = (hash ^ UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))) &* 0xBF58_476D_1CE4_E5B9
            hash ^= hash >> 31
            offset += 8
        }
        var tail: UInt64 = 0
        for index in offset..<raw.count { tail |= UInt64(raw[index]) << (8 * UInt64(index - offset)) }
        hash = (hash ^ tail) &* 0x94D0_49BB_1331_11EB
        return hash ^ (hash >> 29)
    }

    struct Writer {
        var data = Data()

        mutating func uint64(_ value: UInt64) {
            withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) }
        }

        mutating func bytes(_ bytes: Data) {
            uint64(UInt64(bytes.count))
            data.append(bytes)
        }

        mutating func string(_ text: String) {
            bytes(Data(text.utf8))
        }

        mutating func fields(_ fields: [HeaderFields.Field]) {
            uint64(UInt64(fields.count))
            for field in fields {
                string(field.name)
                string(field.value)
            }
        }
    }

    /// Reads a record's fields in place from its bytes, which stay valid while it is used
    /// (inside `Data.withUnsafeBytes`).
    struct Reader {
        let raw: UnsafeRawBufferPointer
        var offset: Int
        /// The `Data` the bytes belong to: a large body refers to its bytes instead of copying them.
        let owner: Data?

        /// Bodies at least this large, and at least half of the record's bytes, are not copied
        /// when there is an owner: they keep the record's bytes alive instead (at most twice
        /// what the body counts).
        static let sharedBodySize = 4096

        init(_ raw: UnsafeRawBufferPointer, from offset: Int, owner: Data? = nil) {
            self.raw = raw
            self.offset = offset
            self.owner = owner
        }

        var isAtEnd: Bool { offset == raw.count }

        mutating func uint64() throws -> UInt64 {
            guard raw.count - offset >= 8 else { throw CacheStorageError.corrupt("unexpected end of record") }
            let value = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            offset += 8
            return value
        }

        /// A time stored as the bit pattern of seconds since 1970; NaN, infinities and times
        /// beyond ``timeRange`` are corrupt.
        mutating func time() throws -> Date {
            let seconds = Double(bitPattern: try uint64())
            guard seconds.isFinite, timeRange.contains(seconds) else { throw CacheStorageError.corrupt("implausible time \(seconds)") }
            return Date(timeIntervalSince1970: seconds)
        }

        /// The next length-prefixed run of bytes, in place.
        private mutating func run() throws -> UnsafeRawBufferPointer {
            let count = try uint64()
            guard count <= UInt64(raw.count - offset) else { throw CacheStorageError.corrupt("length \(count) runs past the end") }
            let run = UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + Int(count))])
            offset += Int(count)
            return run
        }

        mutating func bytes() throws -> Data {
            Self.body(try run(), of: raw, owner: owner)
        }

        /// `bytes`, a run of the record `raw`: a copy, or for a large body with an `owner`, the
        /// owner's own bytes.
        static func body(_ bytes: UnsafeRawBufferPointer, of raw: UnsafeRawBufferPointer, owner: Data?) -> Data {
            guard let owner, bytes.count >= sharedBodySize, 2 * bytes.count >= raw.count, let base = bytes.baseAddress else {
                return Data(bytes)
            }
            // The body points into the record's buffer, which the deallocator keeps alive.
            return Data(
                bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: bytes.count,
                deallocator: .custom { _, _ in withExtendedLifetime(owner) {} })
        }

        /// The next string: `candidate` itself when it has the same bytes (no new string made).
        mutating func string(reusing candidate: String? = nil) throws -> String {
            let bytes = try run()
            if var candidate, candidate.utf8.count == bytes.count,
                candidate.withUTF8({ bytes.isEmpty || memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 })
            {
                return candidate
            }
            return String(decoding: bytes, as: UTF8.self)
        }

        mutating func fields() throws -> [HeaderFields.Field] {
            let count = try uint64()
            guard count <= UInt64(maxFieldsRead) else { throw CacheStorageError.corrupt("implausible field count \(count)") }
            var fields: [HeaderFields.Field] = []
            fields.reserveCapacity(Int(count))
            // Values were trimmed when their fields were made, before they were written.
            for _ in 0..<count { fields.append(HeaderFields.Field(name: try string(), trimmedValue: try string())) }
            return fields
        }
    }
}

extension CacheRecord {
    /// The record in Recall's binary format, as a ``CacheByteStore`` stores it (for tests that
    /// plant bytes).
    package func encoded() -> Data {
        CacheRecordCodec.encode(self)
    }

    /// Decodes and checks bytes made by ``encoded()``.
    /// - Throws: ``CacheStorageError`` (code `corrupt`) when they are not a valid record.
    package init(encoded data: Data) throws {
        self = try CacheRecordCodec.decode(data)
    }
}

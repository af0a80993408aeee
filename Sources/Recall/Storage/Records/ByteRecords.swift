import Foundation

/// The records in byte stores' bytes (not generic over the store: one function for every backend).
enum ByteRecords {
    /// What stored bytes hold for a key.
    enum Outcome {
        case record(CacheRecord)
        /// Not a record of this key.
        case corrupt
    }

    /// The record in `stored`, read for `key`: taken from its memo when the bytes were decoded
    /// before (no second check), else decoded and checked, and kept in the memo if there is one.
    static func decode(_ stored: StoredBytes, for key: String) -> Outcome {
        if let memo = stored.memo, let decoded = memo.decoded, decoded.byteCount == stored.data.count,
            let record = CacheRecordCodec.record(decoded.template, bodies: decoded.bodies, in: stored.data, sharingBuffer: stored.isUnshared),
            record.key == key
        {
            return .record(record)
        }
        // (A memo that does not fit the bytes — a store that broke its contract — is not trusted:
        // the bytes are decoded and checked as if there were none.)
        var bodies: [Range<Int>]? = stored.memo == nil ? nil : []
        guard
            let record = try? CacheRecordCodec.decode(
                stored.data, sharingBuffer: stored.isUnshared, expectedKey: key,
                bodies: &bodies)
        else { return .corrupt }
        guard record.key == key else { return .corrupt }
        if let memo = stored.memo, let bodies {
            var template = record
            for index in template.variants.indices { template.variants[index].body = Data() }
            memo.keep(DecodingMemo.Decoded(template: template, bodies: bodies, byteCount: stored.data.count))
        }
        return .record(record)
    }
}

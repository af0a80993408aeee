/// How the cache asks a storage for a record right after the fleet's coordination
/// (``FetchCoordinator``): what a claim or a wait found out, handed to the read as a value
/// (``CacheStorage/record(for:lookup:)``) rather than left with the key for a later read to find.
public enum RecordLookup: Sendable, Equatable {
    /// A lookup as usual.
    case usual
    /// The fleet paid for what is stored now (a wait for another process's fetch ended, or a
    /// claim says a record may be there): a storage with limits of its own may give this read more
    /// patience — a miss would fetch it again.
    case patient
    /// The claim just won found nothing stored under the key: a storage that is its own
    /// coordinator may answer `nil` without reading. (Any other storage reads as usual.) So a
    /// coordinator answers it only for the storage it coordinates: give
    /// ``HTTPCache/init(storage:configuration:coordinator:now:)`` the storage itself (or a
    /// ``TieredStorage`` over it) as its coordinator, never one over other records.
    case absent
}

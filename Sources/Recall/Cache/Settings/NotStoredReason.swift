/// Why a response the cache meant to store was not stored (``CacheEvent/notStored(_:)``,
/// ``CacheStatistics/notStored``): its body streamed to the caller but could not be kept.
public enum NotStoredReason: String, Sendable, Hashable, CaseIterable {
    /// The storage would not take the body: past its ``CacheStorage/entryLimit`` (a storage that
    /// stores in pieces takes more: `DiskStorage` up to its `byteLimit`), or its write failed (a
    /// full disk).
    case tooLarge
    /// The body did not arrive whole: it failed, was cut short of its `Content-Length`, or the
    /// caller stopped reading it (or dropped it unread).
    case incomplete
}

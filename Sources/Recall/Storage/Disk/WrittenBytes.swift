import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The bytes of a write in pieces, read back while the write goes on: a descriptor of its own on
/// the same file, opened for reading, at `base` (where the body begins in the record).
///
/// It reads only bytes the write has appended (its user knows how many: ``AppendedBytes``), and
/// it goes on reading them after the write was committed (renamed into place) or abandoned
/// (unlinked): the file lives as long as this descriptor. The bytes are read back unchecked, as
/// the process wrote them a moment before: the storage's directory is its user's alone
/// (``DiskStorage`` refuses one another user owns or can write to), and a hit of the record,
/// later, checks them against its checksum.
final class WrittenBytes: Sendable {
    private let descriptor: Int32
    private let base: Int

    /// Takes `descriptor` (closed with this object).
    init(descriptor: Int32, base: Int) {
        self.descriptor = descriptor
        self.base = base
    }

    deinit {
        close(descriptor)
    }

    /// The `count` bytes at `offset` from the base, or `nil` when they cannot be read (fewer than
    /// `count` are there, or the read fails).
    func read(_ count: Int, at offset: Int) -> Data? {
        PositionalRead.bytes(count, of: descriptor, at: base + offset)
    }
}

/// A ``RecordWriting`` whose body can be read back while it is written (``WrittenBytes``): a
/// streamed miss then hands its caller the body from the record instead of waiting on the caller
/// (``BodyTee/followed(passing:into:readingBack:url:ended:)``).
protocol RecordReadingBack: RecordWriting {
    /// A reader of the body appended so far, from its first byte; `nil` when the record cannot
    /// be read back (then the body goes to the caller as it passes).
    func bodyBytes() -> WrittenBytes?
}

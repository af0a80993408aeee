import Foundation

/// The bytes under a key, read in pieces (``CacheByteStore/reading(_:)``) instead of whole: a
/// file held open, say. They stay the bytes of the moment it was opened, whatever is written
/// under the key meanwhile.
public protocol ByteReading: Sendable {
    /// How many bytes there are.
    var count: Int { get }
    /// `count` bytes from `offset` (fewer only at the end). Throws when they cannot be read.
    func read(at offset: Int, count: Int) throws -> Data
}

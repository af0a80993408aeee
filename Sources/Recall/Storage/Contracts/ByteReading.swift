import Foundation

/// The bytes under a key, read in pieces (``CacheByteStore/reading(_:)``) instead of whole: a
/// file held open, say. They stay the bytes of the moment it was opened, whatever is written
/// under the key meanwhile.
public protocol ByteReading: Sendable {
    /// How many bytes there are.
    var count: Int { get }
    /// `count` bytes from `offset` (fewer only at the end). Throws when they cannot be read.
    func read(at offset: Int, count: Int) throws -> Data
    /// Whether the store knows these bytes whole and unchanged — it wrote them, or a reader read
    /// them whole and found them matching their checksum (``noteWhole()``), and they have not
    /// changed since — so a reader may skip its own check. `false` unless the store keeps track.
    var knownWhole: Bool { get }
    /// Tells the store that these bytes were read whole and found matching their checksum.
    func noteWhole()
}

extension ByteReading {
    /// `false`: every read is checked.
    public var knownWhole: Bool { false }
    /// Does nothing.
    public func noteWhole() {}
}

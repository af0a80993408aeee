import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Zero bytes of any length up to ``AccessLogReader/sizeLimit`` that cost no memory: views of
/// one read-only anonymous mapping, reserved once and never written, so none of its pages is
/// ever made resident (nor, being read-only, counted against the system's commit limit). The
/// eviction replay gives stored records bodies of the traced sizes with them: the storage
/// charges the sizes, and nothing of that size is allocated, whatever a log or a capture claims.
enum ZeroBytes {
    /// The longest run of zero bytes available.
    static let capacity = AccessLogReader.sizeLimit

    /// The mapping's address (an integer: a pointer is not Sendable); 0 when it could not be made.
    private static let address: UInt = {
        guard let pointer = mmap(nil, capacity, PROT_READ, MAP_PRIVATE | MAP_ANON | MAP_NORESERVE, -1, 0),
            pointer != UnsafeMutableRawPointer(bitPattern: -1)
        else { return 0 }
        return UInt(bitPattern: pointer)
    }()

    /// `count` zero bytes (clamped to 0…``capacity``). The bytes must never be written: nothing in
    /// a replay does (a storage only counts them). Where no mapping could be made, an ordinary
    /// zero-filled buffer, which the system too allocates lazily.
    static func data(count: Int) -> Data {
        let count = min(max(0, count), capacity)
        guard let base = UnsafeMutableRawPointer(bitPattern: address) else { return Data(count: count) }
        return Data(bytesNoCopy: base, count: count, deallocator: .none)
    }
}

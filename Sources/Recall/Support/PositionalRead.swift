import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads a run of a file's bytes at an offset with `pread` (the descriptor's position untouched,
/// so readers of one file need no lock between them), into a buffer of its own that is not zeroed
/// first.
enum PositionalRead {
    /// The `count` bytes of `descriptor` at `offset`; `nil` when fewer are there or the read
    /// fails, with `done` set to how many were read before.
    static func bytes(_ count: Int, of descriptor: Int32, at offset: Int, done read: inout Int) -> Data? {
        read = 0
        guard count > 0 else { return Data() }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 16)
        while read < count {
            let got = pread(descriptor, buffer + read, count - read, off_t(offset + read))
            if got < 0, errno == EINTR { continue }
            guard got > 0 else {
                buffer.deallocate()
                return nil
            }
            read += got
        }
        return Data(bytesNoCopy: buffer, count: count, deallocator: .custom { pointer, _ in pointer.deallocate() })
    }

    /// The `count` bytes of `descriptor` at `offset`; `nil` when fewer are there or the read fails.
    static func bytes(_ count: Int, of descriptor: Int32, at offset: Int) -> Data? {
        var done = 0
        return bytes(count, of: descriptor, at: offset, done: &done)
    }
}

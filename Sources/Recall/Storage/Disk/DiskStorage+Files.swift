import Dispatch
import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reading and writing a ``DiskStorage``'s files whole, with the system's calls.
extension DiskStorage {
    /// The whole file `name` in the directory `directory`, read with POSIX calls (Foundation's `Data(contentsOf:)` costs
    /// more than the read itself for small files on Linux). Only a regular file of at most
    /// `limit` bytes is read: a symbolic link, a pipe (which would block) or a device is refused.
    ///
    /// With `expectedSize` (the size the index recorded), the file is first read with one call
    /// asking for `expectedSize + 1` bytes, without `fstat`: a regular file answers short only
    /// at its end, so exactly `expectedSize` bytes is the whole file. A directory fails, a pipe
    /// opened non-blocking has nothing (or would need a writer in the cache's own 0700
    /// directory), and a device needs `mknod`. Anything else — the file was replaced
    /// meanwhile, or is not a regular file — is decided by the `fstat` path.
    ///
    /// With `holdingFor` (a settled age, see ``HeldFile``), the file's identity is taken before
    /// it is read and the file is returned open, to be held if its record passes its checks.
    static func readFile(
        _ name: String, in directory: Int32, limit: Int, expectedSize: Int? = nil,
        holdingFor settledAge: Int? = nil
    ) throws -> (Data, HeldFile?) {
        // (withCString hands over the string's own bytes; passing the String converts it to a new array.)
        let descriptor = name.withCString { openat(directory, $0, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) }
        guard descriptor >= 0 else {
            // A lack of resources says nothing of the file; anything else (gone, a link, …) does.
            if [EMFILE, ENFILE, ENOMEM, EINTR, EAGAIN].contains(errno) { throw OpenFailure() }
            throw CacheStorageError.corrupt("cannot open: \(String(cString: strerror(errno)))")
        }
        let opened = settledAge.flatMap { HeldFile(descriptor: descriptor, settledAge: $0) }
        defer { if opened == nil { close(descriptor) } }
        if let expectedSize, expectedSize > 0, expectedSize <= limit {
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: expectedSize + 1, alignment: 16)
            var count = systemRead(descriptor, buffer, expectedSize + 1)
            while count < 0, errno == EINTR { count = systemRead(descriptor, buffer, expectedSize + 1) }
            if count == expectedSize {
                return (Data(bytesNoCopy: buffer, count: count, deallocator: .custom { pointer, _ in pointer.deallocate() }), opened)
            }
            buffer.deallocate()
            guard lseek(descriptor, 0, SEEK_SET) == 0 else { throw CacheStorageError.corrupt("cannot read the file again") }
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw CacheStorageError.corrupt("not a regular file")
        }
        let size = Int(info.st_size)
        guard size <= limit else { throw CacheStorageError.corrupt("\(size) bytes, more than the \(limit)-byte entry limit") }
        // Read into memory that is not zeroed first (Data(count:) would write every byte twice).
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: max(1, size), alignment: 16)
        let offset = readFully(descriptor, into: buffer, count: size)
        guard offset == size else {
            buffer.deallocate()
            throw CacheStorageError.corrupt("short read: \(offset) of \(size) bytes")
        }
        return (Data(bytesNoCopy: buffer, count: size, deallocator: .custom { pointer, _ in pointer.deallocate() }), opened)
    }

    /// Reads up to `count` bytes into `buffer`, until the end of the file or an error; returns
    /// how many were read.
    static func readFully(_ descriptor: Int32, into buffer: UnsafeMutableRawPointer, count: Int) -> Int {
        var offset = 0
        while offset < count {
            let read = systemRead(descriptor, buffer + offset, count - offset)
            if read < 0, errno == EINTR { continue }
            if read <= 0 { break }
            offset += read
        }
        return offset
    }

    /// Writes `data` to a new file `name` in the directory `directory` (mode 0600); returns an
    /// error text on failure.
    static func writeFile(_ data: Data, to name: String, in directory: Int32) -> String? {
        let descriptor = openat(directory, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { return String(cString: strerror(errno)) }
        defer { close(descriptor) }
        return data.withUnsafeBytes { raw -> String? in
            var offset = 0
            while offset < raw.count {
                let written = systemWrite(descriptor, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return String(cString: strerror(errno))
                }
                offset += written
            }
            return nil
        }
    }
}

#if canImport(Darwin)
    private let systemWrite = Darwin.write
    private let systemRead = Darwin.read
#elseif canImport(Musl)
    private let systemWrite = Musl.write
    private let systemRead = Musl.read
#else
    private let systemWrite = Glibc.write
    private let systemRead = Glibc.read
#endif

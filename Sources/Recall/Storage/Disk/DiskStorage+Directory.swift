import Dispatch
import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The directory a ``DiskStorage`` keeps its files in: opened and checked once (its own, a real
/// directory), the marker and the secret it keeps there, and the names of its files.
extension DiskStorage {
    /// Whether the file `name`, of `size` bytes — more than a whole read takes — has the header and
    /// trailer of a record written in pieces whose lengths add up to its size (anything else that
    /// large is not a record of this cache).
    static func isRecordInPieces(_ name: String, size: Int, in directory: Int32) -> Bool {
        guard let reading = FileReading(name, in: directory), reading.count == size,
            size >= CacheRecordCodec.headerSize + CacheRecordCodec.trailerSize,
            let header = try? reading.read(at: 0, count: CacheRecordCodec.headerSize),
            let trailer = try? reading.read(at: size - CacheRecordCodec.trailerSize, count: CacheRecordCodec.trailerSize)
        else { return false }
        return (try? CacheRecordCodec.streamedLayout(header: header, trailer: trailer, count: size)) != nil
    }

    /// Creates the directory (mode 0700) if needed and opens it, checking that what was opened
    /// is safe to use: a directory, owned by the current user, not writable by group or others.
    /// The checks are made on the open descriptor, so they hold for the directory used.
    static func openDirectory(_ path: String) throws -> Int32 {
        var info = stat()
        if stat(path, &info) != 0 {
            guard errno == ENOENT else {
                throw CacheStorageError.directory("cannot use \(path): \(String(cString: strerror(errno)))")
            }
            do {
                try FileManager.default.createDirectory(
                    atPath: path, withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700])
            } catch {
                throw CacheStorageError.directory("cannot create \(path): \(error.localizedDescription)")
            }
        }
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw CacheStorageError.directory(
                errno == ENOTDIR
                    ? "\(path) exists and is not a directory"
                    : "cannot use \(path): \(String(cString: strerror(errno)))")
        }
        do {
            try check(descriptor, path: path)
        } catch {
            close(descriptor)
            throw error
        }
        return descriptor
    }

    /// Checks that the open directory `descriptor` (at `path`) is owned by the current user
    /// and not writable by group or others.
    static func check(_ descriptor: Int32, path: String) throws {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw CacheStorageError.directory("cannot use \(path): \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { throw CacheStorageError.directory("\(path) exists and is not a directory") }
        guard info.st_uid == geteuid() else {
            throw CacheStorageError.directory(
                "\(path) belongs to user \(info.st_uid), not to you (user \(geteuid())): another user could forge its entries; "
                    + "use a directory of your own, such as ~/.cache/recall")
        }
        guard info.st_mode & 0o022 == 0 else {
            throw CacheStorageError.directory(
                "\(path) is writable by \(info.st_mode & 0o002 != 0 ? "every user" : "its group") (mode \(String(info.st_mode & 0o7777, radix: 8))): "
                    + "others could forge its entries; run 'chmod go-w \(path)' or use a directory of your own")
        }
    }

    /// Whether the cache could have created a file of this name.
    static func isOwnName(_ name: String) -> Bool {
        if name == markerName || name == lockName { return true }
        let bytes = Array(name.utf8)
        guard bytes.count >= 64 + suffix.utf8.count, bytes[..<64].allSatisfy(isLowerHex),
            bytes[64..<(64 + suffix.utf8.count)].elementsEqual(suffix.utf8)
        else { return false }
        let rest = bytes[(64 + suffix.utf8.count)...]
        if rest.isEmpty { return true }
        // `.tmp-<generation>-<pid>`
        let tmp = Array(".tmp-".utf8)
        guard rest.starts(with: tmp) else { return false }
        let numbers = rest.dropFirst(tmp.count).split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        return numbers.count == 2 && numbers.allSatisfy { !$0.isEmpty && $0.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
    }

    static func isLowerHex(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66)
    }

    /// The names in the open directory `descriptor` (at `path`), without `.` and `..`.
    static func names(in descriptor: Int32, path: String) throws -> [String] {
        // fdopendir takes the descriptor it is given: give it a copy, the storage keeps its own.
        func failure() -> CacheStorageError {
            CacheStorageError.directory("cannot list \(path): \(String(cString: strerror(errno)))")
        }
        let copy = dup(descriptor)
        guard copy >= 0 else { throw failure() }
        guard let stream = fdopendir(copy) else {
            let error = failure()
            close(copy)
            throw error
        }
        defer { closedir(stream) }
        rewinddir(stream)
        var names: [String] = []
        while true {
            errno = 0  // readdir returns nil both at the end and on an error: errno tells them apart
            guard let entry = readdir(stream) else {
                if errno != 0 { throw failure() }
                return names
            }
            let name = withUnsafePointer(to: &entry.pointee.d_name) { tuple in
                String(cString: UnsafeRawPointer(tuple).assumingMemoryBound(to: CChar.self))
            }
            if name != "." && name != ".." { names.append(name) }
        }
    }

    /// Removes the file `name` in the directory `descriptor`, or the empty directory squatting
    /// on the name.
    static func removeFile(_ name: String, in descriptor: Int32) {
        if unlinkat(descriptor, name, 0) != 0, errno == EISDIR || errno == EPERM { unlinkat(descriptor, name, AT_REMOVEDIR) }
    }

    /// Reads the secret from the `.recall-cache` file, or writes a new one (a new cache, or a
    /// first-edition cache without one, or a damaged file).
    static func loadOrCreateSecret(in directory: Int32, path: String) throws -> [UInt8] {
        let markerPath = path + "/" + markerName
        if let (data, _) = try? readFile(markerName, in: directory, limit: 4096), let text = String(data: data, encoding: .utf8),
            text.hasPrefix(markerHeader)
        {
            let hex = Array(text.dropFirst(markerHeader.count).trimmingCharacters(in: .whitespacesAndNewlines).utf8)
            if hex.count == StorageSecret.byteCount * 2, hex.allSatisfy(isLowerHex) {
                return stride(from: 0, to: hex.count, by: 2).map { UInt8(String(decoding: hex[$0..<($0 + 2)], as: UTF8.self), radix: 16)! }
            }
        }
        let secret = StorageSecret.make()
        let contents = Data((markerHeader + SHA256.hexString(secret) + "\n").utf8)
        // The directory is locked: no other storage writes the file meanwhile. A crash while it is
        // written leaves a damaged file, which the next open replaces like this.
        unlinkat(directory, markerName, 0)
        if let failure = writeFile(contents, to: markerName, in: directory) {
            unlinkat(directory, markerName, 0)
            throw CacheStorageError.directory("cannot write \(markerPath): \(failure)")
        }
        return secret
    }
}

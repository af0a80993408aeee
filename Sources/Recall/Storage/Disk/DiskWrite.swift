import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A record of a ``DiskStorage`` written in pieces: appended to a file of its own (mode 0600,
/// named as the storage's other writes in progress, so a crash leaves nothing a later process
/// reads: the storage removes such files when it opens), renamed into place when committed.
/// A write dropped without a commit removes its file.
final class DiskWrite: ByteWriting {
    private struct State {
        var descriptor: Int32
        var written = 0
        /// Committed or abandoned: the file is gone or in place.
        var ended = false
    }

    private let storage: DiskStorage
    private let key: String
    /// The storage's number for this write.
    private let generation: UInt64
    private let temporary: String
    private let limit: Int
    private let state: Locked<State>

    init?(storage: DiskStorage, key: String, generation: UInt64, temporary: String, limit: Int) {
        let descriptor = openat(storage.directoryDescriptor, temporary, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            storage.countFailedWrite(refused: false)
            return nil
        }
        self.storage = storage
        self.key = key
        self.generation = generation
        self.temporary = temporary
        self.limit = limit
        self.state = Locked(State(descriptor: descriptor))
    }

    deinit {
        abandonNow()
    }

    func append(_ bytes: Data) async throws {
        // (Removed since it began — a logout's `removeAll()`, say: it would not land; stop writing.)
        guard !storage.isRevoked(generation) else { throw CacheStorageError.writeFailed("the key was removed while it was written") }
        // (Off the cooperative pool: a write the kernel throttles must not hold one of its threads.)
        try await FileWrites.run { [self] in try appendNow(bytes) }
    }

    /// Appends `bytes` to the file, blocking until they are written.
    private func appendNow(_ bytes: Data) throws {
        try state.withLock { state in
            guard !state.ended else { throw CacheStorageError.writeFailed("the write has ended") }
            guard state.written + bytes.count <= limit else {
                storage.countFailedWrite(refused: true)
                throw CacheStorageError.writeFailed("the record passes the storage's \(limit)-byte limit")
            }
            let descriptor = state.descriptor
            let failure = bytes.withUnsafeBytes { raw -> Int32? in
                var offset = 0
                while offset < raw.count {
                    let written = write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        return errno
                    }
                    offset += written
                }
                return nil
            }
            if let failure {
                storage.countFailedWrite(refused: false)
                throw CacheStorageError.writeFailed("cannot write: \(String(cString: strerror(failure)))")
            }
            state.written += bytes.count
        }
    }

    func commit() async throws {
        let (size, descriptor) = try state.withLock { state -> (Int, Int32) in
            guard !state.ended else { throw CacheStorageError.writeFailed("the write has ended") }
            state.ended = true
            return (state.written, state.descriptor)
        }
        defer { close(descriptor) }  // (open while it lands: the storage notes the landed file's identity)
        guard await storage.land(temporary, for: key, size: size, descriptor: descriptor, generation: generation) else {
            throw CacheStorageError.writeFailed("the file could not be put in place")
        }
    }

    func abandon() async {
        abandonNow()
    }

    /// The file read back from `offset` (``WrittenBytes``), through a descriptor of its own
    /// opened on the same file; `nil` once the write has ended, or when the name no longer
    /// leads to the file this write appends to.
    func readBack(from offset: Int) -> WrittenBytes? {
        state.withLock { state -> WrittenBytes? in
            guard !state.ended else { return nil }
            let reading = openat(storage.directoryDescriptor, temporary, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard reading >= 0 else { return nil }
            var written = stat(), read = stat()
            guard fstat(state.descriptor, &written) == 0, fstat(reading, &read) == 0, written.st_dev == read.st_dev, written.st_ino == read.st_ino
            else {
                close(reading)
                return nil
            }
            return WrittenBytes(descriptor: reading, base: offset)
        }
    }

    /// Ends the write unless it ended: its file closed and removed, the storage told.
    private func abandonNow() {
        let descriptor = state.withLock { state -> Int32? in
            guard !state.ended else { return nil }
            state.ended = true
            return state.descriptor
        }
        guard let descriptor else { return }
        close(descriptor)
        unlinkat(storage.directoryDescriptor, temporary, 0)
        storage.endWrite(generation)
    }
}

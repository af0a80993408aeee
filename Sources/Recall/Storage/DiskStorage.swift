import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A ``CacheStorage`` on disk that survives restarts and crashes.
///
/// - One directory (created with mode 0700), one file per key (mode 0600), named by the
///   SHA-256 of the key: file names never come from URL text. The full key is stored in the
///   file and compared on every read.
/// - Each write goes to a temporary file that is then atomically renamed over the old one,
///   so a crash leaves either the old record or the new one, never half of one; a torn or
///   garbage file fails its length and checksum check, counts as a miss and is removed.
/// - Writes happen on a background queue, off the caller's path; until a write lands, reads
///   are answered from the pending record, so a store is visible to the next read at once.
/// - The index (file sizes and recency) is rebuilt from the directory when the storage is
///   opened; a total byte limit is kept by evicting with the chosen policy (S3-FIFO by default).
/// - The directory is locked (`flock`) while open: a second storage on the same directory,
///   in this process or another, gets ``CacheStorageError/locked(_:)`` instead of corrupting it.
public final class DiskStorage: CacheStorage {
    /// The cache directory.
    public let directory: URL
    /// The most bytes of files kept.
    public let byteLimit: Int
    /// The largest single record written.
    public let entryLimit: Int

    private enum Pending {
        case store(CacheRecord, generation: UInt64)
        case remove(generation: UInt64)

        var generation: UInt64 {
            switch self {
            case .store(_, let generation), .remove(let generation): generation
            }
        }
    }

    private struct State {
        var sizes: [String: Int] = [:]
        var policy: any EvictionPolicy
        var statistics = StorageStatistics()
        var pending: [String: Pending] = [:]
        var generation: UInt64 = 0
    }

    private static let suffix = ".rce"
    private let state: Locked<State>
    private let queue = DispatchQueue(label: "Recall.DiskStorage.writes")
    private let lockDescriptor: Int32

    /// Opens (creating if needed) a cache in `directory`.
    /// - Throws: ``CacheStorageError/directory(_:)`` when the directory cannot be made or
    ///   read; ``CacheStorageError/locked(_:)`` when another storage has it open.
    public init(directory: URL, byteLimit: Int = 256 << 20, entryLimit: Int = 16 << 20, eviction: Eviction = .s3fifo) throws {
        self.directory = directory
        self.byteLimit = max(0, byteLimit)
        self.entryLimit = max(0, entryLimit)
        let path = directory.path
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw CacheStorageError.directory("cannot create \(path): \(error.localizedDescription)")
        }
        _ = chmod(path, 0o700)
        let lockPath = directory.appendingPathComponent(".lock").path
        let descriptor = open(lockPath, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw CacheStorageError.directory("cannot open \(lockPath): \(String(cString: strerror(errno)))") }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            throw CacheStorageError.locked("\(path) is open in another DiskStorage (this or another process)")
        }
        self.lockDescriptor = descriptor

        var state = State(policy: eviction.make())
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: path)
        } catch {
            close(descriptor)
            throw CacheStorageError.directory("cannot list \(path): \(error.localizedDescription)")
        }
        var found: [(name: String, size: Int, modified: Double)] = []
        for name in names {
            let file = path + "/" + name
            if name.contains(".tmp-") {
                unlink(file) // a write interrupted by a crash
                continue
            }
            guard name.hasSuffix(Self.suffix) else { continue }
            var info = stat()
            guard stat(file, &info) == 0 else { continue }
            #if canImport(Darwin)
            let modified = info.st_mtimespec
            #else
            let modified = info.st_mtim
            #endif
            found.append((name, Int(info.st_size), Double(modified.tv_sec) + Double(modified.tv_nsec) * 1e-9))
        }
        for file in found.sorted(by: { $0.modified < $1.modified }) {
            state.sizes[file.name] = file.size
            state.policy.recordInsert(file.name, size: file.size)
            state.statistics.bytes += file.size
        }
        state.statistics.count = state.sizes.count
        self.state = Locked(state)
    }

    deinit {
        // Queued writes hold a strong reference, so by now every write has landed.
        flock(lockDescriptor, LOCK_UN)
        close(lockDescriptor)
    }

    /// The file name for `key`: its SHA-256 in hex.
    static func fileName(for key: String) -> String { SHA256.hex(key) + suffix }

    /// The record under `key`: a pending write if there is one, else the file.
    public func record(for key: String) async -> CacheRecord? {
        let name = Self.fileName(for: key)
        let lookup = state.withLock { state -> (pending: Pending?, onDisk: Bool) in
            if let pending = state.pending[name] { return (pending, false) }
            guard state.sizes[name] != nil else { return (nil, false) }
            state.policy.recordAccess(name)
            return (nil, true)
        }
        switch lookup.pending {
        case .store(let record, _)?: return record.key == key ? record : nil
        case .remove?: return nil
        case nil: break
        }
        guard lookup.onDisk else { return nil }
        let file = directory.appendingPathComponent(name)
        do {
            let record = try CacheRecordCodec.decode(try Self.readFile(file.path))
            return record.key == key ? record : nil
        } catch {
            state.withLock { state in
                // Remove only if no newer write was queued meanwhile.
                guard state.pending[name] == nil, let size = state.sizes.removeValue(forKey: name) else { return }
                state.policy.recordRemoval(name)
                state.statistics.count -= 1
                state.statistics.bytes -= size
                state.statistics.corruptRemoved += 1
                if unlink(file.path) != 0 { rmdir(file.path) } // an empty directory squatting on the name
            }
            return nil
        }
    }

    /// Queues `record` to be written; reads see it at once.
    public func store(_ record: CacheRecord) async {
        let name = Self.fileName(for: record.key)
        let generation = state.withLock { state -> UInt64 in
            state.generation += 1
            state.pending[name] = .store(record, generation: state.generation)
            return state.generation
        }
        queue.async { [self] in write(record, name: name, generation: generation) }
    }

    /// Queues the removal of `key`; reads miss at once.
    public func remove(_ key: String) async {
        let name = Self.fileName(for: key)
        let generation = state.withLock { state -> UInt64 in
            state.generation += 1
            state.pending[name] = .remove(generation: state.generation)
            return state.generation
        }
        queue.async { [self] in
            state.withLock { state in
                deleteLocked(name, from: &state)
                finishLocked(name, generation: generation, in: &state)
            }
        }
    }

    /// Removes every record and file.
    public func removeAll() async {
        await flush()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async { [self] in
                state.withLock { state in
                    for name in Array(state.sizes.keys) { deleteLocked(name, from: &state) }
                }
                continuation.resume()
            }
        }
    }

    /// Waits until every queued write has landed on disk.
    public func flush() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async { continuation.resume() }
        }
    }

    /// Counters and sizes.
    public var statistics: StorageStatistics { state.withLock { $0.statistics } }

    private func write(_ record: CacheRecord, name: String, generation: UInt64) {
        let data = CacheRecordCodec.encode(record)
        let path = directory.appendingPathComponent(name).path
        guard data.count <= entryLimit, data.count <= byteLimit else {
            state.withLock { state in
                state.statistics.rejected += 1
                deleteLocked(name, from: &state) // never keep an older copy of a refused record
                finishLocked(name, generation: generation, in: &state)
            }
            return
        }
        let temporary = path + ".tmp-\(generation)-\(getpid())"
        let failure = Self.writeFile(data, to: temporary)
        state.withLock { state in
            defer { finishLocked(name, generation: generation, in: &state) }
            guard failure == nil, rename(temporary, path) == 0 else {
                unlink(temporary)
                state.statistics.writeFailures += 1
                deleteLocked(name, from: &state)
                return
            }
            if let old = state.sizes[name] {
                state.statistics.bytes -= old
            } else {
                state.statistics.count += 1
            }
            state.sizes[name] = data.count
            state.statistics.bytes += data.count
            state.policy.recordInsert(name, size: data.count)
            while state.statistics.bytes > byteLimit, let victim = state.policy.victim() {
                if state.sizes[victim] == nil { state.policy.recordRemoval(victim); continue }
                deleteLocked(victim, from: &state)
                state.statistics.evictions += 1
            }
        }
    }

    /// The whole file at `path`, read with POSIX calls (Foundation's `Data(contentsOf:)` costs
    /// more than the read itself for small files on Linux).
    private static func readFile(_ path: String) throws -> Data {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw CacheStorageError.corrupt("cannot open: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw CacheStorageError.corrupt("not a regular file")
        }
        let size = Int(info.st_size)
        var data = Data(count: size)
        let read = data.withUnsafeMutableBytes { raw -> Int in
            var offset = 0
            while offset < size {
                let count = systemRead(descriptor, raw.baseAddress! + offset, size - offset)
                if count < 0, errno == EINTR { continue }
                if count <= 0 { break }
                offset += count
            }
            return offset
        }
        guard read == size else { throw CacheStorageError.corrupt("short read: \(read) of \(size) bytes") }
        return data
    }

    /// Writes `data` to a new file at `path` (mode 0600); returns an error text on failure.
    private static func writeFile(_ data: Data, to path: String) -> String? {
        let descriptor = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
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

    private func deleteLocked(_ name: String, from state: inout State) {
        unlink(directory.appendingPathComponent(name).path)
        guard let size = state.sizes.removeValue(forKey: name) else { return }
        state.policy.recordRemoval(name)
        state.statistics.count -= 1
        state.statistics.bytes -= size
    }

    private func finishLocked(_ name: String, generation: UInt64, in state: inout State) {
        if state.pending[name]?.generation == generation { state.pending[name] = nil }
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

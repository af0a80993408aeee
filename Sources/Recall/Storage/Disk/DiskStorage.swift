import Dispatch
import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A ``CacheByteStore`` on disk that survives restarts and crashes.
///
/// - One directory, one file per key (mode 0600), named by the SHA-256 of the key: file names
///   never come from URL text. The full key is stored in the file and compared on every read.
/// - Each write goes to a temporary file that is then atomically renamed over the old one,
///   so a crash leaves either the old record or the new one, never half of one; a torn or
///   garbage file fails its length and checksum check, counts as a miss and is removed.
/// - Writes happen on a background queue, off the caller's path; until a write lands, reads
///   are answered from the pending record, so a store is visible to the next read at once.
///   Queued writes are bounded (``pendingByteLimit``): past it, a store waits for the queue.
/// - Up to ``openFileLimit`` files read lately are held open: while a held file is unchanged
///   (its identity, taken before the first read, is the same after each reread), reading it
///   again takes one `pread` and one `fstat`, and its bytes come with the same ``DecodingMemo``,
///   so once they passed their checks they are not checked or decoded twice (see `HeldFile`).
/// - The index (file sizes and recency) is rebuilt from the directory when the storage is
///   opened; a total byte limit is kept by evicting with the chosen policy (S3-FIFO by default).
/// - The directory is locked (`flock`) while open: a second storage on the same directory,
///   in this process or another, gets ``CacheStorageError/locked(_:)`` instead of corrupting it.
/// - The directory is held open, and every file is opened, renamed and removed relative to it:
///   if its path is renamed, replaced or made a link while the storage is open, reads and
///   writes still go to the directory that was checked when it opened.
///
/// **The directory belongs to the cache and to you.** It must be new, empty, or a Recall cache
/// (it holds a `.recall-cache` file, mode 0600, with the storage's ``secret``); it must be
/// owned by the current user and not writable by group or others. Anything else is refused
/// with ``CacheStorageError/directory(_:)`` before a single file is written. The storage only
/// ever creates, reads or deletes its own files (`.lock`, `.recall-cache`, `<sha-256>.rce`
/// and their temporary `….rce.tmp-…` siblings), opens them without following symbolic links,
/// and reads only regular files no larger than ``entryLimit``.
public final class DiskStorage: CacheByteStore {
    /// The cache directory.
    public let directory: URL
    /// The directory, held open from the start: every file is opened, renamed and removed
    /// relative to it (`openat`, `renameat`, `unlinkat`). A hit walks one path component, not
    /// the whole path; and if the path is renamed, replaced or made a link while the storage is
    /// open, reads and writes still go to the one directory that was checked when it opened.
    let directoryDescriptor: Int32
    /// The most bytes of files kept.
    public let byteLimit: Int
    /// The largest record written or read whole; a record written in pieces may be larger (up to
    /// ``byteLimit``), and is read in pieces.
    public let entryLimit: Int
    /// The most bytes of records queued for writing; a store past it waits until the queue
    /// has written what was queued before it, so memory stays bounded under any load.
    public let pendingByteLimit: Int
    /// The most files held open after a read (0: none). A held file is read again with one
    /// `pread` and one `fstat`, and no checksum once its record passed its checks, while it is
    /// unchanged; see `HeldFile`. Each costs one file descriptor.
    public let openFileLimit: Int
    /// How long (seconds) a file must have been unchanged before it is held open.
    private let settledAge: Int
    /// The secret an ``HTTPCache`` hashes credentials with, kept in the directory's
    /// `.recall-cache` file so that it lives exactly as long as the entries.
    public let secret: [UInt8]
    /// The order of the writes of every cache over this storage (one per directory: a second
    /// storage over it in this process or another is refused).
    public let writeOrder: StorageWriteOrder? = StorageWriteOrder()

    enum Pending {
        case store(Data, generation: UInt64)
        case remove(generation: UInt64)

        var generation: UInt64 {
            switch self {
            case .store(_, let generation), .remove(let generation): generation
            }
        }
    }

    struct State {
        var sizes: [String: Int] = [:]
        var policy: any EvictionPolicy
        var statistics = StorageStatistics()
        var pending: [String: Pending] = [:]
        var pendingBytes = 0
        var generation: UInt64 = 0
        /// Files held open after a read (``HeldFile``), at most ``openFileLimit``.
        var held: [String: Held] = [:]
        /// Writes in pieces under way (``DiskWrite``), by generation: the file each is for, and
        /// whether a removal of that file (or of all) came since it began — then it must not land.
        var writesInPieces: [UInt64: (name: String, revoked: Bool)] = [:]
        var heldSerial: UInt64 = 0
    }

    /// `open` failed for want of resources (descriptors, memory), not because of the file.
    struct OpenFailure: Error {}

    /// A file held open, with the memo handed out with its bytes: while the file is unchanged,
    /// reading it again gives the same bytes, so what they decoded to is not decoded again.
    struct Held {
        var file: HeldFile
        /// An order for replacing the oldest when the table is full.
        var serial: UInt64
        var memo: DecodingMemo
    }

    static let suffix = ".rce"
    static let markerName = ".recall-cache"
    static let lockName = ".lock"
    static let markerHeader = "recall-cache 1\n"
    let state: Locked<State>
    /// File names of recently used keys: a hit computes no SHA-256 for a key it has seen.
    private let names = Locked<[String: String]>([:])
    /// Large files known whole: their bodies are served without a checksum pass.
    let checkedFiles: CheckedFiles
    private static let namesRemembered = 4096
    let queue = DispatchQueue(label: "Recall.DiskStorage.writes")
    private let lockDescriptor: Int32

    /// Opens (creating if needed) a cache in `directory`.
    /// - Throws: ``CacheStorageError/directory(_:)`` when the directory cannot be made or
    ///   read, is not yours, is writable by others, or holds files that are not a Recall
    ///   cache's; ``CacheStorageError/locked(_:)`` when another storage has it open.
    /// - Parameters:
    ///   - directory: the cache's directory; made if it does not exist, and yours alone.
    ///   - byteLimit: the most bytes of records the directory holds; older ones are evicted past it.
    ///   - entryLimit: the largest record written and read whole; larger ones (bodies that
    ///     stream) are written and read in pieces.
    ///   - pendingByteLimit: the most bytes queued for writing before a store waits for the queue.
    ///   - eviction: which records go first when the directory is full (``Eviction/s3fifo``).
    ///   - openFileLimit: the most files held open for fast rereads (``openFileLimit``).
    public convenience init(
        directory: URL, byteLimit: Int = 256 << 20, entryLimit: Int = 16 << 20,
        pendingByteLimit: Int = 16 << 20, eviction: Eviction = .s3fifo, openFileLimit: Int = 64
    ) throws {
        try self.init(
            directory: directory, byteLimit: byteLimit, entryLimit: entryLimit, pendingByteLimit: pendingByteLimit,
            eviction: eviction, openFileLimit: openFileLimit, settledAge: HeldFile.settledAge)
    }

    /// The designated initializer; `settledAge` (seconds) is shortened only by tests.
    init(
        directory: URL, byteLimit: Int, entryLimit: Int, pendingByteLimit: Int, eviction: Eviction, openFileLimit: Int,
        settledAge: Int
    ) throws {
        self.directory = directory
        self.openFileLimit = max(0, openFileLimit)
        self.settledAge = settledAge
        self.checkedFiles = CheckedFiles(settledAge: settledAge)
        self.byteLimit = max(0, byteLimit)
        self.entryLimit = max(0, entryLimit)
        self.pendingByteLimit = max(0, pendingByteLimit)
        let path = directory.path
        guard directory.isFileURL, !path.isEmpty else {
            throw CacheStorageError.directory("'\(directory)' is not a directory path")
        }
        let directoryDescriptor = try Self.openDirectory(path)
        var descriptor: Int32 = -1
        let names: [String]
        do {
            names = try Self.names(in: directoryDescriptor, path: path)
            let hasMarker = names.contains(Self.markerName)
            if !hasMarker, let stranger = names.first(where: { !Self.isOwnName($0) }) {
                throw CacheStorageError.directory(
                    "\(path) is not empty and is not a Recall cache (it holds '\(stranger)' and no \(Self.markerName) file); "
                        + "give DiskStorage a new or empty directory of its own, such as ~/.cache/recall")
            }
            let lockPath = path + "/" + Self.lockName
            descriptor = openat(directoryDescriptor, Self.lockName, O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
            guard descriptor >= 0 else {
                throw CacheStorageError.directory(
                    "cannot open \(lockPath): \(String(cString: strerror(errno)))"
                        + (errno == ELOOP ? " (it is a symbolic link: remove it)" : ""))
            }
            guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
                throw CacheStorageError.locked("\(path) is open in another DiskStorage (this or another process)")
            }
            secret = try Self.loadOrCreateSecret(in: directoryDescriptor, path: path)
        } catch {
            if descriptor >= 0 { close(descriptor) }
            close(directoryDescriptor)
            throw error
        }
        self.lockDescriptor = descriptor
        self.directoryDescriptor = directoryDescriptor

        var policy = eviction.make()
        policy.setCapacity(byteLimit: self.byteLimit, countLimit: Int.max)
        var state = State(policy: policy)
        var found: [(name: String, size: Int, modified: Double)] = []
        var cleaned = 0
        for name in names where name != Self.markerName && name != Self.lockName && Self.isOwnName(name) {
            var info = stat()
            guard fstatat(directoryDescriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            let regular = (info.st_mode & S_IFMT) == S_IFREG
            let size = Int(info.st_size)
            if !name.hasSuffix(Self.suffix) || !regular || size > max(self.entryLimit, self.byteLimit)
                || (size > self.entryLimit && !Self.isRecordInPieces(name, size: size, in: directoryDescriptor))
            {
                // A write interrupted by a crash, or something that is not a record of this cache
                // under one of its names (a link, a pipe, an oversized file): never read it.
                Self.removeFile(name, in: directoryDescriptor)
                if name.hasSuffix(Self.suffix) { cleaned += 1 }
                continue
            }
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
        state.statistics.corruptRemoved = cleaned
        self.state = Locked(state)
    }

    deinit {
        // Queued writes hold a strong reference, so by now every write has landed.
        flock(lockDescriptor, LOCK_UN)
        close(lockDescriptor)
        close(directoryDescriptor)
    }

    /// The file name for `key`: its SHA-256 in hex.
    static func fileName(for key: String) -> String { SHA256.hex(key) + suffix }

    /// ``fileName(for:)``, remembered for the last few thousand keys.
    func name(for key: String) -> String {
        if let known = names.withLock({ $0[key] }) { return known }
        let computed = Self.fileName(for: key)
        names.withLock { names in
            if names.count >= Self.namesRemembered { names.removeAll(keepingCapacity: true) }
            names[key] = computed
        }
        return computed
    }

    /// The bytes under `key`: a pending write if there is one, else the file's. A file that
    /// cannot be read as a regular file within ``entryLimit`` is removed (a miss). A file read
    /// may be held open (``openFileLimit``): read again through it while it is unchanged, its
    /// bytes come with the same ``DecodingMemo``, so they are not checked or decoded twice.
    public func bytes(for key: String) async -> StoredBytes? {
        let name = name(for: key)
        guard let read = read(name, holding: openFileLimit > 0) else { return nil }
        if let held = read.held { return StoredBytes(read.data, isUnshared: true, memo: held.memo) }
        if let opened = read.opened {
            let memo = DecodingMemo()
            let isHeld = hold(Held(file: opened, serial: 0, memo: memo), as: name)
            return StoredBytes(read.data, isUnshared: true, memo: isHeld ? memo : nil)
        }
        return StoredBytes(read.data, isUnshared: read.fromFile)
    }

    /// The bytes under `key` when a file held open for it (see ``bytes(for:)``), unchanged since
    /// it was read and its record checked (its memo kept what it decoded to), can be read again
    /// with one `pread` and one `fstat`; `nil` when it is not at hand so (no file held for the
    /// key, not checked yet, a write pending, the file changed).
    public func bytesWithoutSuspending(for key: String) -> StoredBytes? {
        guard openFileLimit > 0 else { return nil }
        let name = name(for: key)
        let found = state.withLock { state -> Held? in
            guard !state.held.isEmpty, state.pending.isEmpty || state.pending[name] == nil, let held = state.held[name],
                state.sizes[name] == held.file.identity.size, held.memo.isFilled
            else { return nil }
            state.policy.recordAccess(name)
            return held
        }
        guard let found else { return nil }
        guard let data = found.file.reread() else {
            release(found, as: name)
            return nil
        }
        return StoredBytes(data, isUnshared: true, memo: found.memo)
    }

    /// Lets go of `held`, found changed, replaced or removed since it was first read,
    /// unless the table holds another file for `name` by now.
    private func release(_ held: Held, as name: String) {
        let dropped = state.withLock { state in state.held[name]?.file === held.file ? state.held.removeValue(forKey: name) : nil }
        _ = dropped  // closed here, outside the lock
    }

    /// What one read found.
    private struct Read {
        /// The bytes.
        var data: Data
        /// Whether they were just read from the file (else they are a pending write's, which
        /// the write queue still holds).
        var fromFile: Bool
        /// The held file they were read through, unchanged since it was first read.
        var held: Held?
        /// The file, kept open, when it may be held once its record is checked.
        var opened: HeldFile?
    }

    /// The bytes of the file `name` (or of its pending write). With `holding`, through the
    /// file held open for it if there is one, and otherwise keeping the file open to be held.
    private func read(_ name: String, holding: Bool) -> Read? {
        let lookup = state.withLock { state -> (pending: Pending?, size: Int?, held: Held?) in
            // (An empty table answers without hashing the name.)
            if !state.pending.isEmpty, let pending = state.pending[name] { return (pending, nil, nil) }
            guard let size = state.sizes[name] else { return (nil, nil, nil) }
            state.policy.recordAccess(name)
            return (nil, size, holding && !state.held.isEmpty ? state.held[name] : nil)
        }
        switch lookup.pending {
        case .store(let data, _)?: return Read(data: data, fromFile: false)
        case .remove?: return nil
        case nil: break
        }
        guard let size = lookup.size else { return nil }
        // (A record written in pieces larger than a whole read is read in pieces: ``reading(_:)``.)
        guard size <= entryLimit else { return nil }
        if let held = lookup.held {
            if held.file.identity.size == size, let data = held.file.reread() { return Read(data: data, fromFile: true, held: held) }
            // Changed, replaced or removed since it was first read: read it by name, anew.
            release(held, as: name)
        }
        do {
            let (data, opened) = try Self.readFile(
                name, in: directoryDescriptor, limit: entryLimit, expectedSize: size,
                holdingFor: holding ? settledAge : nil)
            return Read(data: data, fromFile: true, opened: opened)
        } catch is OpenFailure {
            // Out of descriptors or memory: a miss, and the file stays. The held files give
            // their descriptors back.
            let released = state.withLock { state in
                defer { state.held.removeAll() }
                return state.held
            }
            _ = released  // closed here, outside the lock
            return nil
        } catch {
            discard(name)
            return nil
        }
    }

    /// Puts `held`, a file just read, in the table of held files, unless the index changed since
    /// it was read (a write is pending, or the size is another), in which case it is closed;
    /// whether it is held. A full table gives up its oldest file.
    private func hold(_ held: Held, as name: String) -> Bool {
        let (isHeld, replaced) = state.withLock { state -> (Bool, Held?) in
            guard state.pending[name] == nil, state.sizes[name] == held.file.identity.size, state.held[name] == nil else {
                return (false, nil)
            }
            var oldest: Held?
            if state.held.count >= openFileLimit, let victim = state.held.min(by: { $0.value.serial < $1.value.serial })?.key {
                oldest = state.held.removeValue(forKey: victim)
            }
            state.heldSerial += 1
            var held = held
            held.serial = state.heldSerial
            state.held[name] = held
            return (true, oldest)
        }
        _ = replaced  // closed here, outside the lock
        return isHeld
    }

    /// Removes the file of `key`, which did not decode as a record, counting it as corrupt —
    /// unless it no longer holds `data` (a newer write landed since the read).
    public func removeCorrupt(_ key: String, ifStill data: Data) async {
        discard(name(for: key), ifStill: data)
    }

    /// Removes the file `name` as corrupt, unless a newer write was queued meanwhile or (given
    /// `data`) the file no longer holds those bytes. Under the state lock, where writes rename
    /// their files into place, so the check and the removal are one step.
    private func discard(_ name: String, ifStill data: Data? = nil) {
        state.withLock { state in
            guard state.pending[name] == nil, let size = state.sizes[name] else { return }
            // (A file too large to read whole was written in pieces since: not the bytes that failed.)
            if data != nil, size > entryLimit { return }
            if let data, let (current, _) = try? Self.readFile(name, in: directoryDescriptor, limit: entryLimit), current != data {
                return
            }
            state.held[name] = nil
            guard let size = state.sizes.removeValue(forKey: name) else { return }
            state.policy.recordRemoval(name)
            state.statistics.count -= 1
            state.statistics.bytes -= size
            state.statistics.corruptRemoved += 1
            Self.removeFile(name, in: directoryDescriptor)
        }
    }

    /// Queues `data` to be written under `key`; reads see it at once. When more than
    /// ``pendingByteLimit`` bytes are queued, waits until the queue has caught up with it.
    /// `expires` is not used: the eviction policy decides what stays.
    public func write(_ data: Data, for key: String, expires: Date?) async {
        let name = name(for: key)
        let (generation, backlog) = state.withLock { state -> (UInt64, Int) in
            state.generation += 1
            state.pending[name] = .store(data, generation: state.generation)
            state.pendingBytes += data.count
            return (state.generation, state.pendingBytes)
        }
        queue.async { [self] in write(data, name: name, generation: generation) }
        if backlog > pendingByteLimit { await flush() }
    }

    /// Queues the removal of `key`; reads miss at once.
    public func remove(_ key: String) async {
        let name = name(for: key)
        let generation = state.withLock { state -> UInt64 in
            state.generation += 1
            state.pending[name] = .remove(generation: state.generation)
            for (write, under) in state.writesInPieces where under.name == name { state.writesInPieces[write]?.revoked = true }
            return state.generation
        }
        queue.async { [self] in
            state.withLock { state in
                deleteLocked(name, from: &state)
                finishLocked(name, generation: generation, in: &state)
            }
        }
    }

    /// Removes every record and file; a write in pieces under way will not land.
    public func removeAll() async {
        state.withLock { state in
            for write in state.writesInPieces.keys { state.writesInPieces[write]?.revoked = true }
        }
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

    /// Blocks the calling thread until every queued write has landed (for tests that remove the
    /// directory next: a write still queued would put a file back into it).
    func flushBlocking() {
        queue.sync {}
    }

    /// How many files are held open now (for tests).
    var heldFileCount: Int { state.withLock { $0.held.count } }

    /// Counters and sizes.
    public var statistics: StorageStatistics {
        state.withLock { state in
            var statistics = state.statistics
            statistics.pendingBytes = state.pendingBytes
            return statistics
        }
    }

    /// The file of `key`, held open to be read in pieces (``ByteReading``); `nil` when there is
    /// none, or a write of it is queued (read it whole then, with ``bytes(for:)``).
    public func reading(_ key: String) async -> (any ByteReading)? {
        let name = name(for: key)
        let known = state.withLock { state -> Bool in
            guard state.pending.isEmpty || state.pending[name] == nil, state.sizes[name] != nil else { return false }
            state.policy.recordAccess(name)
            return true
        }
        guard known else { return nil }
        return FileReading(name, in: directoryDescriptor, checked: checkedFiles)
    }

    func deleteLocked(_ name: String, from state: inout State) {
        unlinkat(directoryDescriptor, name, 0)
        state.held[name] = nil
        guard let size = state.sizes.removeValue(forKey: name) else { return }
        state.policy.recordRemoval(name)
        state.statistics.count -= 1
        state.statistics.bytes -= size
    }

    func finishLocked(_ name: String, generation: UInt64, in state: inout State) {
        if state.pending[name]?.generation == generation { state.pending[name] = nil }
    }
}

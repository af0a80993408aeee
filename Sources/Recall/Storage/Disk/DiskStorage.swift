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

    private enum Pending {
        case store(Data, generation: UInt64)
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
    private struct OpenFailure: Error {}

    /// A file held open, with the memo handed out with its bytes: while the file is unchanged,
    /// reading it again gives the same bytes, so what they decoded to is not decoded again.
    private struct Held {
        var file: HeldFile
        /// An order for replacing the oldest when the table is full.
        var serial: UInt64
        var memo: DecodingMemo
    }

    static let suffix = ".rce"
    static let markerName = ".recall-cache"
    static let lockName = ".lock"
    private static let markerHeader = "recall-cache 1\n"
    private let state: Locked<State>
    /// File names of recently used keys: a hit computes no SHA-256 for a key it has seen.
    private let names = Locked<[String: String]>([:])
    /// Large files known whole: their bodies are served without a checksum pass.
    private let checkedFiles: CheckedFiles
    private static let namesRemembered = 4096
    private let queue = DispatchQueue(label: "Recall.DiskStorage.writes")
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

    /// Whether the file `name`, of `size` bytes — more than a whole read takes — has the header and
    /// trailer of a record written in pieces whose lengths add up to its size (anything else that
    /// large is not a record of this cache).
    private static func isRecordInPieces(_ name: String, size: Int, in directory: Int32) -> Bool {
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
    private static func openDirectory(_ path: String) throws -> Int32 {
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
    private static func check(_ descriptor: Int32, path: String) throws {
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

    private static func isLowerHex(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66)
    }

    /// The names in the open directory `descriptor` (at `path`), without `.` and `..`.
    private static func names(in descriptor: Int32, path: String) throws -> [String] {
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
    private static func removeFile(_ name: String, in descriptor: Int32) {
        if unlinkat(descriptor, name, 0) != 0, errno == EISDIR || errno == EPERM { unlinkat(descriptor, name, AT_REMOVEDIR) }
    }

    /// Reads the secret from the `.recall-cache` file, or writes a new one (a new cache, or a
    /// first-edition cache without one, or a damaged file).
    private static func loadOrCreateSecret(in directory: Int32, path: String) throws -> [UInt8] {
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

    deinit {
        // Queued writes hold a strong reference, so by now every write has landed.
        flock(lockDescriptor, LOCK_UN)
        close(lockDescriptor)
        close(directoryDescriptor)
    }

    /// The file name for `key`: its SHA-256 in hex.
    static func fileName(for key: String) -> String { SHA256.hex(key) + suffix }

    /// ``fileName(for:)``, remembered for the last few thousand keys.
    private func name(for key: String) -> String {
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

    private func write(_ data: Data, name: String, generation: UInt64) {
        defer { state.withLock { $0.pendingBytes -= data.count } }
        guard data.count <= entryLimit, data.count <= byteLimit else {
            state.withLock { state in
                state.statistics.rejected += 1
                deleteLocked(name, from: &state)  // never keep an older copy of a refused record
                finishLocked(name, generation: generation, in: &state)
            }
            return
        }
        let temporary = Self.temporaryName(name, generation: generation)
        let failure = Self.writeFile(data, to: temporary, in: directoryDescriptor)
        state.withLock { state in
            defer { finishLocked(name, generation: generation, in: &state) }
            _ = landLocked(temporary, written: failure == nil, as: name, size: data.count, in: &state)
        }
    }

    /// The name a write of `name` is made under until it is renamed into place (removed at open
    /// if a crash left it).
    static func temporaryName(_ name: String, generation: UInt64) -> String {
        name + ".tmp-\(generation)-\(getpid())"
    }

    /// Renames the file `temporary`, `written` whole, to `name`, of `size` bytes, and keeps the
    /// books: the index, the statistics, the eviction policy, evictions to stay within
    /// ``byteLimit``. A failure (of the write, or of the rename) is counted and leaves neither
    /// `temporary` nor a file under `name` (never an older copy). Whether it landed.
    private func landLocked(_ temporary: String, written: Bool, as name: String, size: Int, in state: inout State) -> Bool {
        guard written, renameat(directoryDescriptor, temporary, directoryDescriptor, name) == 0 else {
            unlinkat(directoryDescriptor, temporary, 0)
            state.statistics.writeFailures += 1
            deleteLocked(name, from: &state)
            return false
        }
        state.held[name] = nil  // the file held open, if any, is the one just replaced
        // Room first, then the record: it is never the victim of its own landing (S3-FIFO's small
        // queue may hold nothing else — a large body fills it alone). A record is at most
        // ``byteLimit``, so it fits once the others made room.
        while state.statistics.bytes - (state.sizes[name] ?? 0) + size > byteLimit, let victim = state.policy.victim() {
            if victim == name, let replaced = state.sizes.removeValue(forKey: name) {
                // (The version being replaced, chosen: its file is gone already, its books go.)
                state.statistics.bytes -= replaced
                state.statistics.count -= 1
                state.policy.recordRemoval(name)
                continue
            }
            if state.sizes[victim] == nil { state.policy.recordRemoval(victim); continue }
            deleteLocked(victim, from: &state)
            state.statistics.evictions += 1
        }
        if let old = state.sizes[name] {
            state.statistics.bytes -= old
        } else {
            state.statistics.count += 1
        }
        state.sizes[name] = size
        state.statistics.bytes += size
        state.policy.recordInsert(name, size: size)
        return true
    }

    /// Lands the write in pieces `generation` (``DiskWrite``): its file `temporary`, of `size`
    /// bytes, open as `descriptor`, becomes the file of `key` after every write queued before it
    /// has landed — unless a removal of the key, or of all, came since the write began (then the
    /// file is removed). Whether it landed. A file larger than ``entryLimit`` (served in pieces)
    /// is noted as known whole (``CheckedFiles``): its bytes are the ones its checksum was made of.
    func land(_ temporary: String, for key: String, size: Int, descriptor: Int32, generation: UInt64) async -> Bool {
        await flush()
        let name = name(for: key)
        // (A write or removal queued since the flush stays pending: reads see it, and it lands after this one.)
        let landed = state.withLock { state -> Bool in
            guard state.writesInPieces.removeValue(forKey: generation)?.revoked == false else {
                unlinkat(directoryDescriptor, temporary, 0)  // (removed since it began: what is there now stays)
                return false
            }
            return landLocked(temporary, written: true, as: name, size: size, in: &state)
        }
        // (The identity after the rename, which sets the change time.)
        if landed, size > entryLimit, let identity = HeldFile.Identity(of: descriptor) {
            checkedFiles.note(name, identity)
        }
        return landed
    }

    /// Counts a write refused (over a limit) or failed (the disk).
    func countFailedWrite(refused: Bool) {
        state.withLock { state in
            if refused { state.statistics.rejected += 1 } else { state.statistics.writeFailures += 1 }
        }
    }

    /// Begins writing `key` in pieces, to a file of its own renamed into place when committed
    /// (``ByteWriting``). Such a record may be as large as ``byteLimit`` (it is read in pieces,
    /// never whole, when larger than ``entryLimit``).
    public func beginWriting(for key: String, size: Int?, expires: Date?) async -> (any ByteWriting)? {
        if let size, size > byteLimit {
            countFailedWrite(refused: true)
            return nil
        }
        let name = name(for: key)
        let generation = state.withLock { state -> UInt64 in
            state.generation += 1
            state.writesInPieces[state.generation] = (name, false)
            return state.generation
        }
        guard
            let write = DiskWrite(
                storage: self, key: key, generation: generation,
                temporary: Self.temporaryName(name, generation: generation), limit: byteLimit)
        else {
            endWrite(generation)
            return nil
        }
        return write
    }

    /// Whether a removal of its file (or of all) came since the write in pieces `generation` began:
    /// it will not land, so it may stop at once.
    func isRevoked(_ generation: UInt64) -> Bool {
        state.withLock { $0.writesInPieces[generation]?.revoked ?? true }
    }

    /// Forgets the write in pieces `generation`, ended without landing.
    func endWrite(_ generation: UInt64) {
        state.withLock { state in _ = state.writesInPieces.removeValue(forKey: generation) }
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
    private static func readFile(
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
    private static func readFully(_ descriptor: Int32, into buffer: UnsafeMutableRawPointer, count: Int) -> Int {
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
    private static func writeFile(_ data: Data, to name: String, in directory: Int32) -> String? {
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

    private func deleteLocked(_ name: String, from state: inout State) {
        unlinkat(directoryDescriptor, name, 0)
        state.held[name] = nil
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

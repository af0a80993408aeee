import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A regular file held open to be read in pieces (``ByteReading``), by `pread`: what a later
/// write renames over it or a removal unlinks does not change what it reads. Closed when the
/// last reference goes. With the storage's ``CheckedFiles``, it knows whether the file it opened
/// is one already known whole (``knownWhole``).
final class FileReading: ByteReading {
    private let descriptor: Int32
    private let name: String
    /// The file's identity when it was opened.
    private let identity: HeldFile.Identity
    private let checked: CheckedFiles?
    /// Whether the storage knew the file whole, with this identity, when it was opened.
    private let knownWhenOpened: Bool
    let count: Int

    /// Opens `name` in the directory `directory`; `nil` when it is not a regular file or cannot be opened.
    init?(_ name: String, in directory: Int32, checked: CheckedFiles? = nil) {
        let descriptor = openat(directory, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else { return nil }
        guard let identity = HeldFile.Identity(of: descriptor) else {
            close(descriptor)
            return nil
        }
        self.descriptor = descriptor
        self.name = name
        self.identity = identity
        self.checked = checked
        self.knownWhenOpened = checked?.contains(name, identity) ?? false
        self.count = identity.size
    }

    /// Known whole by the storage when opened, its contents unchanged since.
    var knownWhole: Bool { knownWhenOpened && contentsUnchanged }

    /// Whether the open file still has the size and modification time it had when opened (a
    /// rename over it, or an unlink, changes its links and change time, not its bytes).
    private var contentsUnchanged: Bool {
        guard let now = HeldFile.Identity(of: descriptor, evenUnlinked: true) else { return false }
        return now.size == identity.size && now.modified.tv_sec == identity.modified.tv_sec
            && now.modified.tv_nsec == identity.modified.tv_nsec
    }

    /// Notes the file known whole — if it is still the file opened, under its name (not written
    /// into, renamed over or unlinked since).
    func noteWhole() {
        guard let checked, HeldFile.Identity(of: descriptor) == identity else { return }
        checked.noteRead(name, identity)
    }

    deinit {
        close(descriptor)
    }

    func read(at offset: Int, count wanted: Int) throws -> Data {
        let count = max(0, min(wanted, self.count - offset))
        var done = 0
        guard let bytes = PositionalRead.bytes(count, of: descriptor, at: offset, done: &done) else {
            throw CacheStorageError.corrupt("short read: \(done) of \(count) bytes at \(offset)")
        }
        return bytes
    }
}

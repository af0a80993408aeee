import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file of a ``DiskStorage`` held open after it was read, so that reading the same record
/// again is one `pread` and one `fstat`: no path lookup, no `open` or `close`, and — once its
/// bytes passed every check (the ``DecodingMemo`` handed out with them keeps what they decoded
/// to) — no checksum over bytes that were already checked.
///
/// What makes skipping the checksum safe is the file's identity, taken with `fstat` on the
/// open descriptor **before** the checked bytes were read: device, inode, link count, size,
/// and the times of the last change to its contents (`mtime`) and to the inode (`ctime`).
/// Every read through a held file reads the bytes first and takes the identity again after:
/// a write into the file (by any process) sets its change time before the bytes it writes
/// become visible, so bytes read that differ from the checked ones always come with another
/// identity, and the read is refused. A file unlinked or renamed over (by the storage or
/// anyone) has no links left, which refuses it too. Refused, the storage reads the file by its
/// name again, with every check.
///
/// File systems keep times at a clock tick's granularity (a few milliseconds on some), so two
/// writes within one tick can leave the same `ctime`. A file is therefore only held when its
/// last change is older than ``settledAge`` when its identity is taken: any later write gets
/// a later time.
final class HeldFile: Sendable {
    /// What `fstat` says of a file: the parts that change when its contents or links do.
    struct Identity: Equatable, Sendable {
        var device: UInt64
        var inode: UInt64
        var links: UInt64
        var size: Int
        var modified: timespec
        var changed: timespec

        /// The identity of the open `descriptor`, or `nil` when it cannot be taken or is not a
        /// regular file with at least one link (`evenUnlinked`: or with none left).
        init?(of descriptor: Int32, evenUnlinked: Bool = false) {
            var info = stat()
            guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, evenUnlinked || info.st_nlink >= 1 else { return nil }
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            links = UInt64(info.st_nlink)
            size = Int(info.st_size)
            #if canImport(Darwin)
                modified = info.st_mtimespec
                changed = info.st_ctimespec
            #else
                modified = info.st_mtim
                changed = info.st_ctim
            #endif
        }

        static func == (lhs: Identity, rhs: Identity) -> Bool {
            lhs.device == rhs.device && lhs.inode == rhs.inode && lhs.links == rhs.links && lhs.size == rhs.size
                && lhs.modified.tv_sec == rhs.modified.tv_sec && lhs.modified.tv_nsec == rhs.modified.tv_nsec
                && lhs.changed.tv_sec == rhs.changed.tv_sec && lhs.changed.tv_nsec == rhs.changed.tv_nsec
        }
    }

    /// How long (seconds) a file must have been unchanged before it is held.
    static let settledAge: Int = 2

    /// The open descriptor; closed when the last reference goes, so a read in progress never
    /// reads a descriptor number reused by another file.
    let descriptor: Int32
    /// The identity taken before the checked bytes were read.
    let identity: Identity

    /// Takes the identity of the just-opened `descriptor`, before anything is read from it.
    /// Returns `nil` when the file may not be held (not a regular file, or changed less than
    /// `settledAge` seconds ago); the caller then still owns the descriptor. Otherwise the new
    /// object owns it and closes it when it goes.
    init?(descriptor: Int32, settledAge: Int = HeldFile.settledAge) {
        guard let identity = Identity(of: descriptor), Self.isSettled(identity, age: settledAge) else { return nil }
        self.descriptor = descriptor
        self.identity = identity
    }

    deinit { close(descriptor) }

    /// Whether the file's last change is at least `age` seconds in the past (a change time in
    /// the future, after the clock was set back, is not).
    static func isSettled(_ identity: Identity, age: Int) -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let changed = identity.changed
        return Int(changed.tv_sec) + age < Int(now.tv_sec)
            || (Int(changed.tv_sec) + age == Int(now.tv_sec) && Int(changed.tv_nsec) < Int(now.tv_nsec))
    }

    /// The whole file, read again, when it is still exactly the file first read: `nil`
    /// when its size, times or links changed since (then it must be read by name, with every
    /// check) or the read fails.
    func reread() -> Data? {
        let size = identity.size
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size + 1, alignment: 16)
        var count = pread(descriptor, buffer, size + 1, 0)
        while count < 0, errno == EINTR { count = pread(descriptor, buffer, size + 1, 0) }
        // The identity is taken after the bytes: a write that changed them changed it first.
        guard count == size, Identity(of: descriptor) == identity else {
            buffer.deallocate()
            return nil
        }
        return Data(bytesNoCopy: buffer, count: size, deallocator: .custom { pointer, _ in pointer.deallocate() })
    }
}

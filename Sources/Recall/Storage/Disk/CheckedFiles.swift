import Foundation

/// The large files of a ``DiskStorage`` whose record is known whole: written by the storage
/// (the body's checksum was made from the very bytes written) or read whole and found matching
/// their checksum, each by its name and the identity (`HeldFile.Identity`: device, inode, links,
/// size, change times) it had then. A body read in pieces from a file whose identity is still
/// the one noted skips its checksum, so serving it is a `pread` per piece and no pass over the
/// bytes; a file replaced, written into or renamed since has another identity and is checked
/// again. The list lives as long as the storage (a storage opened anew — after a crash, say —
/// checks each file once) and holds at most ``limit`` files (past it, one noted earlier is
/// forgotten for each new one: it will be checked again).
///
/// File systems keep times at a clock tick's granularity, so a file read whole is noted only
/// when its last change is older than the storage's settled age (as for `HeldFile`): a later
/// write gets a later time. A file the storage itself just wrote is noted at once — what it
/// wrote is what it checksummed; only another program writing into the cache's files within
/// the same tick would go unseen, as would a change made while a body is being served (the read
/// goes by the identity the file had when it was opened). What no identity shows — a disk that changes bytes below the
/// file system — is caught on the first read by each storage opened, not on every read.
final class CheckedFiles: Sendable {
    /// The most files noted.
    static let limit = 1024

    private let files = Locked<[String: HeldFile.Identity]>([:])
    /// How long (seconds) a file must have been unchanged to be noted after a read.
    private let settledAge: Int

    init(settledAge: Int) {
        self.settledAge = settledAge
    }

    /// Whether the file `name` is known whole with the identity `identity`.
    func contains(_ name: String, _ identity: HeldFile.Identity) -> Bool {
        files.withLock { $0[name] == identity }
    }

    /// Notes the file `name`, found whole with the identity `identity` by a reader, as known whole
    /// — if it has been unchanged for the settled age (else the next read checks it again).
    func noteRead(_ name: String, _ identity: HeldFile.Identity) {
        guard HeldFile.isSettled(identity, age: settledAge) else { return }
        note(name, identity)
    }

    /// Notes the file `name`, which the storage wrote and now has the identity `identity`, as
    /// known whole.
    func note(_ name: String, _ identity: HeldFile.Identity) {
        files.withLock { files in
            if files.count >= Self.limit, files[name] == nil { files.remove(at: files.startIndex) }
            files[name] = identity
        }
    }
}

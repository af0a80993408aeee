import Dispatch
import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// How a ``DiskStorage`` writes: into a temporary file on its queue, renamed over the record's
/// file when it lands (unless a later write or a removal of the key revoked it), whole or in
/// pieces (``ByteWriting``), within the bytes it may have pending.
extension DiskStorage {
    func write(_ data: Data, name: String, generation: UInt64) {
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
    func landLocked(_ temporary: String, written: Bool, as name: String, size: Int, in state: inout State) -> Bool {
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
}

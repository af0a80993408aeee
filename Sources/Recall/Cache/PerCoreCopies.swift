#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Copies of the records a cache serves most, one small table per processor core, so that cores
/// serving the same response do not take turns for it.
///
/// Why: Swift counts references with atomic writes to the object itself, and a hit hands out the
/// stored response's parts (its body, its fields, the key), so every core serving one response
/// writes the same cache lines, and so do the read locks of the shared tables. On two cores that
/// cost a third of the throughput of eight tasks of hits (docs/benchmarks.md, target 1). A core's
/// table holds *deep* copies (no heap object shared with another core) behind a lock of its own,
/// so a hit served from it writes only to memory of its own core.
///
/// What keeps a copy right: each copy carries the count of its key's stripe in the storage's
/// ``RecordGenerations`` when it was made (loaded before the record was read), and the storage
/// bumps that count after every change to a record of the stripe (a store, a removal,
/// `removeAll()`, an eviction, made by any cache or around them). A copy is served only while
/// the count is unchanged; one found out of date is dropped.
///
/// What bounds it: at most ``bytesPerCore`` bytes (by ``CacheRecord/byteCount``) and
/// ``maximumCopies`` copies per table, a table per core, and only records up to
/// ``largestRecord`` bytes. A record is copied on its second hit seen by a core (its first only
/// notes a hash of its URL), so one-off hits copy nothing. A full table admits a new copy only
/// after a sweep has dropped the copies out of date or not hit since the sweep before (one
/// sweep per ``sweepInterval`` refused copies): the copies of a working set too large for the
/// table are not made and dropped in turn.
///
/// Every lock is taken with `trylock`: a task that finds its core's table busy (the thread
/// holding it was preempted) reads the shared storage instead of waiting.
///
/// Where the platform cannot tell the current core (`sched_getcpu` is looked up at run time:
/// glibc and musl have it), there are no tables.
final class PerCoreCopies<Location: Sendable>: @unchecked Sendable {
    /// What a lookup found: the copies to serve, and whether to report this read to the eviction
    /// policy (one hit in ``readReportInterval`` is reported, so a hot key stays hot there
    /// without a shared write per hit).
    struct Hit {
        let location: Location
        let record: CacheRecord
        let reportsRead: Bool
    }

    /// The most bytes of copies per core.
    let bytesPerCore: Int
    /// The largest record copied, in bytes.
    let largestRecord: Int
    /// The most copies per core.
    let maximumCopies = 64
    /// One hit of a copy in this many is reported to the eviction policy (the first included).
    static var readReportInterval: Int { 16 }
    /// A full table sweeps once per this many copies it refused.
    static var sweepInterval: Int { 16 }

    private struct Copy {
        let location: Location
        let record: CacheRecord
        let bytes: Int
        /// Where the record's key counts its changes, and the count the copy was made at.
        let stripe: Int
        let generation: UInt64
        var hits = 0
        /// Whether it was hit since the last sweep.
        var recentlyHit = false

        /// Counts a hit and returns it, if the storage has not changed the record since the copy.
        mutating func hit(current generations: RecordGenerations) -> Hit? {
            guard generations.current(stripe) == generation else { return nil }
            hits += 1
            recentlyHit = true
            return Hit(location: location, record: record, reportsRead: hits % PerCoreCopies.readReportInterval == 1)
        }
    }

    /// One core's copies.
    private struct Table {
        var copies: [String: Copy] = [:]
        var bytes = 0
        /// Hashes of URLs hit once (direct-mapped by the hash): a second hit copies.
        var seen = [Int](repeating: 0, count: 256)
        var refusedSinceSweep = 0

        mutating func remove(_ text: String) {
            if let copy = copies.removeValue(forKey: text) { bytes -= copy.bytes }
        }
    }

    /// A table and its lock, alone on their cache lines.
    private struct Slot {
        var mutex = pthread_mutex_t()
        var table = Table()
    }

    /// The number of the core the calling thread runs on.
    private typealias CurrentCore = @convention(c) () -> Int32

    private let generations: RecordGenerations
    private let currentCore: CurrentCore
    private let slots: UnsafeMutableRawPointer
    /// How many tables there are (one per configured core, at most 1,024).
    let slotCount: Int
    private let slotStride: Int

    /// Creates the tables for copies of records whose changes `generations` counts, or nil when
    /// the platform cannot tell the current core or the budget holds nothing.
    init?(bytesPerCore: Int, generations: RecordGenerations) {
        guard bytesPerCore > 0, let currentCore = Self.lookUpCurrentCore() else { return nil }
        self.bytesPerCore = bytesPerCore
        self.largestRecord = bytesPerCore / 16
        self.generations = generations
        self.currentCore = currentCore
        slotCount = max(1, min(Int(sysconf(Int32(_SC_NPROCESSORS_CONF))), 1024))
        // Round each slot up to whole pairs of 64-byte lines (adjacent-line prefetch pairs them).
        slotStride = (MemoryLayout<Slot>.stride + 127) & ~127
        slots = UnsafeMutableRawPointer.allocate(byteCount: slotStride * slotCount, alignment: 128)
        for index in 0..<slotCount {
            let slot = (slots + index * slotStride).bindMemory(to: Slot.self, capacity: 1)
            slot.initialize(to: Slot())
            pthread_mutex_init(Self.mutex(of: slot), nil)
        }
    }

    deinit {
        for index in 0..<slotCount {
            let slot = slot(index)
            pthread_mutex_destroy(Self.mutex(of: slot))
            slot.deinitialize(count: 1)
        }
        slots.deallocate()
    }

    /// `sched_getcpu`, where the C library has it.
    private static func lookUpCurrentCore() -> CurrentCore? {
        #if canImport(Glibc) || canImport(Musl)
        // Not in the Glibc module's headers (it needs _GNU_SOURCE); nil is RTLD_DEFAULT.
        guard let symbol = dlsym(nil, "sched_getcpu") else { return nil }
        return unsafeBitCast(symbol, to: CurrentCore.self)
        #else
        return nil
        #endif
    }

    private func slot(_ index: Int) -> UnsafeMutablePointer<Slot> {
        (slots + index * slotStride).assumingMemoryBound(to: Slot.self)
    }

    private static func mutex(of slot: UnsafeMutablePointer<Slot>) -> UnsafeMutablePointer<pthread_mutex_t> {
        slot.pointer(to: \.mutex)!
    }

    /// Runs `body` on the calling core's table if its lock is free; nil otherwise.
    private func withCurrentTable<Result>(_ body: (inout Table) -> Result?) -> Result? {
        let core = Int(currentCore())
        let slot = slot(core >= 0 ? core % slotCount : 0)
        let mutex = Self.mutex(of: slot)
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return body(&slot.pointee.table)
    }

    /// The calling core's copy for the URL `text`, if it is still the storage's record.
    func copy(for text: String) -> Hit? {
        withCurrentTable { table in
            guard let index = table.copies.index(forKey: text) else { return nil }
            let hit = table.copies.values[index].hit(current: generations)
            if hit == nil { table.remove(text) } // the storage changed the record since: the copy is done
            return hit
        }
    }

    /// Offers `record`, just read from the storage for the URL `text` with its key's `stripe`
    /// counting `generation` (loaded before the record was read), for copying in the calling
    /// core's table. `copy` makes the copies (nil: the record cannot be copied exactly).
    func offer(_ record: CacheRecord, for text: String, stripe: Int, generation: UInt64,
               copy: () -> (location: Location, record: CacheRecord, text: String)?) {
        let hash = text.hashValue | 1 // never 0, the empty slot
        _ = withCurrentTable { (table: inout Table) -> Void? in
            if let held = table.copies[text] {
                guard generations.current(held.stripe) != held.generation else { return nil }
                table.remove(text)
            }
            let seen = hash & (table.seen.count - 1)
            guard table.seen[seen] == hash else {
                table.seen[seen] = hash
                return nil
            }
            table.seen[seen] = 0
            let bytes = record.byteCount + text.utf8.count
            guard bytes <= largestRecord else { return nil }
            func full() -> Bool { table.bytes + bytes > bytesPerCore || table.copies.count >= maximumCopies }
            if full() {
                guard sweep(&table), !full() else { return nil }
            }
            guard let made = copy() else { return nil }
            table.copies[made.text] = Copy(location: made.location, record: made.record, bytes: bytes,
                                           stripe: stripe, generation: generation)
            table.bytes += bytes
            return nil
        }
    }

    /// Drops, if this full table refused enough copies since the last sweep, the copies out of
    /// date and those not hit since the last sweep; whether it swept.
    private func sweep(_ table: inout Table) -> Bool {
        table.refusedSinceSweep += 1
        guard table.refusedSinceSweep >= Self.sweepInterval else { return false }
        table.refusedSinceSweep = 0
        var kept: [String: Copy] = [:]
        kept.reserveCapacity(maximumCopies)
        var bytes = 0
        for (text, var copy) in table.copies where copy.recentlyHit && generations.current(copy.stripe) == copy.generation {
            copy.recentlyHit = false
            kept[text] = copy
            bytes += copy.bytes
        }
        table.copies = kept
        table.bytes = bytes
        return true
    }

    /// How many copies and bytes every table holds together (for tests).
    var usage: (copies: Int, bytes: Int) {
        var total = (copies: 0, bytes: 0)
        for index in 0..<slotCount {
            let slot = slot(index)
            pthread_mutex_lock(Self.mutex(of: slot))
            total.copies += slot.pointee.table.copies.count
            total.bytes += slot.pointee.table.bytes
            pthread_mutex_unlock(Self.mutex(of: slot))
        }
        return total
    }
}

extension String {
    /// A copy in storage of its own: nothing shared with `self` (a plain copy of a `String`
    /// shares its buffer, and with it the buffer's reference count). Up to 15 bytes, as any
    /// string that short, it is stored inline.
    var unsharedCopy: String {
        let count = utf8.count
        return String(unsafeUninitializedCapacity: count) { buffer in
            _ = buffer.initialize(fromContentsOf: utf8)
            return count
        }
    }
}

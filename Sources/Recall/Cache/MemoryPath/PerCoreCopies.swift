import Synchronization
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
/// cost a third of the throughput of eight tasks of hits (docs/benchmarks.md, "Hits over cores"). A core's
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
/// ``maximumCopies`` copies per table (one per 4 KiB of the budget, 64 to 16,384), a table per
/// core, and only records up to ``largestRecord`` bytes. A record is copied when a core sees its
/// URL for the third time (a direct-mapped table of URL hashes per core, four slots per copy,
/// remembers the first two sights), so URLs asked for once or twice copy nothing. A full table
/// admits a new copy only after a sweep has dropped the copies out of date or not hit since the
/// sweep before, and sweeps once per ``sweepInterval`` refused copies: a working set too large
/// for the table settles in it instead of being copied in and dropped in turn.
///
/// Every lock is taken with `trylock`: a task that finds its core's table busy (the thread
/// holding it was preempted) reads the shared storage instead of waiting.
///
/// Where the platform cannot tell the current core (`sched_getcpu` is looked up at run time:
/// glibc and musl have it), there are no tables.
final class PerCoreCopies<Location: Sendable>: @unchecked Sendable {
    /// A copy's parts: what a hit hands out. One object, and the core's own: a hit retains
    /// just it (a struct of the parts would retain each of them, a write per part per hit).
    final class Held: Sendable {
        let location: Location
        let record: CacheRecord

        init(location: Location, record: CacheRecord) {
            self.location = location
            self.record = record
        }
    }

    /// The most bytes of copies per core.
    let bytesPerCore: Int
    /// The largest record copied, in bytes.
    let largestRecord: Int
    /// The most copies per core: one per 4 KiB of ``bytesPerCore``, 64 at least and 16,384 at
    /// most (so that a budget meant as "no limit" costs at most 512 KiB of doorkeeper per core).
    let maximumCopies: Int
    /// Slots of each table's doorkeeper: four per copy, rounded up to a power of two (so 256 at
    /// least), so that most URLs seen in turn keep their slot until their third sight (with as
    /// many URLs as copies, about one in five shares a slot).
    let doorkeeperSlots: Int
    /// One hit of a copy in this many is reported to the eviction policy (the first included).
    static var readReportInterval: Int { 16 }
    /// Looks per window: a table decides at the end of each whether its copies pay.
    static var windowLength: Int { 256 }
    /// A full table sweeps once per this many copies it refused: rarely, so that a working set
    /// larger than the table settles instead of being copied in and dropped in turn; and at
    /// least four refusals per copy held, so that a sweep (a pass over the copies) costs each
    /// refusal a quarter of a copy at most.
    let sweepInterval: Int
    /// The least ``sweepInterval``, that of a table of up to 64 copies.
    static var minimumSweepInterval: Int { 256 }
    /// A dormant table sweeps this many times more rarely still: its copies do not pay, so
    /// making new ones (a deep copy each) is mostly waste; it keeps a trickle, to wake by.
    static var dormantSweepFactor: Int { 16 }

    private struct Copy {
        let held: Held
        let bytes: Int
        /// Where the record's key counts its changes, and the count the copy was made at.
        let stripe: Int
        let generation: UInt64
        var hits = 0
        /// Whether it was hit since the last sweep.
        var recentlyHit = false

        /// Counts a hit and returns whether to report it to the eviction policy, if the storage
        /// has not changed the record since the copy (nil if it has).
        mutating func hit(current generations: RecordGenerations) -> Bool? {
            guard generations.current(stripe) == generation else { return nil }
            hits += 1
            recentlyHit = true
            return hits % PerCoreCopies.readReportInterval == 1
        }
    }

    /// One core's copies.
    private struct Table {
        var copies: [Key: Copy] = [:]
        var bytes = 0
        /// Hashes of URLs seen once or twice (direct-mapped by the hash): a third sight copies.
        var seen: [Int]
        var refusedSinceSweep = 0
        /// Looks and hits served in the current window of ``windowLength`` looks.
        var looks = 0
        var served = 0
        /// Whether the last window served too few hits to pay for its looks (see ``look(for:)``).
        var dormant = false

        /// A table whose doorkeeper has `seenSlots` slots (a power of two).
        init(seenSlots: Int) {
            seen = [Int](repeating: 0, count: seenSlots)
        }

        /// Counts a look that `served` a copy or not; at the end of a window, decides whether
        /// the next is dormant (and returns true).
        mutating func count(served hit: Bool) -> Bool {
            looks += 1
            if hit { served += 1 }
            guard looks == PerCoreCopies.windowLength else { return false }
            dormant = served * 8 < looks
            looks = 0
            served = 0
            return true
        }

        mutating func remove(_ key: Key) {
            if let copy = copies.removeValue(forKey: key) { bytes -= copy.bytes }
        }
    }

    /// A table, alone on its cache lines with its lock: each slot's memory holds the lock (a
    /// `pthread_mutex_t`) in its first 64 bytes, then the slot (see ``slot(_:)``, ``mutex(of:)``).
    private struct Slot: ~Copyable {
        var table: Table
        /// The table's ``Table/dormant``, readable without the lock, and the looks it skipped.
        let dormant = Atomic<Bool>(false)
        let skips = Atomic<UInt32>(0)
    }

    /// The number of the core the calling thread runs on.
    typealias CurrentCore = Recall.CurrentCore.Function

    private let generations: RecordGenerations
    private let currentCore: CurrentCore
    private let slots: UnsafeMutableRawPointer
    /// How many tables there are (one per configured core, at most 1,024).
    let slotCount: Int
    private let slotStride: Int

    /// Creates the tables for copies of records whose changes `generations` counts, or nil when
    /// the platform cannot tell the current core or the budget holds nothing.
    ///
    /// `currentCore` tells the calling thread's core (tests pin it); by default, `sched_getcpu`.
    init?(bytesPerCore: Int, generations: RecordGenerations, currentCore: CurrentCore? = nil) {
        guard bytesPerCore > 0, let currentCore = currentCore ?? Recall.CurrentCore.function else { return nil }
        self.bytesPerCore = bytesPerCore
        self.largestRecord = bytesPerCore / 16
        maximumCopies = min(max(64, bytesPerCore >> 12), 1 << 14)
        sweepInterval = max(Self.minimumSweepInterval, maximumCopies * 4)
        doorkeeperSlots = 1 << (Int.bitWidth - (maximumCopies * 4 - 1).leadingZeroBitCount)
        self.generations = generations
        self.currentCore = currentCore
        slotCount = min(Recall.CurrentCore.configured, 1024)
        // The lock's 64 bytes, then the slot, rounded up to whole pairs of 64-byte lines
        // (adjacent-line prefetch pairs them).
        slotStride = (Self.mutexBytes + MemoryLayout<Slot>.stride + 127) & ~127
        slots = UnsafeMutableRawPointer.allocate(byteCount: slotStride * slotCount, alignment: 128)
        for index in 0..<slotCount {
            let base = slots + index * slotStride
            let mutex = base.bindMemory(to: pthread_mutex_t.self, capacity: 1)
            mutex.initialize(to: pthread_mutex_t())
            pthread_mutex_init(mutex, nil)
            (base + Self.mutexBytes).bindMemory(to: Slot.self, capacity: 1).initialize(to: Slot(table: Table(seenSlots: doorkeeperSlots)))
        }
    }

    deinit {
        for index in 0..<slotCount {
            let slot = slot(index)
            pthread_mutex_destroy(Self.mutex(of: slot))
            Self.mutex(of: slot).deinitialize(count: 1)
            slot.deinitialize(count: 1)
        }
        slots.deallocate()
    }

    /// Bytes before each slot for its lock (a `pthread_mutex_t` is 40 on Linux x86-64 and arm64).
    private static var mutexBytes: Int { max(64, (MemoryLayout<pthread_mutex_t>.stride + 63) & ~63) }

    private func slot(_ index: Int) -> UnsafeMutablePointer<Slot> {
        (slots + index * slotStride + Self.mutexBytes).assumingMemoryBound(to: Slot.self)
    }

    /// The lock of `slot`, just before it.
    private static func mutex(of slot: UnsafeMutablePointer<Slot>) -> UnsafeMutablePointer<pthread_mutex_t> {
        (UnsafeMutableRawPointer(slot) - mutexBytes).assumingMemoryBound(to: pthread_mutex_t.self)
    }

    /// The calling core's slot.
    private func currentSlot() -> UnsafeMutablePointer<Slot> {
        let core = Int(currentCore())
        return slot(0 <= core && core < slotCount ? core : abs(core % slotCount))
    }

    /// Runs `body` on the calling core's table if its lock is free; nil otherwise.
    private func withCurrentTable<Result>(_ body: (inout Table) -> Result?) -> Result? {
        withTable(currentSlot(), body)
    }

    /// Runs `body` on the table of `slot` if its lock is free; nil otherwise.
    private func withTable<Result>(_ slot: UnsafeMutablePointer<Slot>, _ body: (inout Table) -> Result?) -> Result? {
        let mutex = Self.mutex(of: slot)
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return body(&slot.pointee.table)
    }

    /// A URL's text with its hash, worked out once per lookup: the table and the doorkeeper
    /// both use it, so a lookup hashes the text once.
    struct Key: Hashable {
        let text: String
        let hash: Int

        init(_ text: String) {
            self.text = text
            let odd = text.hashValue | 1
            hash = odd == 1 ? 3 : odd  // odd: never 0 (an empty slot), and not 1, whose second-sight mark would be 0
        }

        init(text: String, hash: Int) {
            self.text = text
            self.hash = hash
        }

        static func == (lhs: Key, rhs: Key) -> Bool { lhs.hash == rhs.hash && lhs.text == rhs.text }
        func hash(into hasher: inout Hasher) { hasher.combine(hash) }
    }

    /// What a look at the calling core's table found.
    struct Lookup {
        let key: Key
        /// The copy to serve, if any.
        let hit: Held?
        /// Whether to report this hit to the eviction policy (one hit of a copy in
        /// ``readReportInterval``, so a hot key stays hot there without a shared write per hit).
        let reportsRead: Bool
        /// No copy, but the core saw this URL twice before (or held a copy the storage has
        /// since changed): the record the storage gives is worth copying (``offer(_:for:stripe:generation:copy:)``).
        let admits: Bool
        /// The copy's stripe and the generation it was made at, for ``isCurrent(stripe:generation:)``.
        var copied: (stripe: Int, generation: UInt64)? = nil
    }

    /// Whether a look's copy (``Lookup/copied``) is still the storage's record. The caller asks
    /// again after making sure that no store of the key is pending: one that landed between the
    /// look and that check has retired the copy, and the caller must read what it stored instead.
    func isCurrent(stripe: Int, generation: UInt64) -> Bool {
        generations.current(stripe) == generation
    }

    /// Looks for the URL `text` in the calling core's table: its copy if it is still the
    /// storage's record; else whether to copy the record the storage gives (a third sight).
    /// Nil when the table is busy or dormant.
    ///
    /// A table whose last window of ``windowLength`` looks served fewer than one in 8 from its
    /// copies (a working set far larger than the table, or one that changes all the time) goes
    /// dormant: 7 looks in 8 return at once, without hashing the URL, and the rest look as
    /// usual (and keep admitting copies), so the table wakes when its copies serve again. What
    /// copies save is then not paid for by hits they cannot serve.
    func look(for text: String) -> Lookup? {
        let slot = currentSlot()
        // Dormant: skip without the lock. The count samples one look in 8: a plain load and
        // store (no read-modify-write), as a count that loses a step now and then samples as well.
        if slot.pointee.dormant.load(ordering: .relaxed) {
            let skips = slot.pointee.skips.load(ordering: .relaxed) &+ 1
            slot.pointee.skips.store(skips, ordering: .relaxed)
            if skips & 7 != 0 { return nil }
        }
        return withTable(slot) { table -> Lookup? in
            /// Counts the look; a window's end may change the table's dormancy.
            func count(served: Bool) {
                if table.count(served: served) { slot.pointee.dormant.store(table.dormant, ordering: .relaxed) }
            }
            let key = Key(text)
            if let index = table.copies.index(forKey: key) {
                if let reportsRead = table.copies.values[index].hit(current: generations) {
                    count(served: true)
                    let copy = table.copies.values[index]
                    return Lookup(
                        key: key, hit: copy.held, reportsRead: reportsRead, admits: false,
                        copied: (copy.stripe, copy.generation))
                }
                table.remove(key)  // the storage changed the record since: copy it again
                count(served: false)
                return Lookup(key: key, hit: nil, reportsRead: false, admits: true)
            }
            count(served: false)
            // The doorkeeper: a URL's slot holds its hash after a first sight, the hash with
            // its lowest bit cleared after a second; a third sight admits it.
            let slot = Self.doorkeeperSlot(of: key, slots: table.seen.count)
            let admits: Bool
            switch table.seen[slot] {
            case key.hash:
                table.seen[slot] = key.hash ^ 1
                admits = false
            case key.hash ^ 1:
                table.seen[slot] = 0
                admits = true
            default:
                table.seen[slot] = key.hash
                admits = false
            }
            return Lookup(key: key, hit: nil, reportsRead: false, admits: admits)
        }
    }

    /// The doorkeeper slot of `key` among `slots` (a power of two). Not the hash's lowest bits:
    /// its lowest bit is always set (``Key``), and would leave half the slots unused.
    static func doorkeeperSlot(of key: Key, slots: Int) -> Int {
        (key.hash >> 1) & (slots - 1)
    }

    /// Copies `record`, just read from the storage for `key` (a lookup that admits it) with
    /// its key's `stripe` counting `generation` (loaded before the record was read), into the
    /// calling core's table, if it is small enough and the table has room. `copy` makes the
    /// copies (nil: the record cannot be copied exactly).
    func offer(
        _ record: CacheRecord, for key: Key, stripe: Int, generation: UInt64,
        copy: () -> (location: Location, record: CacheRecord, text: String)?
    ) {
        let bytes = record.byteCount + key.text.utf8.count
        guard bytes <= largestRecord else { return }
        _ = withCurrentTable { (table: inout Table) -> Void? in
            guard table.copies[key] == nil else { return nil }  // (another task on this core was first)
            func full() -> Bool { table.bytes + bytes > bytesPerCore || table.copies.count >= maximumCopies }
            if full() {
                guard sweep(&table), !full() else { return nil }
            }
            guard let made = copy() else { return nil }
            table.copies[Key(text: made.text, hash: key.hash)] = Copy(
                held: Held(location: made.location, record: made.record),
                bytes: bytes, stripe: stripe, generation: generation)
            table.bytes += bytes
            return nil
        }
    }

    /// Drops, if this full table refused enough copies since the last sweep (``sweepInterval``,
    /// ``dormantSweepFactor`` times more when dormant), the copies out of date and those not
    /// hit since the last sweep; whether it swept.
    private func sweep(_ table: inout Table) -> Bool {
        table.refusedSinceSweep += 1
        guard table.refusedSinceSweep >= sweepInterval * (table.dormant ? Self.dormantSweepFactor : 1) else { return false }
        table.refusedSinceSweep = 0
        var kept: [Key: Copy] = [:]
        kept.reserveCapacity(table.copies.count)
        var bytes = 0
        for (key, var copy) in table.copies where copy.recentlyHit && generations.current(copy.stripe) == copy.generation {
            copy.recentlyHit = false
            kept[key] = copy
            bytes += copy.bytes
        }
        table.copies = kept
        table.bytes = bytes
        return true
    }

    /// How many copies and bytes every table holds together, and how many tables are dormant
    /// (for tests).
    var usage: (copies: Int, bytes: Int, dormant: Int) {
        var total = (copies: 0, bytes: 0, dormant: 0)
        for index in 0..<slotCount {
            let slot = slot(index)
            pthread_mutex_lock(Self.mutex(of: slot))
            total.copies += slot.pointee.table.copies.count
            total.bytes += slot.pointee.table.bytes
            if slot.pointee.table.dormant { total.dormant += 1 }
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

import Foundation
import Synchronization
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Writes an ``HTTPCache``'s records in order: one write of a key at a time (``KeyedLock``),
/// removals counted per stripe of keys (``InvalidationEpochs``) so that an answer to a request
/// older than its key's latest removal is never stored, and a count of completed writes that a
/// lookup compares to know whether anything can have been stored since it looked.
///
/// What to write is the record rules' (``CacheRecordRules``: the record a store composes, the
/// variants a discard keeps, a freshened response, the expiry hint); this type only reads the
/// record afresh under the key's lock and hands the result to the storage.
final class CacheWriter: Sendable {
    private let storage: any CacheStorage
    /// The storage, when it is a ``MemoryStorage``: it stores without suspending and tells
    /// exactly what each store evicted.
    private let memory: MemoryStorage?
    private let records: CacheRecordRules
    private let counts: CacheCounters
    /// The storage's order of writes (``CacheStorage/writeOrder``), shared with every cache over
    /// it: one write of a key at a time, removals per stripe of keys (an answer to a request that
    /// began before its key's latest removal, by any cache over the storage, is not stored, and
    /// does not lead later requests), and a count of completed stores and removals (a request that
    /// reads it before its lookup and leads a miss afterwards looks again only when it changed;
    /// one atomic load, so the hit path pays no lock for it).
    private let order: StorageWriteOrder
    var keys: KeyedLock { order.keys }
    var epochs: InvalidationEpochs { order.epochs }
    /// The stores this cache makes after their answers (write-behind over memory, a freshened
    /// body's rewrite): every lookup of their keys waits for them, and ``HTTPCache/flush()`` too.
    let pending = PendingWrites()
    /// The storage's eviction count when the writer last looked.
    private let evictionsSeen: Atomic<Int>
    /// Whether the storage counts removals itself, for processes that share it
    /// (``CacheStorage/countsRemovals``): a request that may store reads its mark first.
    let countsRemovals: Bool

    init(storage: any CacheStorage, memory: MemoryStorage?, records: CacheRecordRules, counts: CacheCounters) {
        self.storage = storage
        self.memory = memory
        self.records = records
        self.counts = counts
        self.evictionsSeen = Atomic(storage.statistics.evictions)
        order = storage.writeOrder ?? StorageWriteOrder()
        countsRemovals = storage.countsRemovals
    }

    /// `since` with the storage's removal mark for `key` read now, when the storage counts
    /// removals (else `since` as it is): a request reads it before it goes to the origin, so its
    /// answer is stored only if no process removed the key meanwhile.
    func marking(_ since: InvalidationEpochs.Snapshot, key: String) async -> InvalidationEpochs.Snapshot {
        guard countsRemovals else { return since }
        var marked = since
        marked.storage = await storage.removalMark(for: key)
        return marked
    }

    /// The removal counts of `location` as a request that begins now sees them (with the
    /// storage's mark, when it counts removals).
    func since(_ location: CacheLocator.Location) async -> InvalidationEpochs.Snapshot {
        await marking(epochs.snapshot(stripe: location.epochStripe), key: location.key)
    }

    /// The count of completed writes (see ``StorageWriteOrder``).
    var writes: UInt64 { order.writeCount.load(ordering: .acquiring) }

    /// The stored record of `key`, or `nil`, read as `lookup` says (after the fleet's
    /// coordination). Storages compare keys too; checking here keeps the guarantee for any
    /// storage a user plugs in.
    func lookup(_ key: String, _ lookup: RecordLookup = .usual) async -> CacheRecord? {
        let found = await storage.record(for: key, lookup: lookup)
        return found?.key == key ? found : nil
    }

    /// What the writer knows of a record before it stores into it.
    enum Prior: Sendable {
        /// Nothing: it reads the record afresh, under the key's lock.
        case unread
        /// The request's lookup found this (`nil`: nothing stored). When storing keeps none of
        /// it, the read is saved (a response stored meanwhile by a concurrent request may be
        /// replaced: a lost entry, never a wrong one).
        case found(CacheRecord?)
    }

    /// Stores `entry` in the record of `key`, keeping the other partitions' responses and this
    /// partition's other `Vary` variants, read afresh unless `prior` saves the read.
    /// Stores nothing when a removal of the key came after `since` (the removal counts when the
    /// request began; `nil` for the answer of the write that removed): that answer may predate
    /// the write; nor an entry whose body is not as long as its `Content-Length` says. Records
    /// ``CacheEvent/stored`` (and what the storage evicted meanwhile) in `context`.
    func store(
        _ entry: CacheEntry, at location: CacheLocator.Location, prior: Prior, since: InvalidationEpochs.Snapshot?,
        context: RecallContext?
    ) async {
        await keys.lock(location.hashedKey)
        defer { keys.unlock(location.hashedKey) }
        await storeLocked(entry, at: location, prior: prior, since: since, context: context, stillHolding: nil)
    }

    /// ``store(_:at:prior:since:context:)`` with the key's lock held; given `stillHolding`, only
    /// over that stored body (read afresh).
    private func storeLocked(
        _ entry: CacheEntry, at location: CacheLocator.Location, prior: Prior, since: InvalidationEpochs.Snapshot?,
        context: RecallContext?, stillHolding body: StoredBodyFile?
    ) async {
        // Never a record whose body is not what its head declares (a head stored without its body).
        guard entry.bodyMatchesDeclaredLength else { return }
        let key = location.key
        if let since, !epochs.isCurrent(since, stripe: location.epochStripe) { return }
        let expiring = memory == nil
        let write: CacheRecordRules.Write
        if body == nil, case .found(let found) = prior, let saved = records.write(storing: entry, key: key, found: found, expiring: expiring) {
            write = saved
        } else {
            let existing = await lookup(key)
            if let body, existing?.variants.contains(where: { $0.storedBody?.isSameBody(as: body) == true }) != true { return }
            write = records.write(storing: entry, key: key, over: existing, expiring: expiring)
        }
        await store(write, since: since, context: context)
    }

    /// Stores `write` (with the key's lock held): into the memory at once, else with its expiry
    /// hint — over a storage that counts removals, only if no process removed the key since
    /// `since` (a request that read no mark has nothing to check against, and stores nothing).
    /// Counts what reached the storage.
    private func store(_ write: CacheRecordRules.Write, since: InvalidationEpochs.Snapshot?, context: RecallContext?) async {
        if let memory {
            let released = memory.storeNow(write.record, watched: false)
            stored(context: context, evicted: released?.evictions ?? 0)
            withExtendedLifetime(released) {}  // (freed here, after the storage's locks)
        } else if countsRemovals {
            guard let mark = since?.storage, await storage.store(write.record, expires: write.expires, ifNotRemovedSince: mark) else { return }
            stored(context: context)
        } else {
            await storage.store(write.record, expires: write.expires)
            stored(context: context)
        }
    }

    /// Commits a record stored in pieces at `location` (``CacheStorage/beginStoring(_:expires:)``),
    /// in order with the key's other writes — unless a removal of the key came after `since`
    /// (then it is abandoned). Whether it was stored; records ``CacheEvent/stored`` in `context`.
    func commit(
        _ writing: any RecordWriting, at location: CacheLocator.Location, since: InvalidationEpochs.Snapshot?,
        context: RecallContext?
    ) async -> Bool {
        await keys.lock(location.hashedKey)
        defer { keys.unlock(location.hashedKey) }
        guard since.map({ epochs.isCurrent($0, stripe: location.epochStripe) }) ?? true else {
            await writing.abandon()
            return false
        }
        do {
            try await writing.commit()
        } catch {
            await writing.abandon()
            return false
        }
        stored(context: context)
        return true
    }

    /// Merges the 304 `response` into the stored response of `location` it freshens (for the
    /// request of `state`), if any.
    func freshen(
        _ location: CacheLocator.Location, partition: String, request: URLRequest, with response: RecallResponse,
        state: CacheRequestState, at date: Date, context: RecallContext?
    ) async {
        guard let record = await lookup(location.key),
            let merged = records.freshened(
                record, with: response, for: request, partition: partition, inScope: state.inScope,
                requestTime: state.requestTime, responseTime: date)
        else { return }
        // (A shared cache keeps nothing the 304's directives no longer let it keep.)
        guard records.rules.mayKeep(merged.cacheControl, for: request) else { return await discard(merged, key: location.key) }
        await store(merged, at: location, prior: .unread, since: state.since, context: context)
    }

    /// Begins storing `entry`, a freshened response whose body stays in the store, at `location`
    /// after the caller has its answer — rewriting the record copies the body, which the caller
    /// must not wait for — when the key's lock is free now: the lock is taken and the write counted
    /// pending at once (every later write and lookup of the key comes after it), and the record is
    /// stored, only over that same body, in a task of its own. `false` when the key is being
    /// written: store it the usual way.
    func storeAfterAnswering(
        _ entry: CacheEntry, at location: CacheLocator.Location, since: InvalidationEpochs.Snapshot, context: RecallContext?
    ) -> Bool {
        guard keys.tryLock(location.hashedKey) else { return false }
        let ticket = pending.begin(stripe: location.stripe)
        TaskCensus.task { [self] in
            await storeLocked(entry, at: location, prior: .unread, since: since, context: context, stillHolding: entry.storedBody)
            keys.unlock(location.hashedKey)
            pending.end(ticket, stripe: location.stripe)
        }
        return true
    }

    /// Counts a store that reached the storage, and records it in `context` with what it
    /// evicted: `evicted` when the storage told it of this store (``MemoryStorage`` does, exact
    /// also when stores land out of order); else what the storage's eviction count says it
    /// evicted since the last store the writer saw.
    func stored(context: RecallContext?, evicted: Int? = nil) {
        order.writeCount.add(1, ordering: .releasing)
        counts.stored()
        guard let context else { return }
        context.record(.cache(.stored))
        let count: Int
        if let evicted {
            count = evicted
        } else {
            let evictions = storage.statistics.evictions
            count = evictions - evictionsSeen.exchange(evictions, ordering: .relaxed)
        }
        if count > 0 { context.record(.cache(.evicted(count: count))) }
    }

    /// Removes every stored response of `key`, in every partition; `counting`: counts an
    /// invalidation when something was stored (read under the key's lock, so a store pending
    /// before it is seen).
    func remove(_ key: String, counting: Bool = false) async {
        await keys.lock(key)
        epochs.advance(stripe: Self.epochStripe(of: key))
        if counting, await storage.record(for: key) != nil { counts.count { $0.invalidations += 1 } }
        await storage.remove(key)
        order.writeCount.add(1, ordering: .releasing)
        keys.unlock(key)
    }

    /// Removes the stored response `outdated` stands for (same partition, status class and
    /// `Vary` values) from the record of `key`, keeping the others.
    func discard(_ outdated: CacheEntry, key: String) async {
        await keys.lock(key)
        epochs.advance(stripe: Self.epochStripe(of: key))
        // Over a storage processes share, the variants kept go back only if no process removed the
        // key after they were read.
        let mark = countsRemovals ? await storage.removalMark(for: key) : nil
        if let record = await lookup(key) {
            let kept = records.variants(of: record, without: outdated)
            if kept.isEmpty {
                await storage.remove(key)
            } else if kept.count < record.variants.count {
                let write = records.write(CacheRecord(key: key, variants: kept), expiring: true)
                if let mark {
                    _ = await storage.store(write.record, expires: write.expires, ifNotRemovedSince: mark)
                } else {
                    await storage.store(write.record, expires: write.expires)
                }
            }
            order.writeCount.add(1, ordering: .releasing)
        }
        keys.unlock(key)
    }

    /// The stripe of `key` in ``epochs`` (its ``CacheLocator/Location/epochStripe``, for a key at hand).
    static func epochStripe(of key: String) -> Int {
        InvalidationEpochs.stripe(ofHash: key.hashValue)
    }
}

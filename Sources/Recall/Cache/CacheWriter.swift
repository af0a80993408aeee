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
/// What to write is the strategy's (``CacheStrategy``: the record a store composes, the
/// variants a discard keeps, a freshened response, the expiry hint); this type only reads the
/// record afresh under the key's lock and hands the result to the storage.
final class CacheWriter: Sendable {
    private let storage: any CacheStorage
    /// The storage, when it is a ``MemoryStorage``: it stores without suspending and tells
    /// exactly what each store evicted.
    private let memory: MemoryStorage?
    private let strategy: CacheStrategy
    private let counts: CacheCounters
    /// One write of a key at a time — the storage's (``CacheStorage/writeOrder``): shared with
    /// every cache over it.
    let keys: KeyedLock
    /// Removals per stripe of keys: an answer to a request that began before its key's latest
    /// removal (by any cache over the storage) is not stored, and does not lead later requests.
    let epochs: InvalidationEpochs
    /// Counts completed stores and removals: a request that reads it before its lookup and leads
    /// a miss afterwards looks again only when it changed (nothing can have been stored for it
    /// otherwise). One atomic load, so the hit path pays no lock for it.
    private let order: StorageWriteOrder
    /// Stores made after their answers (``storeAfterAnswering(_:)``), by number, until they end.
    private let afterAnswers = Locked<(next: UInt64, running: [UInt64: Task<Void, Never>])>((0, [:]))
    /// The storage's eviction count when the writer last looked.
    private let evictionsSeen: Atomic<Int>

    init(storage: any CacheStorage, memory: MemoryStorage?, strategy: CacheStrategy, counts: CacheCounters) {
        self.storage = storage
        self.memory = memory
        self.strategy = strategy
        self.counts = counts
        self.evictionsSeen = Atomic(storage.statistics.evictions)
        order = storage.writeOrder ?? StorageWriteOrder()
        keys = order.keys
        epochs = order.epochs
    }

    /// The count of completed writes (see ``StorageWriteOrder``).
    var writes: UInt64 { order.writeCount.load(ordering: .acquiring) }

    /// The stored record of `key`, or `nil`. Storages compare keys too; checking here keeps the
    /// guarantee for any storage a user plugs in.
    func lookup(_ key: String) async -> CacheRecord? {
        let found = await storage.record(for: key)
        return found?.key == key ? found : nil
    }

    /// Stores `entry` in the record of `key`, keeping the other partitions' responses and this
    /// partition's other `Vary` variants, read afresh. `keepsNothing`: what this request's
    /// lookup found holds nothing `entry` would not replace, so the read is saved (a response
    /// stored meanwhile by a concurrent request may be replaced: a lost entry, never a wrong one).
    /// Stores nothing when a removal of the key came after `since` (the removal counts when the
    /// request began; `nil` for the answer of the write that removed): that answer may predate
    /// the write; nor an entry whose body is not as long as its `Content-Length` says; nor, given
    /// `stillHolding` (a freshened response stored after its answer), unless the record read afresh
    /// still holds that stored body — a newer response stored meanwhile, or a removal, wins. Records
    /// ``CacheEvent/stored`` (and what the storage evicted meanwhile) in `context`.
    func store(
        _ entry: CacheEntry, at location: CacheLocator.Location, keepsNothing: Bool, since: InvalidationEpochs.Snapshot?,
        context: RecallContext?, stillHolding body: StoredBodyFile? = nil
    ) async {
        // Never a record whose body is not what its head declares (a head stored without its body).
        guard entry.bodyMatchesDeclaredLength else { return }
        let key = location.key
        await keys.lock(key)
        defer { keys.unlock(key) }
        if let since, !epochs.isCurrent(since, stripe: location.epochStripe) { return }
        let existing = keepsNothing ? nil : await lookup(key)
        if let body, existing?.variants.contains(where: { $0.storedBody?.isSameBody(as: body) == true }) != true { return }
        let updated = strategy.record(storing: entry, key: key, over: existing)
        if let memory {
            stored(context: context, evicted: memory.storeNow(updated).count)
        } else {
            await storage.store(updated, expires: strategy.expiry(of: updated))
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
        await keys.lock(location.key)
        defer { keys.unlock(location.key) }
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
            let merged = strategy.freshened(
                record, with: response, for: request, partition: partition, inScope: state.inScope,
                requestTime: state.requestTime, responseTime: date)
        else { return }
        await store(merged, at: location, keepsNothing: false, since: state.since, context: context)
    }

    /// Runs `store` after the caller has its answer, in a task of its own that ``waitForStoresAfterAnswers()``
    /// waits for: a store that copies a body kept in the store (a large one, whose head a 304
    /// freshened) must not make the caller wait for the copy. It is ordered like any other store
    /// (the key's lock, the removals since its request began).
    func storeAfterAnswering(_ store: @escaping @Sendable () async -> Void) {
        afterAnswers.withLock { books in
            let number = books.next
            books.next += 1
            books.running[number] = TaskCensus.task { [afterAnswers] in
                await store()
                afterAnswers.withLock { _ = $0.running.removeValue(forKey: number) }
            }
        }
    }

    /// Waits until every store begun by ``storeAfterAnswering(_:)`` so far has ended.
    func waitForStoresAfterAnswers() async {
        for task in afterAnswers.withLock({ Array($0.running.values) }) { await task.value }
    }

    /// Counts a store that reached the storage, and records it in `context` with what it
    /// evicted: `evicted` when the storage told it of this store (``MemoryStorage`` does, exact
    /// also when stores land out of order); else what the storage's eviction count says it
    /// evicted since the last store the writer saw.
    func stored(context: RecallContext?, evicted: Int? = nil) {
        order.writeCount.add(1, ordering: .releasing)
        counts.count { $0.stores += 1 }
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
        if let record = await lookup(key) {
            let kept = strategy.variants(of: record, without: outdated)
            if kept.isEmpty {
                await storage.remove(key)
            } else if kept.count < record.variants.count {
                let record = CacheRecord(key: key, variants: kept)
                await storage.store(record, expires: strategy.expiry(of: record))
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

import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The first step of an ``HTTPCache``: what it knows of a request before deciding — its route
/// (``CacheStrategy/Route``), where its responses are stored, its partition — and the stored
/// record, read without suspending when the storage can (a ``MemoryStorage`` through
/// ``MemoryReads``, any storage through ``CacheStorage/recordWithoutSuspending(for:)``), else
/// saying what to wait for (``resume(_:)``). A range request always reads through ``resume(_:)``.
final class CacheLookup: Sendable {
    /// What a look found.
    enum Outcome: Sendable {
        /// The cache has nothing to do with the request: let it through untouched.
        case bypass
        /// The request goes to the origin, unread, in this mode (an invalidation, a request
        /// with the caller's own validators): its answer still concerns the cache.
        case pass(CacheScheduling, CacheStrategy.Mode)
        /// The record found for a plain or range lookup (`nil`: nothing stored), and the count of
        /// completed writes read before the record (``CacheWriter/writes``).
        case found(CacheScheduling, CacheRecord?, writesBefore: UInt64)
        /// The look must suspend: go on with ``CacheLookup/resume(_:)``.
        case wait(Waiting)
    }

    /// A look that must suspend: to read the record with an async call (from a storage that has
    /// nothing at hand, or for a range request), after a store made after its answer
    /// (``WriteBehind``) has landed when `afterWrite`.
    struct Waiting: Sendable {
        var scheduling: CacheScheduling
        var afterWrite: Bool
    }

    private let strategy: CacheStrategy
    private let locator: CacheLocator
    private let partitioner: CachePartitioner
    private let storage: any CacheStorage
    private let writer: CacheWriter
    /// Over a ``MemoryStorage``: its hits read through per-core copies.
    let memory: MemoryReads?
    /// The same, for the hit path to use without retaining it (``memory`` keeps it alive): a
    /// retain writes the object's reference count, which every core shares.
    private let unownedMemory: Unmanaged<MemoryReads>?
    private let now: @Sendable () -> Date

    init(
        strategy: CacheStrategy, locator: CacheLocator, partitioner: CachePartitioner, storage: any CacheStorage,
        memory: MemoryReads?, writer: CacheWriter, now: @escaping @Sendable () -> Date
    ) {
        self.strategy = strategy
        self.locator = locator
        self.partitioner = partitioner
        self.storage = storage
        self.memory = memory
        self.unownedMemory = memory.map { Unmanaged.passUnretained($0) }
        self.writer = writer
        self.now = now
    }

    /// Looks `request` up, as far as it goes without suspending.
    ///
    /// (`@inline(__always)` here and below: inlined into its caller, the outcome is taken apart
    /// where it is made, and a memory hit neither moves the scheduling through an enum nor
    /// copies its record — 45 ns of a 800 ns hit, measured.)
    @inline(__always) func look(_ request: URLRequest) -> Outcome {
        let facts = RequestFacts(request)
        let route = strategy.route(request, facts)
        // A plain lookup first tries the calling core's copies: a hit there touches nothing
        // another core touches (not even the URL memo).
        let text = route == .bypass ? nil : facts.url?.absoluteString
        // (Not `text.flatMap(memory.look(for:))`: the method as a value retains its object, a
        // write to a count every core shares.)
        var copy: MemoryReads.Lookup?
        if route == .lookup, let text { copy = unownedMemory?._withUnsafeGuaranteedRef { $0.look(for: text) } }
        guard route != .bypass, let text, let location = copy?.hit?.location ?? locator.location(ofText: text) else { return .bypass }
        let inScope = HTTPCache.inScope
        // Every route that reads a record or stores a state reads the partition, but invalidation.
        let partition =
            route == .invalidate
            ? ""
            : partitioner.partition(for: request, hasFields: facts.hasFields, userinfo: location.userinfo, inScope: inScope)
        let scheduling = CacheScheduling(
            facts: facts, route: route, location: location, inScope: inScope, requestTime: now(),
            partition: partition, since: writer.epochs.snapshot(stripe: location.epochStripe))
        // A store made after its answer lands before anything else reads or writes its key.
        if writer.pending.mayHold(stripe: location.stripe) { return .wait(Waiting(scheduling: scheduling, afterWrite: true)) }
        return look(scheduling, copy: copy)
    }

    /// The rest of ``look(_:)``, once no store of the key is pending. `copy` is what the calling
    /// core's copies hold for the URL (none after a wait: the storage changed).
    @inline(__always) private func look(_ scheduling: consuming CacheScheduling, copy: MemoryReads.Lookup?) -> Outcome {
        let location = scheduling.location
        switch scheduling.route {
        case .bypass: return .bypass  // (sorted out before)
        case .invalidate: return .pass(scheduling, .invalidating)
        case .callerConditional:
            // Conditions the cache evaluates from what is stored (RFC 9111 §4.3.2): read the record.
            return .wait(Waiting(scheduling: scheduling, afterWrite: false))
        case .range: return .wait(Waiting(scheduling: scheduling, afterWrite: false))
        case .lookup:
            let writesBefore = writer.writes
            let record: CacheRecord?
            if let memory = unownedMemory {
                // A memory (tier) answers without suspending, a copy of its record first (checked
                // again now that no store of the key is pending and the write count is read); a
                // miss in a tier is asked below.
                record = memory._withUnsafeGuaranteedRef { $0.record(at: location, copy: copy) }
                if record == nil, !memory._withUnsafeGuaranteedRef({ $0.missesAreFinal }) {
                    return .wait(Waiting(scheduling: scheduling, afterWrite: false))
                }
            } else if let found = storage.recordWithoutSuspending(for: location.key), found.key == location.key {
                // So does any storage for what it has at hand (a file held open, a memory tier).
                record = found
            } else {
                return .wait(Waiting(scheduling: scheduling, afterWrite: false))
            }
            return found(scheduling, record, writesBefore: writesBefore)
        }
    }

    /// Goes on with a look that had to suspend: never waits again.
    func resume(_ waiting: Waiting) async -> Outcome {
        var scheduling = waiting.scheduling
        if waiting.afterWrite {
            await writer.keys.waitUntilFree(scheduling.location.hashedKey)
            scheduling.requestTime = now()
            let outcome = look(scheduling, copy: nil)
            guard case .wait = outcome else { return outcome }
        }
        let writesBefore = writer.writes
        return found(scheduling, await writer.lookup(scheduling.location.key), writesBefore: writesBefore)
    }

    /// `record` found for `scheduling`; a URL with something stored is remembered, so its
    /// hits skip the key.
    @inline(__always) private func found(_ scheduling: consuming CacheScheduling, _ record: consuming CacheRecord?, writesBefore: UInt64) -> Outcome {
        if record != nil { locator.remember(scheduling.location, for: scheduling.facts.url) }
        return .found(scheduling, record, writesBefore: writesBefore)
    }
}

import Dispatch
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Stores made after their answers (``CacheConfiguration/writesBehind``): over a
/// ``MemoryStorage``, a miss whose answer is the response whatever the cache decides returns
/// first, and its store runs on a queue.
///
/// A speed-up that needs the storage's help, so it lives here, below the cache's decisions:
/// a write that will land later must not be undone by, nor undo, what happens meanwhile. So
/// ``begin(_:)`` takes the key's write lock (every later write of the key through the cache comes
/// after this one), counts the write as pending (every later lookup of the key waits for it,
/// ``PendingWrites/mayHold(stripe:)``), and asks the storage to watch the key (a removal made around the cache
/// meanwhile — another cache on the storage, `removeAll()` at logout — drops the store).
final class WriteBehind: Sendable {
    private let memory: MemoryStorage
    private let writer: CacheWriter
    private let records: CacheRecordRules
    /// The cache's leads: how many misses are in flight, and the lead each store ends.
    private let leads: CacheLeads
    /// Stores begun and not yet landed, per stripe of keys (the writer's: every store the cache
    /// makes after its answer counts there).
    private var pending: PendingWrites { writer.pending }
    /// Where the stores run: a plain queue, not a task, as a store into a memory storage never
    /// suspends (and a dispatch costs less than a task on the caller's path). Tests suspend it
    /// to hold stores back.
    let queue = DispatchQueue(label: "recall.cache.write-behind", attributes: .concurrent)

    /// Write-behind over `memory`.
    init(memory: MemoryStorage, writer: CacheWriter, records: CacheRecordRules, leads: CacheLeads) {
        self.memory = memory
        self.writer = writer
        self.records = records
        self.leads = leads
    }

    /// Begins the store of `response`, the answer to `request` (sent as `sent`) in `state`, when
    /// it is the answer whatever the cache decides, so that the decision and the store can wait
    /// until the caller has it: a `GET` with no usable stored response (mode
    /// `.fetching(stored: nil)`), answered by the network for the URL looked up — and alone: while
    /// other requests of the cache are being fetched (or their stores landing), or when others
    /// went to the origin or ended their leads while this one was fetched (a store landing
    /// behind its answer does not count; ``CacheLeads/othersFetching(besides:since:)``),
    /// the cores are likely busy, and a thread woken for the store would only add to their work
    /// (docs/benchmarks.md, "Write-behind under load"). Takes its key's write lock, counts the write as pending and
    /// watches the key; the write's ticket, or `nil` (nothing begun: store the usual way) for
    /// another answer, with others in flight, or when another write holds the key.
    func begin(_ response: RecallResponse, for request: URLRequest, sent: URLRequest, state: CacheRequestState) -> UInt64? {
        guard response.source == .network, state.method == .get, case .fetching(stored: nil) = state.mode,
            !leads.othersFetching(besides: state.lead, since: state.fetchEvents)
        else { return nil }
        let sentURL = sent.url  // (each read of a request's URL goes through Foundation's object)
        guard sentURL == request.url, response.url == nil || response.url == sentURL else { return nil }
        return begin(state)
    }

    /// Begins the store of the answer to the request of `state` (see above).
    func begin(_ state: CacheRequestState) -> UInt64? {
        guard writer.keys.tryLock(state.location.hashedKey) else { return nil }
        memory.watch(state.key)
        return pending.begin(stripe: state.location.stripe)
    }

    /// Runs `work` on the queue.
    func run(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }

    /// Lands the write begun with `ticket` for the request of `state`, decided `after` for an
    /// answer that belongs at `target`: stores the entry of a `.store` there when it is the key
    /// looked up (the one locked). Where it stored, or `nil`.
    func land(
        _ after: CacheStrategy.After, at target: CacheLocator.Location?, state: CacheRequestState, context: RecallContext?,
        ticket: UInt64
    ) -> CacheLocator.Location? {
        guard case .store(let entry) = after, let target, target.key == state.key else {
            _ = land(nil, state: state, context: context, ticket: ticket)
            return nil
        }
        return land(entry, state: state, context: context, ticket: ticket) ? target : nil
    }

    /// Lands the write begun with `ticket` for the request of `state`: stores `entry` (when
    /// given, and no removal of the key came since the request began) into the record of the
    /// key, then releases the key, ends the request's lead and ends the pending count (in that
    /// order: a flush that returns finds the lead ended too, and the next miss alone). Whether it
    /// was stored.
    func land(_ entry: CacheEntry?, state: CacheRequestState, context: RecallContext?, ticket: UInt64) -> Bool {
        defer {
            writer.keys.unlock(state.location.hashedKey)
            leads.finish(state.lead, behind: true)
            pending.end(ticket, stripe: state.location.stripe)
        }
        guard let entry, entry.bodyMatchesDeclaredLength, writer.epochs.isCurrent(state.since, stripe: state.location.epochStripe) else {
            memory.unwatch(state.key)
            return false
        }
        let key = state.key
        // (What the lookup found saves reading the record again when the store keeps none of it.)
        let write =
            records.write(storing: entry, key: key, found: state.record, expiring: false)
            ?? records.write(storing: entry, key: key, over: memory.recordNow(for: key), expiring: false)
        guard let released = memory.storeNow(write.record, watched: true) else { return false }
        writer.stored(context: context, evicted: released.evictions)
        withExtendedLifetime(released) {}  // (freed here, after the storage's locks)
        return true
    }
}

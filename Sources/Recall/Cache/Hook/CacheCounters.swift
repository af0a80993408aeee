/// What an ``HTTPCache`` counts, each count told to the request's context as an event too, so
/// the statistics and the events tell the same story.
///
/// Hits, misses and stores are counted apart, each on a ``StripedCounter`` (every hit adds one,
/// every stored miss two, and a shared lock there made the cores take turns); the rest under one lock.
final class CacheCounters: Sendable {
    private let counts = Locked(CacheStatistics())
    private let hits = StripedCounter()
    private let misses = StripedCounter()
    private let stores = StripedCounter()

    /// The counts so far (without the storage's statistics and the requests waiting).
    var statistics: CacheStatistics {
        var statistics = counts.withLock { $0 }
        statistics.hits += hits.value
        statistics.misses += misses.value
        statistics.stores += stores.value
        return statistics
    }

    /// A fresh hit.
    func hit(_ context: RecallContext) {
        hits.add()
        context.record(.cache(.hit))
    }

    /// A request that goes to the origin for want of a usable stored response.
    func miss(_ context: RecallContext) {
        misses.add()
        context.record(.cache(.miss))
    }

    /// A response stored (or a stored one updated).
    func stored() {
        stores.add()
    }

    /// A request let through untouched.
    func bypass(_ context: RecallContext) {
        count(.bypassed, context) { $0.bypassed += 1 }
    }

    /// Counts with `update` and records `event` in `context`.
    func count(_ event: CacheEvent, _ context: RecallContext, _ update: (inout CacheStatistics) -> Void) {
        count(update)
        context.record(.cache(event))
    }

    /// Counts with `update` (what no request's events show: invalidations; stores are counted
    /// by ``stored()``).
    func count(_ update: (inout CacheStatistics) -> Void) {
        counts.withLock { update(&$0) }
    }

    /// Counts what the strategy decided before the network.
    func count(_ before: borrowing CacheStrategy.Before, context: RecallContext) {
        switch before {
        case .serve(_, let stale?):
            count(.stale(stale), context) { $0.staleServed[stale, default: 0] += 1 }
        case .serve: hit(context)
        case .serveAndRefresh:
            count(.stale(.staleWhileRevalidate), context) { $0.staleServed[.staleWhileRevalidate, default: 0] += 1 }
        case .send(_, .fetching), .send(_, .ranging), .send(_, .completing): miss(context)
        case .send(_, .callerConditional): bypass(context)  // (the origin evaluates the caller's conditions)
        case .send: break
        case .bypass: bypass(context)
        case .gatewayTimeout: count(.gatewayTimeout, context) { $0.gatewayTimeouts += 1 }
        }
    }

    /// Counts what the strategy decided after a failure of a request in `mode` (nothing for a
    /// background refresh, which serves nobody).
    func count(_ failure: CacheStrategy.Failure, mode: CacheStrategy.Mode, isRefresh: Bool, context: RecallContext) {
        guard !isRefresh else { return }
        switch failure {
        case .serveStale(_, let reason): count(.stale(reason), context) { $0.staleServed[reason, default: 0] += 1 }
        case .gatewayTimeout, .fail: if mode.isValidating { miss(context) }
        }
    }

    /// Counts what the strategy decided for an answer to a request in `mode` and of `method`
    /// (nothing for a background refresh, which serves nobody).
    func count(
        _ after: CacheStrategy.After, response: RecallResponse, mode: CacheStrategy.Mode, method: RequestMethod,
        isRefresh: Bool, context: RecallContext
    ) {
        guard !isRefresh else { return }
        switch after {
        case .revalidated, .discardAndAnswer:
            count(.revalidated, context) { $0.revalidated += 1 }
        case .serveStale(_, let reason):
            count(.stale(reason), context) { $0.staleServed[reason, default: 0] += 1 }
        case .refetch:
            // A validation answered with a 304 for something else (a range completion that came
            // back short is sent again too, and counts nothing more: it was a miss already).
            if mode.isValidating {
                count(.changed, context) {
                    $0.refetched += 1; $0.revalidatedChanged += 1
                }
            }
        case .store, .storeAndAnswer, .remove, .discard, .pass:
            // A validation answered with a new representation (HEAD answers update, not replace).
            if mode.isValidating, method != .head, response.source == .network {
                count(.changed, context) { $0.revalidatedChanged += 1 }
            }
        case .invalidate, .freshen:
            break
        }
        switch after {
        case .remove, .discard, .invalidate: context.record(.cache(.invalidated))
        case .refetch(_, let removing) where removing: context.record(.cache(.invalidated))
        default: break
        }
    }
}

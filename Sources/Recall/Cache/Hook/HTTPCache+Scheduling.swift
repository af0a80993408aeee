import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Before the network: the look-up, the strategy's decision on what it found, and what the cache
/// does with that decision — answer, pass the request on, or suspend (read the record, the
/// storage's removal mark, share a miss) with what it found so far.
extension HTTPCache {
    /// Answers a hit from a storage that reads without suspending, or passes on a request it
    /// can decide on at once; else a suspension that holds what the look-up found, for the
    /// pipeline to await: to read the record, the storage's removal mark, or to share a miss.
    public func decide(_ request: URLRequest, context: RecallContext) -> HookDecision {
        switch step(on: lookup.look(request), request, context: context) {
        case .act(let action): .act(action)
        case .wait(let suspension): waiting(suspension, request, context: context)
        }
    }

    /// Answers from cache, or passes the request on (with validators when revalidating): what
    /// ``decide(_:context:)`` decides, awaited.
    public func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
        switch step(on: lookup.look(request), request, context: context) {
        case .act(let action): action
        case .wait(let suspension): try await resume(suspension, request, context: context)
        }
    }

    /// One step of scheduling: the action, or where it stopped before a suspension point.
    private enum Step {
        case act(HookAction)
        case wait(CacheScheduling.Suspension)
    }

    /// The suspension the pipeline awaits for `suspension` (out of the inlined path: a hit
    /// never comes here).
    @inline(never) private func waiting(
        _ suspension: CacheScheduling.Suspension, _ request: URLRequest, context: RecallContext
    ) -> HookDecision {
        .suspend(HookSuspension { [self] in try await resume(suspension, request, context: context) })
    }

    /// Goes on from where scheduling stopped, until it decides.
    private func resume(_ suspension: CacheScheduling.Suspension, _ request: URLRequest, context: RecallContext) async throws -> HookAction {
        var next = suspension
        while true {
            let step: Step
            switch next {
            case .lookup(let waiting):
                step = self.step(on: await lookup.resume(waiting), request, context: context)
            case .mark(var scheduling, let record, let before):
                scheduling.since = await writer.marking(scheduling.since, key: scheduling.location.key)
                return act(on: before, request: request, scheduling, record: record, lead: nil, context: context)
            case .coalesce(let scheduling, let flightKey, let record, let before, let writesBefore):
                return try await coalesce(
                    scheduling, flightKey: flightKey, record: record, before: before, writesBefore: writesBefore,
                    request, context: context)
            }
            switch step {
            case .act(let action): return action
            case .wait(let suspension): next = suspension
            }
        }
    }

    /// What the request does with what its lookup found: the action, or where it must suspend
    /// first, to read the record or to share a miss.
    ///
    /// (Transparent, not `@inline(__always)`: with the follow-ups, `decide` grew past the size up to
    /// which the optimizer honours `@inline(__always)`, and a hit then called this and copied its
    /// answer twice with `memmove` — 5–8 % of a memory hit at p0, seen in `perf` and measured
    /// alternating with the build before. The mandatory inliner always inlines it.)
    @_transparent private func step(on found: consuming CacheLookup.Outcome, _ request: URLRequest, context: RecallContext) -> Step {
        switch consume found {
        case .bypass:
            counts.bypass(context)
            return .act(.proceed(request))
        case .pass(let scheduling, let mode):
            counts.bypass(context)
            return .act(passOn(request, scheduling, mode: mode))
        case .wait(let waiting):
            return .wait(.lookup(waiting))
        case .found(let scheduling, let record, let writesBefore):
            let before = strategy.before(request, scheduling, record: record)
            // (A miss shared with others reads the storage's mark there, for the one that sends.)
            if case .send = before, configuration.coalescesRequests, scheduling.route == .lookup {
                return lead(scheduling, record: record, before: before, writesBefore: writesBefore, request, context: context)
            }
            // Over a storage other processes share, a request that may store reads its mark first
            // (a stale hit that refreshes in the background too, before it is answered).
            if writer.countsRemovals, Self.mayStore(before) {
                return Self.toMark(scheduling, record: record, before: before)
            }
            return .act(act(on: before, request: request, scheduling, record: record, lead: nil, context: context))
        }
    }

    /// Passes on `request`, which the cache does not look up but hears the answer of (an
    /// invalidation), with its follow-up (out of the inlined path: a hit never comes here).
    @inline(never) private func passOn(_ request: URLRequest, _ scheduling: CacheScheduling, mode: CacheStrategy.Mode) -> HookAction {
        .proceedThen(request, followUp(scheduling.state(in: self, mode: mode)))
    }

    /// The follow-up that carries `state` to the request's answer (out of the inlined path).
    @inline(never) private func followUp(_ state: CacheRequestState) -> HookFollowUp {
        HookFollowUp(state)
    }

    /// Where scheduling stops to read the storage's removal mark (out of the inlined path: a
    /// storage that counts removals is the only one that comes here).
    @inline(never) private static func toMark(_ scheduling: CacheScheduling, record: CacheRecord?, before: CacheStrategy.Before) -> Step {
        .wait(.mark(scheduling, record: record, before: before))
    }

    /// Whether `before` sends a request whose answer may be stored: to the origin now, or as a
    /// background refresh.
    private static func mayStore(_ before: CacheStrategy.Before) -> Bool {
        switch before {
        case .send, .serveAndRefresh: true
        case .serve, .bypass, .gatewayTimeout: false
        }
    }

    /// A miss with coalescing on, decided `before` on `record`: over a memory storage, with no
    /// other process to ask, a miss nobody leads yet is led without suspending; else it waits,
    /// to ``coalesce(_:flightKey:record:before:writesBefore:_:context:)`` once suspended.
    private func lead(
        _ scheduling: CacheScheduling, record: CacheRecord?, before: consuming CacheStrategy.Before, writesBefore: UInt64,
        _ request: URLRequest, context: RecallContext
    ) -> Step {
        let key = scheduling.location.key
        // A request that starts after an invalidation of its key never waits for a fetch
        // that began before it: the epoch is part of what requests coalesce on.
        let flightKey = RequestCoalescer.key(
            scheduling.location.hashedKey, request, hasFields: scheduling.facts.hasFields, epoch: scheduling.since.epoch)
        guard let memory = lookup.memory, memory.missesAreFinal, let lead = leads.leadWithoutSuspending(flightKey) else {
            return .wait(.coalesce(scheduling, flightKey: flightKey, record: record, before: before, writesBefore: writesBefore))
        }
        // Another leader may have stored the entry between our lookup and our lead (read after
        // the lead is taken: a store that lands before it shows in the write count).
        guard writer.writes == writesBefore else {
            let stored = memory.current(key)
            return .act(
                act(on: strategy.before(request, scheduling, record: stored), request: request, scheduling, record: stored, lead: lead, context: context))
        }
        // (The decision moved on, not copied: a copy retains each of its parts.)
        return .act(act(on: before, request: request, scheduling, record: record, lead: lead, context: context))
    }

    /// A miss with coalescing on: shared with the concurrent misses of its key (``CacheLeads``),
    /// then decided on what the leader (of this process or another) left.
    private func coalesce(
        _ scheduling: CacheScheduling, flightKey: HashedKey, record found: CacheRecord?, before decided: CacheStrategy.Before,
        writesBefore: UInt64, _ request: URLRequest, context: RecallContext
    ) async throws -> HookAction {
        let key = scheduling.location.key
        var record = found
        var scheduling = scheduling
        let (before, lead) = try await leads.share(
            flightKey, storageKey: key, decided: decided, changed: { writer.writes != writesBefore },
            // Over a storage other processes share, the request that is to send reads its mark.
            marks: writer.countsRemovals, mark: { scheduling.since = await writer.marking(scheduling.since, key: key) },
            // (Named without the epoch, which is this process's own, but with the storage's removal
            // mark, which the fleet shares: a request that starts after a removal by any process
            // never waits for a fetch begun before it.)
            fetchName: {
                strategy.partitioner.fetchName(
                    RequestCoalescer.key(key, request, hasFields: scheduling.facts.hasFields, mark: scheduling.since.storage))
            },
            coalesced: { counts.count(.coalesced, context) { $0.coalesced += 1 } },
            look: { later, lookup in
                record = await writer.lookup(key, lookup)
                return strategy.before(request, scheduling, record: record, now: later ? now() : nil)
            })
        return act(on: before, request: request, scheduling, record: record, lead: lead, context: context)
    }

    /// Carries out what the strategy decided before the network for the request `scheduling`
    /// describes, which found `record`, and counts it. `lead` is what the request leads, ended
    /// here unless the request goes to the origin (then its state holds it).
    private func act(
        on before: consuming CacheStrategy.Before, request: URLRequest, _ scheduling: CacheScheduling, record: CacheRecord?,
        lead: CacheRequestState.Lead?, context: RecallContext
    ) -> HookAction {
        counts.count(before, context: context)
        switch consume before {  // (moved, not copied: a response copy retains each of its parts)
        case .serve(let response, _):
            leads.finish(lead)
            return .respond(response)
        case .serveAndRefresh(let response, let refresh, let mode):
            leads.finish(lead)
            // One refresh at a time per key.
            guard leads.leadRefresh(scheduling.location.key) else { return .respond(response) }
            return .respondThenRefresh(response, refresh: refresh, then: followUp(scheduling.refreshState(in: self, record: record, mode: mode)))
        case .send(let outgoing, let mode):
            // (A request that leads no shared miss still counts among the fetches under way.)
            let lead = lead ?? leads.fetchAlone()
            let events = leads.fetchBegins()
            return .proceedThen(
                outgoing, followUp(scheduling.state(in: self, record: record, mode: mode, lead: lead, fetchEvents: events)))
        case .bypass:
            leads.finish(lead)
            return .proceed(request)
        case .gatewayTimeout(let answer):
            leads.finish(lead)
            return .respond(answer)
        }
    }
}

import Synchronization

/// The lead of a miss whose body streams, ended once: when the body's copy is stored (or will
/// not be), or earlier, when the caller falls behind reading it — then the misses waiting for it
/// go on without it (one of them leads in its place) instead of waiting at that caller's pace,
/// and what the body's end does later ends nothing more.
final class LeadEnding: Sendable {
    private let leads: CacheLeads
    private let lead: CacheRequestState.Lead?
    private let ended = Atomic<Bool>(false)

    init(_ lead: CacheRequestState.Lead?, of leads: CacheLeads) {
        self.leads = leads
        self.lead = lead
    }

    /// Wakes the waiting misses to look again (``CacheLeads/finish(_:)``), unless ended already.
    func finish() {
        if take() { leads.finish(lead) }
    }

    /// Lets one waiting miss lead in this one's place (``CacheLeads/abandon(_:)``), unless ended already.
    func abandon() {
        if take() { leads.abandon(lead) }
    }

    /// Whether this call is the first to end the lead.
    private func take() -> Bool {
        lead != nil && !ended.exchange(true, ordering: .acquiringAndReleasing)
    }
}

import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a hook's ``ServiceHook/decide(_:context:)`` answers before a request goes on: the
/// action, when the hook decided without suspending; what to await to decide, when it must
/// suspend first; or nothing, to leave the decision to its ``ServiceHook/onSchedule(_:context:)``.
///
/// ```swift
/// func decide(_ request: URLRequest, context: RecallContext) -> HookDecision {
///     if let found = table.value(for: request) { return .act(.respond(found)) }  // at once
///     return .suspend(HookSuspension { try await self.fetchDecision(request) })  // after a wait
/// }
/// ```
///
/// A suspension carries what the hook found so far, so nothing is left in the request's context
/// between the two steps; the pipeline awaits it in the hook's place, and does not call
/// `onSchedule` after a decision made here.
public enum HookDecision: Sendable {
    /// Decided without suspending: the pipeline carries out the action (as if `onSchedule` had
    /// returned it).
    case act(HookAction)
    /// Decided after a suspension: the pipeline awaits it for the action.
    case suspend(HookSuspension)
    /// Not decided here: the pipeline calls the hook's `onSchedule` (the default).
    case callOnSchedule
}

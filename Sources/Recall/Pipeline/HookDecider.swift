import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Asks one hook of a pipeline to decide (``ServiceHook/decide(_:context:)``), with the hook's
/// type known.
///
/// A call through `any ServiceHook` copies the existential first, and the copy retains the
/// hook: a write to a reference count every core shares, on every hit. A subclass made for the
/// hook's own type borrows it instead; the pipeline keeps one for its first hook and calls it
/// through an unmanaged reference (see ``Pipeline``).
class HookDecider: @unchecked Sendable {  // (no state of its own; its one subclass is immutable)
    /// The hook's decision.
    func decide(_ request: URLRequest, context: RecallContext) -> HookDecision { .callOnSchedule }

    /// A decider for `hook`.
    static func `for`(_ hook: some ServiceHook) -> HookDecider {
        Typed(hook)
    }

    private final class Typed<Hook: ServiceHook>: HookDecider, @unchecked Sendable {
        let hook: Hook

        init(_ hook: Hook) {
            self.hook = hook
        }

        override func decide(_ request: URLRequest, context: RecallContext) -> HookDecision {
            hook.decide(request, context: context)
        }
    }
}

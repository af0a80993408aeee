/// A place for one hook instance's per-request value in a ``RecallContext``.
///
/// A ``ContextKey`` is a type, shared by every instance of a hook; a slot is an object, so each
/// hook instance that makes its own keeps its state apart from every other — two caches in one
/// pipeline never read each other's. Make one per instance and per piece of state:
///
/// ```swift
/// struct TimingHook: ServiceHook {
///     let started = ContextSlot<ContinuousClock.Instant>()
///
///     func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
///         context[started] = .now
///         return .proceed(request)
///     }
/// }
/// ```
public final class ContextSlot<Value: Sendable>: Sendable {
    /// Creates a slot no other slot is equal to.
    public init() {}

    /// What a context files the slot's value under.
    var id: ObjectIdentifier { ObjectIdentifier(self) }
}

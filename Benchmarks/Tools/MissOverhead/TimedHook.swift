import Foundation
import Recall
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Wraps a hook and adds up the wall time of its calls (to tell computation from waiting).
final class TimedHook: ServiceHook, @unchecked Sendable {
    /// Wall and thread-CPU microseconds of one kind of call: when the CPU time is far below the
    /// wall time, the thread was waiting or descheduled, not computing.
    struct Totals { var wall = 0.0, cpu = 0.0 }
    let inner: any ServiceHook
    let lock = NSLock()
    var schedule = Totals(), success = Totals()
    init(_ inner: any ServiceHook) { self.inner = inner }
    static func threadCPU() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) * 1e6 + Double(time.tv_nsec) / 1e3
    }
    /// Runs `body`, adding its wall and CPU time to the totals at `totals`.
    func timed<Result>(_ totals: ReferenceWritableKeyPath<TimedHook, Totals>, _ body: () async throws -> Result) async rethrows -> Result {
        let start = ContinuousClock.now
        let cpu = Self.threadCPU()
        defer {
            let wall = ContinuousClock.now - start
            let used = Self.threadCPU() - cpu
            lock.withLock {
                self[keyPath: totals].wall += Double(wall.components.attoseconds) * 1e-12
                self[keyPath: totals].cpu += used
            }
        }
        return try await body()
    }
    func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
        let action = try await timed(\.schedule) { try await inner.onSchedule(request, context: context) }
        // The cache hands the answer to the follow-up it decided with: timed in its place.
        guard case .proceedThen(let forwarded, let followUp) = action else { return action }
        return .proceedThen(
            forwarded,
            HookFollowUp(
                onSuccess: { response, request, context in
                    try await self.timed(\.success) { try await followUp.onSuccess(response, for: request, context: context) }
                },
                onFailure: { error, request, context in try await followUp.onFailure(error, for: request, context: context) }))
    }
    func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext) async throws -> RecallResponse {
        try await timed(\.success) { try await inner.onSuccess(response, for: request, context: context) }
    }
}

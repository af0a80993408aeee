import Dispatch
import Foundation
import Recall
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A transport that ignores cancellation: it answers `"late"` `delay` seconds after it was
/// asked, whatever happens to the task that asked. Tests use it to show that Recall's time
/// limits hold against a transport that does not cooperate.
public final class StubbornTransport: Transport {
    /// How long each answer takes, in seconds.
    public let delay: Double
    private let counts = Locked((started: 0, finished: 0))

    /// A transport answering after `delay` seconds.
    public init(seconds delay: Double) {
        self.delay = delay
    }

    /// Attempts started so far.
    public var started: Int { counts.withLock { $0.started } }
    /// Attempts that have answered so far (late or not).
    public var finished: Int { counts.withLock { $0.finished } }

    /// Waits `delay` seconds, ignoring cancellation, then answers `200 late`.
    public func send(_ request: URLRequest) async throws -> Response {
        counts.withLock { $0.started += 1 }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { done.resume() }
        }
        counts.withLock { $0.finished += 1 }
        return .text("late")
    }

    /// Waits (polling every few milliseconds, at most `limit` seconds) until every attempt
    /// started has finished.
    public func waitUntilIdle(limit: Double = 5) async throws {
        let end = ContinuousClock.now + .seconds(limit)
        while finished < started, ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(5)) }
    }
}

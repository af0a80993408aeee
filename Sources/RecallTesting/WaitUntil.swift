import Foundation

/// Waits until `condition` holds, looking again every 200 µs. It is not a timing: a test that
/// uses it does not depend on how long the condition takes. The bound of `seconds` (generous,
/// for a machine whose cores are busy) turns a condition that never comes into a
/// ``WaitTimedOut`` error instead of a hang.
///
/// ```swift
/// try await waitUntil("the refresh reached the origin") { mock.count(for: "/a") == 2 }
/// ```
///
/// - Parameters:
///   - what: what is waited for, named in the error when it never comes.
///   - seconds: the longest the wait may take.
///   - condition: looked at until it is true (with an async call, or none).
public func waitUntil(_ what: String, seconds: Double = 60, _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while try await !condition() {
        if ContinuousClock.now > deadline { throw WaitTimedOut(what: what) }
        try await Task.sleep(for: .microseconds(200))
    }
}

/// Suspends until the calling task is cancelled, then throws `CancellationError`: for a
/// transport or a fetch that never answers by itself, with no timer standing in for "forever".
public func untilCancelled() async throws -> Never {
    let (never, keepOpen) = AsyncStream<Never>.makeStream()
    for await _ in never {}  // (ends when the task is cancelled)
    withExtendedLifetime(keepOpen) {}
    throw CancellationError()
}

/// A condition that ``waitUntil(_:seconds:_:)`` waited for in vain.
public struct WaitTimedOut: Error, CustomStringConvertible {
    /// What was waited for.
    public var what: String
    /// Says what was waited for in vain.
    public var description: String { "waited in vain for \(what)" }
}

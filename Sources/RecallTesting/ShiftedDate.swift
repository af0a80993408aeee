import Foundation
import Recall

/// The date a cache reads (``/Recall/HTTPCache``'s `now:`), moved on by the test: the real date
/// plus what ``advance(by:)`` added. A stored response becomes stale when the test says, without
/// the test waiting for the seconds to pass.
///
/// ```swift
/// let date = ShiftedDate()
/// let cache = HTTPCache(now: date.now)
/// // ... store a response with max-age=0 ...
/// date.advance(by: 2)  // it is two seconds old now
/// ```
public final class ShiftedDate: Sendable {
    private let shift = Locked(0.0)

    /// The real date, not shifted yet.
    public init() {}

    /// The date the cache reads: the real one plus what was advanced.
    public var now: @Sendable () -> Date {
        { [self] in Date().addingTimeInterval(shift.withLock { $0 }) }
    }

    /// Moves the date on by `seconds`.
    public func advance(by seconds: TimeInterval) {
        shift.withLock { $0 += seconds }
    }
}

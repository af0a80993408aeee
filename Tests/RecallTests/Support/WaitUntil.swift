import Foundation

/// Waits until `condition` holds, yielding between looks. It is not a timing: the test does not
/// depend on how long it takes. A bound of `seconds` (generous, for a machine whose cores are
/// busy) turns a condition that never comes into a failure instead of a hang.
func waitUntil(_ what: String, seconds: Double = 60, _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while !condition() {
        if ContinuousClock.now > deadline { throw WaitTimedOut(what: what) }
        try await Task.sleep(for: .microseconds(200))
    }
}

/// A condition that ``waitUntil(_:seconds:_:)`` waited for in vain.
struct WaitTimedOut: Error, CustomStringConvertible {
    var what: String
    var description: String { "waited in vain for \(what)" }
}

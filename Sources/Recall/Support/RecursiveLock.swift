import Foundation

/// A lock the thread that holds it may take again, for code that may call back into its owner
/// while holding it (Foundation's `NSRecursiveLock`, made `Sendable`).
final class RecursiveLock: @unchecked Sendable {
    private let lock = NSRecursiveLock()

    /// Runs `body` holding the lock.
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}

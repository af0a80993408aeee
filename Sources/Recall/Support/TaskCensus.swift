import Synchronization

/// Counts the tasks Recall starts on behalf of a piece of work — a body's producer, a cache's tee
/// and its disk writer, an attempt and its timer, a background refresh — while they run, so a
/// test can check that work left nothing running behind it (a download cancelled halfway, say).
/// A census is installed for a scope (``current``); every counted task started within it — and
/// within the tasks it starts — counts in it. Outside any census, nothing is counted.
final class TaskCensus: Sendable {
    /// The census of the running task, if any.
    @TaskLocal static var current: TaskCensus?

    private let count = Atomic<Int>(0)

    /// The counted tasks still running.
    var live: Int { count.load(ordering: .acquiring) }

    /// Starts `operation` as a task counted in the current census.
    @discardableResult
    static func task<Success: Sendable>(_ operation: @escaping @Sendable () async -> Success) -> Task<Success, Never> {
        let census = current
        census?.count.add(1, ordering: .relaxed)
        return Task {
            defer { census?.count.subtract(1, ordering: .releasing) }
            return await operation()
        }
    }

    /// Starts `operation` as a detached task (no priority, actor or task-locals of the caller's)
    /// counted in the current census, which it keeps as its own.
    @discardableResult
    static func detached(_ operation: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        let census = current
        census?.count.add(1, ordering: .relaxed)
        return Task.detached {
            defer { census?.count.subtract(1, ordering: .releasing) }
            await TaskCensus.$current.withValue(census) { await operation() }
        }
    }
}

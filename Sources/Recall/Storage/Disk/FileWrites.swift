import Foundation

/// Runs a blocking file write off Swift concurrency's threads.
///
/// `write(2)` to a regular file can sleep for as long as the kernel throttles a process that
/// dirties pages faster than its disk takes them (hundreds of milliseconds on a slow disk under
/// a large download): on the cooperative pool — two threads on a two-core machine — that would
/// stall every task of the process. The writes run on a queue of their own (Dispatch gives a
/// blocked item of such a queue a thread of its own, never one of the pool's), and the task
/// waits for them without holding a thread. Reads stay where they are: a `pread` of at most one
/// piece (256 KiB, ``StoredBodyFile/pieceSize``) from the page cache is not throttled, and a hop
/// per piece would cost the hit path more than the read. The queue is concurrent (writes of
/// different files go on together): the appends of one file must not overlap — a writer awaits
/// each before the next, as ``DiskWrite``'s callers do.
enum FileWrites {
    private static let queue = DispatchQueue(label: "recall.file-writes", attributes: .concurrent)

    /// The result of `write`, run on the queue.
    static func run<Value: Sendable>(_ write: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try write() }) }
        }
    }
}

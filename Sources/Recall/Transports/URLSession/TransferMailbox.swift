#if !canImport(Darwin)
    import Foundation
    import Synchronization

    /// Client calls that a streaming corelibs transfer runs between two of its chunks: the soonest
    /// turn a call can get while the transfer streams.
    ///
    /// A transfer's libcurl work runs in work items that read as long as its socket has data
    /// (``SessionTransferQueues``), so a call queued on the transfer's queue still waits for the
    /// item under way to end: on a 1 GiB loopback miss, 2–9 ms for the head and again for the
    /// first chunk. From within that work the transfer hands each chunk to its session's delegate
    /// queue (``PacedDelegateQueue``), under the one serial queue every corelibs session shares;
    /// there, between two chunks, it runs the calls posted here — alone, as any queue under that
    /// one would. A call posted here goes to its queues too, and runs once, wherever it comes first
    /// (``SessionWorkQueue/Call``).
    final class TransferMailbox: Sendable {
        private let calls = Locked<[SessionWorkQueue.Call]>([])
        /// A run under way: a call that hands the same transfer a chunk meanwhile (a session whose
        /// delegate queue is this transfer's own) leaves the calls posted since for the next chunk,
        /// so that they run after the ones taken before them.
        private let running = Atomic<Bool>(false)
        /// How many calls wait: read without the lock by every chunk the transfer hands over.
        private let waiting = Atomic<Int>(0)

        /// Leaves `call` for the transfer's next chunk. (Calls run elsewhere meanwhile are dropped
        /// once a few wait: a transfer that has ended runs none.)
        func post(_ call: SessionWorkQueue.Call) {
            calls.withLock { calls in
                if calls.count >= Self.pruneAt { calls.removeAll { $0.isTaken } }
                calls.append(call)
                waiting.store(calls.count, ordering: .releasing)
            }
        }

        /// The number of waiting calls past which those taken elsewhere are dropped.
        static let pruneAt = 64

        /// Runs the calls waiting, in the order they were posted. Only from the transfer's own
        /// work, where nothing else under corelibs' serial queue runs.
        func runPending() {
            guard waiting.load(ordering: .acquiring) > 0,
                running.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
            else { return }
            defer { running.store(false, ordering: .releasing) }
            let pending = calls.withLock { calls -> [SessionWorkQueue.Call] in
                defer {
                    calls = []
                    waiting.store(0, ordering: .releasing)
                }
                return calls
            }
            for call in pending { call.run() }
        }

        /// How many calls wait (read without the lock).
        var count: Int { waiting.load(ordering: .acquiring) }
    }
#endif

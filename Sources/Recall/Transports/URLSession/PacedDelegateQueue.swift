#if !canImport(Darwin)
    import Foundation
    import Synchronization

    /// The delegate queue of the sessions ``URLSessionTransport`` makes on swift-corelibs-foundation:
    /// serial, and it makes a transfer that outruns its delegate wait.
    ///
    /// corelibs cannot pause a transfer (`suspend()` during one traps), and its libcurl transfer
    /// hands every chunk to the delegate by adding an operation here, from the transfer's own queue,
    /// without waiting: a delegate slower than the network — on two cores, any delegate that does
    /// more than count bytes — leaves the body queued here in memory (measured: hundreds of MiB of
    /// a 1 GiB download). This queue holds the caller of ``addOperation(_:)`` while ``limit``
    /// operations wait, so the transfer stops reading from its socket (TCP tells the origin to
    /// wait) until the delegate has caught up. Meanwhile the delegate must never wait for the
    /// transfer's queue (``URLSessionTransport``'s hands its chunks on at once: to the body, or to
    /// a temporary file, ``SpillingWriter``); a caller is held at most ``patience`` all the same,
    /// and never when it runs on this queue itself.
    final class PacedDelegateQueue: OperationQueue, @unchecked Sendable {
        /// The operations that may wait before a caller is held (256: 4 MiB of libcurl's 16 KiB chunks).
        static let limit = 256
        /// The longest a caller is held.
        static let patience: TimeInterval = 1

        private let waiting: Waiting
        /// Where the operations run, in the order they were added. A serial dispatch queue, not the
        /// OperationQueue's own machinery: that takes one mutex to add each operation and another
        /// turn of it to start the next, so libcurl's callback — one per 16 KiB, on the queue every
        /// session's work shares — waited on that mutex while a delegate thread holding it was
        /// descheduled (the first cause of waiting found there, by its off-CPU stacks). Adding to a
        /// dispatch queue takes no lock.
        private let lane = DispatchQueue(label: "Recall.PacedDelegateQueue")
        /// Marks `lane`, to tell an operation added from the queue itself.
        private static let laneKey = DispatchSpecificKey<ObjectIdentifier>()

        /// A serial queue that holds callers while `limit` operations wait, at most `patience`.
        init(limit: Int = PacedDelegateQueue.limit, patience: TimeInterval = PacedDelegateQueue.patience) {
            waiting = Waiting(limit: max(1, limit), patience: patience)
            super.init()
            maxConcurrentOperationCount = 1
            lane.setSpecific(key: Self.laneKey, value: ObjectIdentifier(self))
        }

        /// Whether a caller of ``addOperation(_:)`` is being held now (for tests).
        var isHoldingCaller: Bool { waiting.isHolding }

        /// The calls the session's transfer runs as it hands a chunk over (``TransferMailbox``).
        let mailbox = TransferMailbox()
        /// Marks the queue the session's transfers run on, to tell a chunk handed over from there.
        private static let transferKey = DispatchSpecificKey<ObjectIdentifier>()

        /// Takes `queue` for the one the session's transfers run on (``SessionTransferQueues``): a
        /// chunk added from there runs the calls waiting in ``mailbox`` first.
        func adopt(transferQueue queue: DispatchQueue) {
            queue.setSpecific(key: Self.transferKey, value: ObjectIdentifier(self))
        }

        /// Adds `block`, first waiting while ``limit`` operations wait (at most ``patience``), never
        /// when called from an operation of this queue (it would wait for itself). Called from the
        /// session's transfer, it first runs the calls waiting in ``mailbox``.
        override func addOperation(_ block: @Sendable @escaping () -> Void) {
            if mailbox.count > 0, DispatchQueue.getSpecific(key: Self.transferKey) == ObjectIdentifier(self) { mailbox.runPending() }
            waiting.enter(wait: DispatchQueue.getSpecific(key: Self.laneKey) != ObjectIdentifier(self))
            lane.async { [waiting] in
                block()
                waiting.leave()
            }
        }

        /// Adds `operation` in the same order as the blocks (corelibs adds blocks only): it starts
        /// when the ones before it have run. (Only the two `addOperation`s go through the serial
        /// queue; this queue is `URLSessionTransport`'s own, and nothing calls the others on it.)
        override func addOperation(_ operation: Operation) {
            let unchecked = UncheckedOperation(operation: operation)
            addOperation { unchecked.operation.start() }
        }

        /// An operation handed to the lane (an `Operation` is not `Sendable`; it runs there alone).
        private struct UncheckedOperation: @unchecked Sendable {
            let operation: Operation
        }

        /// The operations added and not yet run, and the callers waiting for their number to drop.
        /// The count is atomic: adding and running take the condition's lock only while a caller
        /// is held.
        private final class Waiting: @unchecked Sendable {
            private let condition = NSCondition()
            private let limit: Int
            private let patience: TimeInterval
            private let count = Atomic<Int>(0)
            private let held = Atomic<Int>(0)

            init(limit: Int, patience: TimeInterval) {
                self.limit = limit
                self.patience = patience
            }

            var isHolding: Bool { held.load(ordering: .sequentiallyConsistent) > 0 }

            func enter(wait: Bool) {
                if wait, count.load(ordering: .sequentiallyConsistent) >= limit {
                    // (`held` is raised before `count` is looked at again, and `leave` lowers `count`
                    // before it looks at `held`: one of the two sees the other, so no wake-up is lost.)
                    condition.lock()
                    held.add(1, ordering: .sequentiallyConsistent)
                    let deadline = Date(timeIntervalSinceNow: patience)
                    while count.load(ordering: .sequentiallyConsistent) >= limit, condition.wait(until: deadline) {}
                    held.subtract(1, ordering: .sequentiallyConsistent)
                    condition.unlock()
                }
                count.add(1, ordering: .sequentiallyConsistent)
            }

            func leave() {
                count.subtract(1, ordering: .sequentiallyConsistent)
                guard held.load(ordering: .sequentiallyConsistent) > 0 else { return }
                condition.lock()
                condition.broadcast()
                condition.unlock()
            }
        }
    }
#endif

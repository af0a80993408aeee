#if !canImport(Darwin)
    import Foundation

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

        /// A serial queue that holds callers while `limit` operations wait, at most `patience`.
        init(limit: Int = PacedDelegateQueue.limit, patience: TimeInterval = PacedDelegateQueue.patience) {
            waiting = Waiting(limit: max(1, limit), patience: patience)
            super.init()
            maxConcurrentOperationCount = 1
        }

        /// Whether a caller of ``addOperation(_:)`` is being held now (for tests).
        var isHoldingCaller: Bool { waiting.isHolding }

        /// Adds `block`, first waiting while ``limit`` operations wait (at most ``patience``).
        override func addOperation(_ block: @Sendable @escaping () -> Void) {
            waiting.enter(wait: OperationQueue.current !== self)
            super.addOperation { [waiting] in
                block()
                waiting.leave()
            }
        }

        /// The operations added and not yet run, and the callers waiting for their number to drop.
        private final class Waiting: @unchecked Sendable {
            private let condition = NSCondition()
            private let limit: Int
            private let patience: TimeInterval
            private var count = 0
            private var held = 0

            init(limit: Int, patience: TimeInterval) {
                self.limit = limit
                self.patience = patience
            }

            var isHolding: Bool {
                condition.lock()
                defer { condition.unlock() }
                return held > 0
            }

            func enter(wait: Bool) {
                condition.lock()
                defer { condition.unlock() }
                if wait, count >= limit {
                    held += 1
                    let deadline = Date(timeIntervalSinceNow: patience)
                    while count >= limit, condition.wait(until: deadline) {}
                    held -= 1
                }
                count += 1
            }

            func leave() {
                condition.lock()
                count -= 1
                condition.broadcast()
                condition.unlock()
            }
        }
    }
#endif

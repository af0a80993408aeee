import Foundation

/// The chunks of a body handed to another thread to deliver and not yet delivered, by their
/// bytes: the reader of the body goes on reading while earlier chunks are delivered, so reading
/// and delivering overlap, and waits (``reserve(_:)``) while a chunk would take more than
/// ``limit`` bytes on their way (a larger chunk goes alone), so memory stays bounded by a slow
/// receiver. `RecallURLProtocol` hands chunks to the session's thread this way. One reader at a
/// time; a reader whose task is cancelled stops waiting, and the window closes.
final class DeliveryWindow: Sendable {
    private struct State {
        var inFlight = 0
        var closed = false
        /// The reader, waiting until no more than `waitingFor` bytes are on their way.
        var waiter: CheckedContinuation<Void, Never>?
        var waitingFor = 0

        /// The waiting reader, when it may go on.
        mutating func takeWaiter() -> CheckedContinuation<Void, Never>? {
            guard closed || inFlight <= waitingFor else { return nil }
            defer { waiter = nil }
            return waiter
        }
    }

    /// The most bytes on their way at once (but for a single larger chunk).
    let limit: Int
    private let state = Locked(State())

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Waits until `count` more bytes keep those on their way within the limit (or none are on
    /// their way), then counts them; `false` when the window was closed (the receiver wants no
    /// more: stop reading).
    func reserve(_ count: Int) async -> Bool {
        await wait(until: max(0, limit - count))
        return state.withLock { state in
            guard !state.closed else { return false }
            state.inFlight += count
            return true
        }
    }

    /// Counts `count` bytes delivered (or dropped), letting a waiting reader go on.
    func release(_ count: Int) {
        state.withLock { state in
            state.inFlight -= count
            return state.takeWaiter()
        }?.resume()
    }

    /// The receiver wants no more: a waiting reader goes on, and every later ``reserve(_:)``
    /// returns `false`.
    func close() {
        state.withLock { state in
            state.closed = true
            return state.takeWaiter()
        }?.resume()
    }

    /// Whether the window was closed.
    var isClosed: Bool { state.withLock { $0.closed } }

    /// Whether the reader is waiting (for tests).
    var isWaiting: Bool { state.withLock { $0.waiter != nil } }

    /// Waits until every chunk on its way was delivered (or the window was closed).
    func drain() async {
        await wait(until: 0)
    }

    /// Waits until at most `bytes` are on their way, or the window is closed (also by the
    /// cancellation of the waiting task).
    private func wait(until bytes: Int) async {
        guard state.withLock({ !$0.closed && $0.inFlight > bytes }) else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                state.withLock { state in
                    state.waiter = continuation
                    state.waitingFor = bytes
                    return state.takeWaiter()
                }?.resume()
            }
        } onCancel: {
            close()
        }
    }
}

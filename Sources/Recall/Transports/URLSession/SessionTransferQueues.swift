#if !canImport(Darwin)
    import Dispatch
    import Foundation
    import FoundationNetworking

    /// The queues on which swift-corelibs-foundation runs the transfers of the sessions that
    /// ``URLSessionTransport`` made, while one of them streams a body: where a `URLProtocol`'s
    /// client calls get their turn soonest (``SessionWorkQueue/joined(with:)``).
    ///
    /// Why they are needed: every corelibs session's work queue targets one serial queue of the
    /// process, and a session's libcurl transfer runs under it, in work items that read as long as
    /// the socket has data, so a fast download holds that queue for hundreds of milliseconds at a
    /// time. A client call queued on the work queue of another session — ``RecallURLProtocol``'s
    /// session — waits behind all of it: measured on a 512 MiB loopback miss, the head or the
    /// first chunk 0.1–1.1 s late. Queued on the transfer's own queue as well, it runs between two
    /// of the transfer's work items. Every one of these queues is a target of that one serial
    /// queue, so whichever runs the call runs it alone, as its own session's queue would.
    ///
    /// The queue is read with `Mirror` (corelibs keeps it in the session's `multiHandle`); where it
    /// cannot be read, ``transferQueue(of:)`` is nil and client calls wait on their own session's
    /// queue, as before.
    final class SessionTransferQueues: Sendable {
        /// The process's registry, which ``URLSessionTransport`` keeps current.
        static let shared = SessionTransferQueues()

        private struct Entry {
            let queue: DispatchQueue
            let mailbox: TransferMailbox
            var streams: Int
        }

        private let entries = Locked<[ObjectIdentifier: Entry]>([:])

        /// The queue `session`'s transfers run on, or nil where it cannot be read.
        static func transferQueue(of session: URLSession) -> DispatchQueue? {
            guard let handle = Mirror(reflecting: session).children.first(where: { $0.label == "multiHandle" })?.value else { return nil }
            return Mirror(reflecting: handle).children.first(where: { $0.label == "queue" })?.value as? DispatchQueue
        }

        /// A body began to stream from a transfer on `queue`, whose work runs the calls left in
        /// `mailbox` (``TransferMailbox``).
        func began(_ queue: DispatchQueue, mailbox: TransferMailbox) {
            entries.withLock { entries in
                entries[ObjectIdentifier(queue), default: Entry(queue: queue, mailbox: mailbox, streams: 0)].streams += 1
            }
        }

        /// A body that streamed from a transfer on `queue` ended.
        func ended(_ queue: DispatchQueue) {
            entries.withLock { entries in
                let key = ObjectIdentifier(queue)
                guard let entry = entries[key] else { return }
                if entry.streams > 1 { entries[key]?.streams -= 1 } else { entries[key] = nil }
            }
        }

        /// The queues of the transfers that stream a body now, and their mailboxes.
        var current: (queues: [DispatchQueue], mailboxes: [TransferMailbox]) {
            entries.withLock { entries in (entries.values.map(\.queue), entries.values.map(\.mailbox)) }
        }
    }
#endif

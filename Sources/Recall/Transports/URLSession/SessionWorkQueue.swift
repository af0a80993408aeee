#if !canImport(Darwin)
    import Foundation
    #if canImport(Glibc)
        import Glibc
    #elseif canImport(Musl)
        import Musl
    #endif

    /// The dispatch queue a `URLProtocol` is started on, so that its client can be called there.
    ///
    /// swift-corelibs-foundation calls `startLoading()` and `stopLoading()` on the session's work
    /// queue and reads the session's task registry, unsynchronized, in every client call: a client
    /// called from another thread races the registry's changes (a crash under load) and a
    /// cancellation's own report to the client. Delivering on that queue puts the answer in line
    /// with both. The queue is taken with libdispatch's `dispatch_get_current_queue` (it has no
    /// Swift spelling) and retained while the load lasts. Where libdispatch does not export the
    /// functions, ``current()`` is `nil` and the client is called where the answer is.
    final class SessionWorkQueue: @unchecked Sendable {
        private typealias CurrentQueue = @convention(c) () -> OpaquePointer?
        private typealias Retain = @convention(c) (OpaquePointer) -> Void
        private typealias AsyncF = @convention(c) (OpaquePointer, UnsafeMutableRawPointer?, @convention(c) (UnsafeMutableRawPointer?) -> Void) -> Void

        private struct Functions: @unchecked Sendable {
            let current: CurrentQueue
            let retain: Retain
            let release: Retain
            let async: AsyncF
        }

        private static let functions: Functions? = {
            let handle = dlopen(nil, RTLD_NOW)
            func find<T>(_ name: String, as type: T.Type) -> T? {
                dlsym(handle, name).map { unsafeBitCast($0, to: type) }
            }
            guard let current = find("dispatch_get_current_queue", as: CurrentQueue.self),
                let retain = find("dispatch_retain", as: Retain.self),
                let release = find("dispatch_release", as: Retain.self),
                let async = find("dispatch_async_f", as: AsyncF.self)
            else { return nil }
            return Functions(current: current, retain: retain, release: release, async: async)
        }()

        private let queue: OpaquePointer
        private let functions: Functions
        /// Other queues under the same serial queue of corelibs', where a call may get its turn
        /// sooner (``joined(with:mailboxes:)``).
        private let companions: [DispatchQueue]
        /// The mailboxes of streaming transfers, which run a call between two of their chunks.
        private let mailboxes: [TransferMailbox]

        private init(queue: OpaquePointer, functions: Functions, companions: [DispatchQueue] = [], mailboxes: [TransferMailbox] = []) {
            self.queue = queue
            self.functions = functions
            self.companions = companions
            self.mailboxes = mailboxes
            functions.retain(queue)
        }

        deinit {
            functions.release(queue)
        }

        /// The queue the caller runs on, retained; `nil` where it cannot be had.
        static func current() -> SessionWorkQueue? {
            guard let functions, let queue = functions.current() else { return nil }
            return SessionWorkQueue(queue: queue, functions: functions)
        }

        /// This queue with `companions` — queues of corelibs' sessions that run, like this one, under
        /// the one serial queue all its sessions share (``SessionTransferQueues``) — and the
        /// `mailboxes` of streaming transfers, which run calls from within their own work there
        /// (``TransferMailbox``). A call then goes to all of them and runs once, wherever it comes
        /// first — alone, as on this queue. Calls keep their order as long as each goes to no place
        /// its predecessors did not (a load joins once, when its answer begins).
        func joined(with companions: [DispatchQueue], mailboxes: [TransferMailbox] = []) -> SessionWorkQueue {
            guard !companions.isEmpty || !mailboxes.isEmpty else { return self }
            return SessionWorkQueue(
                queue: queue, functions: functions, companions: self.companions + companions, mailboxes: self.mailboxes + mailboxes)
        }

        /// Runs `body` on the queue, after what was submitted to it before (or on a companion, after
        /// what was submitted there, whichever comes first). `soonest`: from a mailbox too — the
        /// soonest turn, for the calls a first byte waits for; calls that go there and calls that
        /// do not keep their order, as long as no call goes to a mailbox after one that did not.
        func async(soonest: Bool = false, _ body: @escaping @Sendable () -> Void) {
            let mailboxes = soonest ? self.mailboxes : []
            guard !companions.isEmpty || !mailboxes.isEmpty else { return enqueue(body) }
            let call = Call(body)
            enqueue(call.run)
            for companion in companions { companion.async(execute: call.run) }
            for mailbox in mailboxes { mailbox.post(call) }
        }

        /// A call submitted to several places, run by the first to reach it: it takes the body
        /// out, so the copies still waiting elsewhere hold nothing (a chunk of a body, say).
        final class Call: Sendable {
            private let body: Locked<(@Sendable () -> Void)?>

            init(_ body: @escaping @Sendable () -> Void) {
                self.body = Locked(body)
            }

            /// Whether it ran (or runs) already.
            var isTaken: Bool { body.withLock { $0 == nil } }

            /// Runs the body unless another place took it first.
            @Sendable func run() {
                let taken = body.withLock { body -> (@Sendable () -> Void)? in
                    defer { body = nil }
                    return body
                }
                taken?()
            }
        }

        private func enqueue(_ body: @escaping @Sendable () -> Void) {
            let box = Unmanaged.passRetained(Box(body)).toOpaque()
            functions.async(queue, box) { context in
                guard let context else { return }
                Unmanaged<Box>.fromOpaque(context).takeRetainedValue().body()
            }
        }

        /// Runs `body` on a thread of Dispatch's global pool while a block holds this queue, so that
        /// nothing the queue runs (the session's task registry changes) runs meanwhile; returns when
        /// `body` has. The hold waits for `body` to begin (nothing can keep it from beginning), then
        /// lets go after `patience` even if `body` has not returned: `body` may wait for something
        /// whose owner waits for this queue (corelibs' cancellation of the same task).
        func whileHeld(patience: Double = 0.5, _ body: @escaping @Sendable () -> Void) async {
            await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
                self.async {
                    let began = DispatchSemaphore(value: 0)
                    let done = DispatchSemaphore(value: 0)
                    DispatchQueue.global().async {
                        began.signal()
                        body()
                        done.signal()
                        finished.resume()
                    }
                    began.wait()
                    _ = done.wait(timeout: .now() + patience)
                }
            }
        }

        private final class Box {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
    }
#endif

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
        /// sooner (``joined(with:)``).
        private let companions: [DispatchQueue]

        private init(queue: OpaquePointer, functions: Functions, companions: [DispatchQueue] = []) {
            self.queue = queue
            self.functions = functions
            self.companions = companions
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

        /// This queue with `companions`: queues of corelibs' sessions that run, like this one, under
        /// the one serial queue all its sessions share (``SessionTransferQueues``). A call then goes
        /// to all of them and runs once, on whichever reaches it first — alone, as on this queue.
        /// Calls keep their order as long as each goes to no queue its predecessors did not (a
        /// load joins once, when its answer begins).
        func joined(with companions: [DispatchQueue]) -> SessionWorkQueue {
            guard !companions.isEmpty else { return self }
            return SessionWorkQueue(queue: queue, functions: functions, companions: self.companions + companions)
        }

        /// Runs `body` on the queue, after what was submitted to it before (or on a companion,
        /// after what was submitted there, whichever comes first).
        func async(_ body: @escaping @Sendable () -> Void) {
            guard !companions.isEmpty else { return enqueue(body) }
            // The first queue to reach the call takes it out: the copies still waiting on the others
            // hold nothing (a chunk of a body, say) until they run.
            let pending = Locked<(@Sendable () -> Void)?>(body)
            let first: @Sendable () -> Void = {
                let claimed = pending.withLock { pending -> (@Sendable () -> Void)? in
                    defer { pending = nil }
                    return pending
                }
                claimed?()
            }
            enqueue(first)
            for companion in companions { companion.async(execute: first) }
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

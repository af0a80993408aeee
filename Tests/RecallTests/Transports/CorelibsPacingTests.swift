#if !canImport(Darwin)
    import Dispatch
    import Foundation
    import FoundationNetworking
    import RecallTesting
    import Testing

    @testable import Recall

    /// What the README's path (a URLSession over `sendThroughRecall`, over `URLSessionTransport`)
    /// rests on with swift-corelibs-foundation (issue #54): a transfer held near its delegate, client
    /// calls that do not wait behind another session's transfer, and the fact about corelibs that
    /// makes those calls safe on that transfer's queue.
    @Suite("corelibs pacing: the transfer waits for its delegate, client calls join the transfer's queue", .timeLimit(.minutes(1)))
    struct CorelibsPacingTests {
        @Test("the delegate queue holds a caller while its limit of operations waits, and lets it go as they run, in order")
        func pacedDelegateQueue() async throws {
            let queue = PacedDelegateQueue(limit: 4, patience: 600)
            let gate = DispatchSemaphore(value: 0)
            let ran = Locked<[Int]>([])
            let added = Locked(0)
            queue.addOperation { gate.wait() }  // holds the queue: what follows waits
            let adder = Thread {
                for index in 0..<10 {
                    queue.addOperation { ran.withLock { $0.append(index) } }
                    added.withLock { $0 += 1 }
                }
            }
            adder.start()
            try await waitUntil("a caller is held") { queue.isHoldingCaller }
            // The blocked operation and three more fill the limit of four: the fourth add is held.
            #expect(added.withLock { $0 } == 3, "the caller went past the limit")
            gate.signal()
            try await waitUntil("every operation ran") { ran.withLock { $0.count } == 10 }
            #expect(ran.withLock { $0 } == Array(0..<10))
            #expect(!queue.isHoldingCaller)
        }

        @Test("an operation added from the queue itself is never held (it would wait for itself)")
        func ownOperationsNotHeld() async throws {
            let queue = PacedDelegateQueue(limit: 1, patience: 600)
            let done = Locked(false)
            queue.addOperation {
                // The limit is reached by this very operation; adding from here must not wait.
                queue.addOperation { done.withLock { $0 = true } }
            }
            try await waitUntil("the inner operation ran") { done.withLock { $0 } }
        }

        @Test("operations added as Operation objects run in order with the blocks, one at a time")
        func operationsKeepOrderWithBlocks() async throws {
            let queue = PacedDelegateQueue(limit: 8, patience: 600)
            let ran = Locked<[Int]>([])
            let running = Locked((now: 0, most: 0))
            for index in 0..<200 {
                let work: @Sendable () -> Void = {
                    running.withLock {
                        $0.now += 1; $0.most = max($0.most, $0.now)
                    }
                    ran.withLock { $0.append(index) }
                    running.withLock { $0.now -= 1 }
                }
                if index.isMultiple(of: 3) { queue.addOperation(BlockOperation(block: work)) } else { queue.addOperation(work) }
            }
            try await waitUntil("every operation ran") { ran.withLock { $0.count } == 200 }
            #expect(ran.withLock { $0 } == Array(0..<200))
            #expect(running.withLock { $0.most } == 1, "one at a time")
        }

        @Test("a work queue joined with another runs each call once, in the order given")
        func joinedQueueKeepsOrder() async throws {
            let shared = DispatchQueue(label: "shared")
            let own = DispatchQueue(label: "own", target: shared)
            let other = DispatchQueue(label: "other", target: shared)
            let work = try #require(own.sync { SessionWorkQueue.current() })
            let joined = work.joined(with: [other])
            let ran = Locked<[Int]>([])
            for index in 0..<500 {
                joined.async { ran.withLock { $0.append(index) } }
            }
            try await waitUntil("every call ran") { ran.withLock { $0.count } >= 500 }
            own.sync {}
            other.sync {}
            #expect(ran.withLock { $0 } == Array(0..<500))
        }

        @Test("a call that ran on one queue of a joined work queue is let go at once: the copy still waiting on another holds nothing")
        func joinedCallLetGoOnceRun() async throws {
            final class Payload: Sendable {}
            let shared = DispatchQueue(label: "shared")
            let own = DispatchQueue(label: "own", target: shared)
            let other = DispatchQueue(label: "other", target: shared)
            other.suspend()  // (its copy of the call waits there until the end of the test)
            defer { other.resume() }
            let work = try #require(own.sync { SessionWorkQueue.current() })
            let joined = work.joined(with: [other])
            let ran = Locked(false)
            weak var watched: Payload?
            do {
                let payload = Payload()
                watched = payload
                joined.async {
                    _ = payload; ran.withLock { $0 = true }
                }
            }
            try await waitUntil("the call ran on its own queue") { ran.withLock { $0 } }
            own.sync {}
            #expect(watched == nil, "the copy waiting on the other queue keeps what the call captured")
        }

        @Test("corelibs runs the work of every session under one serial queue: a transfer's queue and another session's work queue never run at once")
        func sessionsShareOneSerialQueue() async throws {
            let first = URLSession(configuration: .ephemeral)
            let second = URLSession(configuration: .ephemeral)
            defer {
                first.invalidateAndCancel()
                second.invalidateAndCancel()
            }
            let transfer = try #require(SessionTransferQueues.transferQueue(of: first), "corelibs' transfer queue could not be read")
            let workQueue = try #require(
                Mirror(reflecting: second).children.first { $0.label == "workQueue" }?.value as? DispatchQueue)
            // While a block holds the transfer's queue, a block on the other session's work queue
            // must not run: the first waits for it (briefly) and then looks whether it did.
            let inside = Locked(false)
            let overlapped = Locked<Bool?>(nil)
            let started = DispatchSemaphore(value: 0)
            transfer.async {
                inside.withLock { $0 = true }
                workQueue.async { overlapped.withLock { $0 = inside.withLock { $0 } } }
                _ = started.wait(timeout: .now() + 0.3)  // (a queue of its own would run the other block meanwhile)
                inside.withLock { $0 = false }
            }
            try await waitUntil("the other block ran") { overlapped.withLock { $0 } != nil }
            #expect(overlapped.withLock { $0 } == false, "another session's work ran while the transfer's queue was held")
        }

        @Test("a soonest call runs from within a streaming transfer, between two of its chunks, while its queue is held; the calls after it keep their order")
        func soonestCallRunsInTheTransfer() async throws {
            let server = try await OriginServer.shared.value
            let transport = URLSessionTransport()
            let transferQueue = try #require(SessionTransferQueues.transferQueue(of: transport.session))
            let mailbox = try #require((transport.session.delegateQueue as? PacedDelegateQueue)?.mailbox)
            let marker = DispatchSpecificKey<Int>()
            transferQueue.setSpecific(key: marker, value: 1)
            let own = DispatchQueue(label: "own")
            let work = try #require(own.sync { SessionWorkQueue.current() })
            own.suspend()  // (only the transfer can run a call now)
            let resumed = Locked(false)
            defer { if !resumed.withLock({ $0 }) { own.resume() } }  // (a suspended queue must not be released)
            let joined = work.joined(with: [], mailboxes: [mailbox])
            let gate = UUID().uuidString
            let path = OriginServer.uniquePath("soonest")
            let response = try await transport.send(URLRequest(url: server.url(path, ["stream": "\(1 << 20)", "gate": gate])))
            let ran = Locked<[String]>([])
            joined.async(soonest: true) {
                ran.withLock { $0.append(DispatchQueue.getSpecific(key: marker) == 1 ? "in the transfer" : "elsewhere") }
            }
            joined.async { ran.withLock { $0.append("next") } }
            try await server.open(gate: gate)  // (the rest of the body: the transfer hands over chunks again)
            #expect(try await response.body.collect(upTo: 2 << 20).count == 1 << 20)
            try await waitUntil("the soonest call ran") { !ran.withLock { $0 }.isEmpty }
            #expect(ran.withLock { $0 } == ["in the transfer"])
            own.resume()
            resumed.withLock { $0 = true }
            try await waitUntil("the next call ran") { ran.withLock { $0.count } == 2 }
            own.sync {}
            #expect(ran.withLock { $0 } == ["in the transfer", "next"], "each call once, in order")
        }

        @Test("a mailbox no transfer drains keeps few of the calls that ran elsewhere")
        func mailboxDropsCallsTaken() {
            let mailbox = TransferMailbox()
            let ran = Locked(0)
            for _ in 0..<1_000 {
                let call = SessionWorkQueue.Call { ran.withLock { $0 += 1 } }
                mailbox.post(call)
                call.run()  // (run where it was posted too)
            }
            #expect(ran.withLock { $0 } == 1_000)
            #expect(mailbox.count <= TransferMailbox.pruneAt + 1)
            mailbox.runPending()
            #expect(ran.withLock { $0 } == 1_000 && mailbox.count == 0, "a call taken elsewhere runs once")
        }

        @Test("URLSessionTransport names its session's transfer queue while a body streams, and only then")
        func transferQueueWhileStreaming() async throws {
            let server = try await OriginServer.shared.value
            let transport = URLSessionTransport()
            let queue = try #require(SessionTransferQueues.transferQueue(of: transport.session))
            let named = { SessionTransferQueues.shared.current.queues.contains { $0 === queue } }
            #expect(!named())
            let gate = UUID().uuidString
            let path = OriginServer.uniquePath("transfer-queue")
            let response = try await transport.send(URLRequest(url: server.url(path, ["stream": "\(1 << 20)", "gate": gate])))
            #expect(named(), "the queue of a streaming transfer")
            try await server.open(gate: gate)
            let body = try await response.body.collect(upTo: 2 << 20)
            #expect(body.count == 1 << 20)
            try await waitUntil("the transfer ended") { !named() }
        }
    }
#endif

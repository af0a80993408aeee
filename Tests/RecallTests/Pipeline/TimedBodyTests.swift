import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Recall
import RecallTesting
import Testing

/// A transport that answers once with a body the test writes.
private struct StreamingTransport: Transport {
    let body: ResponseBody
    func send(_ request: URLRequest) async throws -> RecallResponse {
        RecallResponse(status: 200, body: body)
    }
}

/// The retrier's limits reach past the head (issue #38): the per-attempt timeout bounds each
/// silence of a streamed body, the deadline the whole exchange. On a manual clock: no race with
/// real time.
@Suite("Time limits of a streamed body: silence and deadline", .timeLimit(.minutes(1)))
struct TimedBodyTests {
    func pipeline(_ body: ResponseBody, clock: ManualClock, attemptTimeout: Duration, deadline: Duration?) -> Pipeline {
        var policy = RetryPolicy(maxAttempts: 1)
        policy.attemptTimeout = attemptTimeout
        policy.deadline = deadline
        return Pipeline(transport: StreamingTransport(body: body), retrierFactory: .policy(policy), clock: clock)
    }

    /// Waits until the clock has been asked for `count` sleeps in all.
    func sleeps(_ clock: ManualClock, _ count: Int) async throws {
        try await waitUntil("\(count) sleeps on the clock") { clock.sleeps.count >= count }
    }

    @Test("a body that falls silent for the attempt timeout ends with timedOut; chunks within it pass")
    func silence() async throws {
        let clock = ManualClock()
        let (body, writer) = ResponseBody.makeStream()
        let stopped = Flag()
        writer.onTermination { stopped.set() }
        let response = try await pipeline(body, clock: clock, attemptTimeout: .seconds(1), deadline: nil)
            .send(URLRequest(url: URL(string: "https://origin.test/slow")!))
        let base = clock.sleeps.count
        let reading = Task { try await response.body.collect(upTo: 100) }
        try await sleeps(clock, base + 1)
        clock.advance(by: .milliseconds(900))
        writer.yield(Data("a".utf8))  // within the limit: the wait starts again
        try await sleeps(clock, base + 2)
        clock.advance(by: .milliseconds(900))
        writer.yield(Data("b".utf8))
        try await sleeps(clock, base + 3)
        clock.advance(by: .seconds(1))
        let error = await #expect(throws: TransportError.self) { try await reading.value }
        #expect(error?.code == .timedOut && error?.message.contains("no body bytes arrived for 1") == true)
        try await waitUntil("the transport's body is stopped") { stopped.isSet }
    }

    @Test("a body that trickles within the attempt timeout ends with timedOut when the deadline passes")
    func deadline() async throws {
        let clock = ManualClock()
        let (body, writer) = ResponseBody.makeStream()
        let response = try await pipeline(body, clock: clock, attemptTimeout: .seconds(1), deadline: .seconds(2))
            .send(URLRequest(url: URL(string: "https://origin.test/trickle")!))
        let base = clock.sleeps.count
        let reading = Task { try await response.body.collect(upTo: 100) }
        for round in 1...2 {
            try await sleeps(clock, base + round)
            clock.advance(by: .milliseconds(800))
            writer.yield(Data("x".utf8))
        }
        try await sleeps(clock, base + 3)
        clock.advance(by: .milliseconds(800))  // 2.4 s in all
        let error = await #expect(throws: TransportError.self) { try await reading.value }
        #expect(error?.code == .timedOut && error?.message.contains("deadline") == true)
    }

    @Test("a body read within its limits arrives whole")
    func withinLimits() async throws {
        let clock = ManualClock()
        let (body, writer) = ResponseBody.makeStream(expectedLength: 2)
        let response = try await pipeline(body, clock: clock, attemptTimeout: .seconds(1), deadline: .seconds(5))
            .send(URLRequest(url: URL(string: "https://origin.test/fine")!))
        writer.yield(Data("o".utf8))
        writer.yield(Data("k".utf8))
        writer.finish()
        #expect(try await response.body.collect(upTo: 10) == Data("ok".utf8))
    }
}

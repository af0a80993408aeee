import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Recall
import RecallTesting
import Testing

/// A hook that passes a request on with a follow-up gets the outcome there, in place of its own
/// `onSuccess`/`onFailure`: what it found while deciding travels with the request.
@Suite("Hook follow-ups: the outcome goes to what the hook decided with", .timeLimit(.minutes(1)))
struct HookFollowUpTests {
    /// Passes each request on with a follow-up that records the outcome and what the hook found
    /// while deciding (the request's path, captured); its own `onSuccess`/`onFailure` record too,
    /// and must not be called for a request it followed up.
    struct FollowingHook: ServiceHook {
        let log: HookLog
        /// What the follow-up answers in place of a failure (`nil`: lets it through).
        var recovery: RecallResponse?

        func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
            let found = request.url?.path ?? "?"
            let recovery = recovery
            return .proceedThen(
                request,
                HookFollowUp(
                    onSuccess: { [log] response, sent, _ in
                        log.append("follow.success(\(response.status) \(found) \(sent.url?.path ?? "?"))")
                        var replaced = response
                        replaced.headers["X-Followed"] = found
                        return replaced
                    },
                    onFailure: { [log] error, _, _ in
                        log.append("follow.failure(\(found) \(type(of: error)))")
                        return recovery
                    }))
        }

        func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext) async throws -> RecallResponse {
            log.append("hook.success")
            return response
        }

        func onFailure(_ error: any Error, for request: URLRequest, context: RecallContext) async throws -> RecallResponse? {
            log.append("hook.failure")
            return nil
        }
    }

    struct Refused: Error {}

    @Test("the follow-up gets the answer in the hook's place, innermost first; outer hooks see what it returns")
    func success() async throws {
        let mock = MockTransport()
        mock.route("GET", "/a", .text("body"))
        let log = HookLog()
        let pipeline = Pipeline(
            transport: mock, hooks: [RecordingHook("outer", log: log), FollowingHook(log: log), RecordingHook("inner", log: log)])
        let response = try await pipeline.send(URLRequest(url: URL(string: "https://origin.test/a")!))
        #expect(response.headers["X-Followed"] == "/a")
        #expect(
            log.events == [
                "outer.schedule", "inner.schedule", "inner.success(200 network)", "follow.success(200 /a /a)", "outer.success(200 network)"
            ])
    }

    @Test("the follow-up gets the failure in the hook's place, and may recover; without a recovery the error goes on")
    func failure() async throws {
        let mock = MockTransport()
        mock.route("GET", "/a", .error(Refused()))
        let log = HookLog()
        let recovering = Pipeline(
            transport: mock, hooks: [RecordingHook("outer", log: log), FollowingHook(log: log, recovery: RecallResponse(status: 299))])
        let recovered = try await recovering.send(URLRequest(url: URL(string: "https://origin.test/a")!))
        #expect(recovered.status == 299)
        #expect(log.events == ["outer.schedule", "follow.failure(/a Refused)", "outer.success(299 network)"])

        let failing = Pipeline(transport: mock, hooks: [FollowingHook(log: log)])
        await #expect(throws: Refused.self) { try await failing.send(URLRequest(url: URL(string: "https://origin.test/a")!)) }
        #expect(log.events.last == "follow.failure(/a Refused)")
        #expect(!log.events.contains("hook.success") && !log.events.contains("hook.failure"))
    }

    /// Answers at once and refreshes with a follow-up, which reports the refresh's outcome.
    struct RefreshingHook: ServiceHook {
        let outcomes: AsyncStream<String>.Continuation

        func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
            let followUp = HookFollowUp(
                onSuccess: { [outcomes] response, _, context in
                    outcomes.yield("refreshed \(response.status) background \(context.isBackground)")
                    return response
                },
                onFailure: { [outcomes] _, _, _ in
                    outcomes.yield("failed")
                    return nil
                })
            return .respondThenRefresh(RecallResponse(status: 203), refresh: request, then: followUp)
        }

        func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext) async throws -> RecallResponse {
            outcomes.yield("hook.success")
            return response
        }
    }

    @Test("a background refresh's outcome goes to the follow-up it was asked with")
    func refresh() async throws {
        let mock = MockTransport()
        mock.route("GET", "/a", .text("fresh"))
        let (stream, continuation) = AsyncStream<String>.makeStream()
        let pipeline = Pipeline(transport: mock, hooks: [RefreshingHook(outcomes: continuation)])
        let answer = try await pipeline.send(URLRequest(url: URL(string: "https://origin.test/a")!))
        #expect(answer.status == 203)
        var outcomes = stream.makeAsyncIterator()
        #expect(await outcomes.next() == "refreshed 200 background true")
        #expect(mock.requests.count == 1)
    }

    /// Answers at once and refreshes with a follow-up whose `onSuccess` throws (as a cache's
    /// does when its refetch fails), logging each outcome it is told.
    struct FailingRefreshHook: ServiceHook {
        let log: HookLog

        func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
            let followUp = HookFollowUp(
                onSuccess: { [log] _, _, _ in
                    log.append("follow.success")
                    throw Refused()
                },
                onFailure: { [log] _, _, _ in
                    log.append("follow.failure")
                    return nil
                })
            return .respondThenRefresh(RecallResponse(status: 203), refresh: request, then: followUp)
        }
    }

    /// A transport that may not be used once the call returned: the pipeline refreshes within it.
    struct CallScoped: Transport {
        let base: MockTransport
        var allowsBackgroundRequests: Bool { false }
        var respondsToCancellation: Bool { true }
        func send(_ request: URLRequest) async throws -> RecallResponse { try await base.send(request) }
    }

    @Test("a refresh's follow-up hears one outcome: a failure in its onSuccess is not told to its onFailure too")
    func refreshOnce() async throws {
        let mock = MockTransport()
        mock.route("GET", "/a", .text("fresh"))
        let log = HookLog()
        let pipeline = Pipeline(transport: CallScoped(base: mock), hooks: [FailingRefreshHook(log: log)])
        let answer = try await pipeline.send(URLRequest(url: URL(string: "https://origin.test/a")!))
        #expect(answer.status == 203, "the stale answer stands in when the refresh gives none")
        #expect(log.events == ["follow.success"])
    }

    /// Wraps another hook and carries out its decisions: a follow-up it answers is called here.
    struct WrappingHook: ServiceHook {
        let inner: any ServiceHook
        let log: HookLog

        func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
            let action = try await inner.onSchedule(request, context: context)
            guard case .proceedThen(let forwarded, let followUp) = action else { return action }
            return .proceedThen(
                forwarded,
                HookFollowUp(
                    onSuccess: { [log] response, request, context in
                        log.append("wrapper.success")
                        return try await followUp.onSuccess(response, for: request, context: context)
                    },
                    onFailure: { error, request, context in try await followUp.onFailure(error, for: request, context: context) }))
        }
    }

    @Test("a cache wrapped by another hook stores through the follow-up the wrapper carries out: the second request is a hit")
    func wrappedCache() async throws {
        let mock = MockTransport()
        mock.route("GET", "/a", .text("cached", headers: ["Cache-Control": "max-age=600"]))
        let log = HookLog()
        let cache = HTTPCache(storage: MemoryStorage())
        let pipeline = Pipeline(transport: mock, hooks: [WrappingHook(inner: cache, log: log)])
        let request = URLRequest(url: URL(string: "https://origin.test/a")!)
        #expect(try await pipeline.send(request).source == .network)
        let second = try await pipeline.send(request)
        #expect(second.source == .cache && second.bodyText == "cached")
        #expect(mock.requests.count == 1)
        #expect(log.events == ["wrapper.success"])
    }
}
